#include <acemq/packed_headers.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <variant>

#include <acemq/error.hpp>

namespace acemq {

namespace {

// The packed form lives only in this process's memory (never on a wire or a disk), so numbers
// are in the machine's own byte order. An entry is its name (a varint length, the bytes) and
// its value (a tag, then what the tag says).
enum class Tag : std::uint8_t {
    void_value,
    false_value,
    true_value,
    int32,
    int64,
    uint64,
    float64,
    text,
    bytes,
    array,
    table,
    timestamp,
    text_message_id,  // text equal to the message's id, which is kept once, as the message's property
};

void put_varint(std::string& out, std::size_t value) {
    while (value >= 0x80) {
        out.push_back(static_cast<char>((value & 0x7f) | 0x80));
        value >>= 7;
    }
    out.push_back(static_cast<char>(value));
}

std::size_t take_varint(const char*& at) noexcept {
    std::size_t value = 0;
    for (unsigned shift = 0;; shift += 7) {
        const auto byte = static_cast<std::uint8_t>(*at++);
        value |= static_cast<std::size_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) return value;
    }
}

void put_tag(std::string& out, Tag tag) { out.push_back(static_cast<char>(tag)); }

template <class T>
void put_raw(std::string& out, T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    char raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));
    out.append(raw, sizeof(T));
}

template <class T>
T take_raw(const char*& at) noexcept {
    T value;
    std::memcpy(&value, at, sizeof(T));
    at += sizeof(T);
    return value;
}

void put_text(std::string& out, std::string_view text) {
    put_varint(out, text.size());
    out.append(text);
}

std::string_view take_text(const char*& at) noexcept {
    const std::size_t size = take_varint(at);
    const std::string_view text(at, size);
    at += size;
    return text;
}

void put_value(std::string& out, const FieldValue& value, std::string_view message_id);

void put_entries(std::string& out, const FieldTable& table, std::string_view message_id) {
    for (const auto& [name, value] : table) {
        put_text(out, name);
        put_value(out, value, message_id);
    }
}

void put_value(std::string& out, const FieldValue& value, std::string_view message_id) {
    std::visit(
        [&](const auto& held) {
            using T = std::decay_t<decltype(held)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                put_tag(out, Tag::void_value);
            } else if constexpr (std::is_same_v<T, bool>) {
                put_tag(out, held ? Tag::true_value : Tag::false_value);
            } else if constexpr (std::is_same_v<T, std::int32_t>) {
                put_tag(out, Tag::int32);
                put_raw(out, held);
            } else if constexpr (std::is_same_v<T, std::int64_t>) {
                put_tag(out, Tag::int64);
                put_raw(out, held);
            } else if constexpr (std::is_same_v<T, std::uint64_t>) {
                put_tag(out, Tag::uint64);
                put_raw(out, held);
            } else if constexpr (std::is_same_v<T, double>) {
                put_tag(out, Tag::float64);
                put_raw(out, held);
            } else if constexpr (std::is_same_v<T, std::string>) {
                if (!message_id.empty() && held == message_id) {
                    put_tag(out, Tag::text_message_id);
                } else {
                    put_tag(out, Tag::text);
                    put_text(out, held);
                }
            } else if constexpr (std::is_same_v<T, Bytes>) {
                put_tag(out, Tag::bytes);
                put_text(out, std::string_view(reinterpret_cast<const char*>(held.data()), held.size()));
            } else if constexpr (std::is_same_v<T, FieldArray>) {
                put_tag(out, Tag::array);
                put_varint(out, held.size());
                for (const FieldValue& element : held) put_value(out, element, message_id);
            } else if constexpr (std::is_same_v<T, FieldTable>) {
                put_tag(out, Tag::table);
                put_varint(out, held.size());
                put_entries(out, held, message_id);
            } else {
                static_assert(std::is_same_v<T, FieldTimestamp>);
                put_tag(out, Tag::timestamp);
                put_raw(out, static_cast<std::int64_t>(held.time_since_epoch().count()));
            }
        },
        value.get());
}

FieldValue take_value(const char*& at, std::string_view message_id);

FieldTable take_entries(const char*& at, std::size_t count, std::string_view message_id) {
    FieldTable table;
    table.reserve(count);
    for (std::size_t index = 0; index < count; ++index) {
        const std::string_view name = take_text(at);
        table.emplace_back(name, take_value(at, message_id));
    }
    return table;
}

FieldValue take_value(const char*& at, std::string_view message_id) {
    switch (static_cast<Tag>(*at++)) {
        case Tag::void_value: return FieldValue();
        case Tag::false_value: return FieldValue(false);
        case Tag::true_value: return FieldValue(true);
        case Tag::int32: return FieldValue(take_raw<std::int32_t>(at));
        case Tag::int64: return FieldValue(take_raw<std::int64_t>(at));
        case Tag::uint64: return FieldValue(take_raw<std::uint64_t>(at));
        case Tag::float64: return FieldValue(take_raw<double>(at));
        case Tag::text: return FieldValue(take_text(at));
        case Tag::text_message_id: return FieldValue(message_id);
        case Tag::bytes: {
            const std::string_view raw = take_text(at);
            const auto* first = reinterpret_cast<const std::byte*>(raw.data());
            return FieldValue(Bytes(first, first + raw.size()));
        }
        case Tag::array: {
            const std::size_t count = take_varint(at);
            FieldArray elements;
            elements.reserve(count);
            for (std::size_t index = 0; index < count; ++index) elements.push_back(take_value(at, message_id));
            return FieldValue(std::move(elements));
        }
        case Tag::table: {
            const std::size_t count = take_varint(at);
            return FieldValue(take_entries(at, count, message_id));
        }
        case Tag::timestamp: return FieldValue(FieldTimestamp(std::chrono::seconds(take_raw<std::int64_t>(at))));
    }
    // Only pack() writes these bytes, and it writes no other tag.
    throw UsageError("acemq: a message's packed headers hold an unknown value tag: a bug in acemq, please report it");
}

// As take_value, into `into`: a text reuses the room of a text `into` holds, so a walk that
// only reads (packing for a wire) allocates for the longest text, not for each.
void take_value_into(const char*& at, std::string_view message_id, FieldValue& into) {
    const auto tag = static_cast<Tag>(*at);
    auto* held = std::get_if<std::string>(&into.get());
    if (held == nullptr || (tag != Tag::text && tag != Tag::text_message_id)) {
        into = take_value(at, message_id);
        return;
    }
    ++at;
    held->assign(tag == Tag::text ? take_text(at) : message_id);
}

void skip_value(const char*& at) noexcept;

void skip_entries(const char*& at, std::size_t count) noexcept {
    for (std::size_t index = 0; index < count; ++index) {
        take_text(at);
        skip_value(at);
    }
}

void skip_value(const char*& at) noexcept {
    switch (static_cast<Tag>(*at++)) {
        case Tag::void_value:
        case Tag::false_value:
        case Tag::true_value:
        case Tag::text_message_id: return;
        case Tag::int32: at += sizeof(std::int32_t); return;
        case Tag::int64:
        case Tag::uint64:
        case Tag::float64:
        case Tag::timestamp: at += 8; return;
        case Tag::text:
        case Tag::bytes: take_text(at); return;
        case Tag::array: {
            const std::size_t count = take_varint(at);
            for (std::size_t index = 0; index < count; ++index) skip_value(at);
            return;
        }
        case Tag::table: skip_entries(at, take_varint(at)); return;
    }
}

}  // namespace

void PackedHeaders::pack(const Headers& headers, std::string_view message_id, std::string& out) {
    // The count, twice over, and one when a value nests.
    const bool nested = std::ranges::any_of(
        headers, [](const auto& entry) { return entry.second.template holds<FieldArray>() || entry.second.template holds<FieldTable>(); });
    put_varint(out, headers.size() * 2 + (nested ? 1 : 0));
    put_entries(out, headers, message_id);
}

PackedHeaders::PackedHeaders(std::string_view packed, std::string_view message_id) noexcept
    : message_id_(message_id) {
    if (packed.empty()) return;
    const char* at = packed.data();
    const std::size_t head = take_varint(at);
    count_ = static_cast<std::uint32_t>(head / 2);
    nested_ = (head & 1) != 0;
    entries_ = std::string_view(at, packed.data() + packed.size() - at);
}

PackedHeaders::iterator::iterator(const char* at, const char* end, std::string_view message_id)
    : at_(at), next_(at), end_(end), message_id_(message_id) {
    decode();
}

void PackedHeaders::iterator::decode() {
    at_ = next_;
    if (at_ == end_) return;
    const char* read = at_;
    const std::string_view name = take_text(read);
    entry_.first = FieldName(name);
    take_value_into(read, message_id_, entry_.second);
    next_ = read;
}

PackedHeaders::iterator& PackedHeaders::iterator::operator++() {
    decode();
    return *this;
}

PackedHeaders::iterator PackedHeaders::begin() const {
    return iterator(entries_.data(), entries_.data() + entries_.size(), message_id_);
}

PackedHeaders::iterator PackedHeaders::end() const noexcept {
    iterator past;
    past.at_ = past.next_ = past.end_ = entries_.data() + entries_.size();
    return past;
}

PackedHeaders::iterator PackedHeaders::find(std::string_view name) const {
    const char* at = entries_.data();
    const char* const last = entries_.data() + entries_.size();
    while (at != last) {
        const char* read = at;
        const std::string_view here = take_text(read);
        if (here == name) return iterator(at, last, message_id_);
        // Names are in order: once past where `name` would be, it is not here.
        if (here > name) break;
        skip_value(read);
        at = read;
    }
    return end();
}

FieldValue PackedHeaders::at(std::string_view name) const {
    auto found = find(name);
    if (found == end())
        throw InvalidArgument("acemq: the message has no header named \"" + std::string(name) +
                              "\"; use find or contains when a header may be absent");
    return std::move(found->second);
}

Headers PackedHeaders::table() const {
    const char* at = entries_.data();
    return take_entries(at, count_, message_id_);
}

namespace {

template <class Other>
bool same_entries(const PackedHeaders& packed, const Other& other) {
    if (packed.size() != other.size()) return false;
    auto theirs = other.begin();
    for (auto ours = packed.begin(); ours != packed.end(); ++ours, ++theirs)
        if (*ours != *theirs) return false;
    return true;
}

}  // namespace

bool operator==(const PackedHeaders& packed, const Headers& table) { return same_entries(packed, table); }

bool operator==(const PackedHeaders& a, const PackedHeaders& b) { return same_entries(a, b); }

}  // namespace acemq
