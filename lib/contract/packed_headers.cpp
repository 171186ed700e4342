#include <acemq/packed_headers.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <variant>

#include <acemq/error.hpp>

#include "contract_names.hpp"
#include "field_visitor.hpp"
#include "packed_writer.hpp"

namespace acemq {

namespace {

// The packed form lives only in this process's memory (never on a wire or a disk), so a
// float is in the machine's own byte order. Integers and timestamps are varints (a signed one
// zigzagged: 0, -1, 1, -2... as 0, 1, 2, 3...), so the small numbers headers mostly hold (an
// attempt, a version, a time in seconds or milliseconds) take one to six bytes instead of four
// or eight. An entry is its name and its value (a tag, then what the tag says). A name is a varint: odd, it is the number of one of the contract's names
// (contract_names.hpp) times two plus one, a byte for the dozen x-acemq-* names a message
// carries; even, twice the length of the bytes that follow.
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

std::uint64_t take_varint(const char*& at) noexcept {
    std::uint64_t value = 0;
    for (unsigned shift = 0;; shift += 7) {
        const auto byte = static_cast<std::uint8_t>(*at++);
        value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) return value;
    }
}

std::int64_t take_signed(const char*& at) noexcept {
    const std::uint64_t zigzag = take_varint(at);
    return static_cast<std::int64_t>(zigzag >> 1) ^ -static_cast<std::int64_t>(zigzag & 1);
}

template <class T>
T take_raw(const char*& at) noexcept {
    T value;
    std::memcpy(&value, at, sizeof(T));
    at += sizeof(T);
    return value;
}

std::string_view take_text(const char*& at) noexcept {
    const std::size_t size = take_varint(at);
    const std::string_view text(at, size);
    at += size;
    return text;
}

// Where packing writes: as much as fits in `capacity` bytes at `data`, counting all of it, so
// that headers that fit a caller's scratch space are packed in one pass and copied once, and
// larger ones are counted first and then written at their size.
struct Output {
    char* data;
    std::size_t capacity;
    std::size_t size = 0;

    void put(char byte) noexcept {
        if (size < capacity) data[size] = byte;
        ++size;
    }
    void append(const void* bytes, std::size_t count) noexcept {
        // An empty text may have no bytes at all (a null pointer), which memcpy must not see.
        if (count != 0 && count <= capacity - std::min(size, capacity)) std::memcpy(data + size, bytes, count);
        size += count;
    }
};

// A string that grows a byte at a time: for the few bytes around a packed table's entries.
struct GrowingOutput {
    std::string& bytes;

    void put(char byte) { bytes.push_back(byte); }
    void append(const void* data, std::size_t count) { bytes.append(static_cast<const char*>(data), count); }
};

template <class Out>
void put_varint(Out& out, std::uint64_t value) {
    while (value >= 0x80) {
        out.put(static_cast<char>((value & 0x7f) | 0x80));
        value >>= 7;
    }
    out.put(static_cast<char>(value));
}

template <class Out>
void put_tag(Out& out, Tag tag) {
    out.put(static_cast<char>(tag));
}

template <class Out>
void put_signed(Out& out, Tag tag, std::int64_t value) {
    put_tag(out, tag);
    put_varint(out, (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63));
}

template <class Out>
void put_text(Out& out, std::string_view text) {
    put_varint(out, text.size());
    out.append(text.data(), text.size());
}

// `contract` is contract_names::index_of(name).
template <class Out>
void put_name(Out& out, std::string_view name, int contract) {
    if (contract >= 0) {
        put_varint(out, static_cast<std::size_t>(contract) * 2 + 1);
        return;
    }
    put_varint(out, name.size() * 2);
    out.append(name.data(), name.size());
}

template <class Out>
void put_name(Out& out, std::string_view name) {
    put_name(out, name, contract_names::index_of(name));
}

std::string_view take_name(const char*& at) noexcept {
    const std::size_t code = take_varint(at);
    if ((code & 1) != 0) return contract_names::all[code / 2];
    const std::string_view name(at, code / 2);
    at += name.size();
    return name;
}

template <class Out>
void put_value(Out& out, const FieldValue& value, std::string_view message_id);

template <class Out>
void put_entries(Out& out, const FieldTable& table, std::string_view message_id) {
    for (const auto& [name, value] : table) {
        put_name(out, name);
        put_value(out, value, message_id);
    }
}

template <class Out>
void put_value(Out& out, const FieldValue& value, std::string_view message_id) {
    const FieldValue::Variant& held = value.get();
    if (const auto* text = std::get_if<std::string>(&held)) {
        if (!message_id.empty() && *text == message_id) {
            put_tag(out, Tag::text_message_id);
        } else {
            put_tag(out, Tag::text);
            put_text(out, *text);
        }
    } else if (const auto* number = std::get_if<std::int32_t>(&held)) {
        put_signed(out, Tag::int32, *number);
    } else if (const auto* wide = std::get_if<std::int64_t>(&held)) {
        put_signed(out, Tag::int64, *wide);
    } else if (const auto* truth = std::get_if<bool>(&held)) {
        put_tag(out, *truth ? Tag::true_value : Tag::false_value);
    } else if (const auto* unsigned_wide = std::get_if<std::uint64_t>(&held)) {
        put_tag(out, Tag::uint64);
        put_varint(out, *unsigned_wide);
    } else if (const auto* real = std::get_if<double>(&held)) {
        put_tag(out, Tag::float64);
        out.append(real, sizeof(double));
    } else if (const auto* stamp = std::get_if<FieldTimestamp>(&held)) {
        put_signed(out, Tag::timestamp, stamp->time_since_epoch().count());
    } else if (const auto* bytes = std::get_if<Bytes>(&held)) {
        put_tag(out, Tag::bytes);
        put_text(out, std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
    } else if (const auto* elements = std::get_if<FieldArray>(&held)) {
        put_tag(out, Tag::array);
        put_varint(out, elements->size());
        for (const FieldValue& element : *elements) put_value(out, element, message_id);
    } else if (const auto* table = std::get_if<FieldTable>(&held)) {
        put_tag(out, Tag::table);
        put_varint(out, table->size());
        put_entries(out, *table, message_id);
    } else {
        put_tag(out, Tag::void_value);
    }
}

template <class Out>
void put_headers(Out& out, const Headers& headers, std::string_view message_id) {
    // The count, twice over, and one when a value nests.
    const bool nested = std::ranges::any_of(headers, [](const auto& entry) { return entry.second.nests(); });
    put_varint(out, headers.size() * 2 + (nested ? 1 : 0));
    put_entries(out, headers, message_id);
}

// Only pack() writes these bytes, and it writes no other tag.
[[noreturn]] void unknown_tag() {
    throw UsageError("acemq: a message's packed headers hold an unknown value tag: a bug in acemq, please report it");
}

FieldValue take_value(const char*& at, std::string_view message_id);

FieldTable take_entries(const char*& at, std::size_t count, std::string_view message_id) {
    FieldTable table;
    table.reserve(count);
    for (std::size_t index = 0; index < count; ++index) {
        const std::string_view name = take_name(at);
        table.emplace_back(name, take_value(at, message_id));
    }
    return table;
}

FieldValue take_value(const char*& at, std::string_view message_id) {
    switch (static_cast<Tag>(*at++)) {
    case Tag::void_value: return FieldValue();
    case Tag::false_value: return FieldValue(false);
    case Tag::true_value: return FieldValue(true);
    case Tag::int32: return FieldValue(static_cast<std::int32_t>(take_signed(at)));
    case Tag::int64: return FieldValue(take_signed(at));
    case Tag::uint64: return FieldValue(take_varint(at));
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
    case Tag::timestamp: return FieldValue(FieldTimestamp(std::chrono::seconds(take_signed(at))));
    }
    unknown_tag();
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

void visit_value(const char*& at, std::string_view message_id, detail::FieldVisitor& visitor);

void visit_entries(const char*& at, std::size_t count, std::string_view message_id, detail::FieldVisitor& visitor) {
    visitor.table(count);
    for (std::size_t index = 0; index < count; ++index) {
        visitor.name(take_name(at));
        visit_value(at, message_id, visitor);
    }
}

void visit_value(const char*& at, std::string_view message_id, detail::FieldVisitor& visitor) {
    switch (static_cast<Tag>(*at++)) {
    case Tag::void_value: visitor.nil(); return;
    case Tag::false_value: visitor.boolean(false); return;
    case Tag::true_value: visitor.boolean(true); return;
    case Tag::int32: visitor.int32(static_cast<std::int32_t>(take_signed(at))); return;
    case Tag::int64: visitor.int64(take_signed(at)); return;
    case Tag::uint64: visitor.uint64(take_varint(at)); return;
    case Tag::float64: visitor.float64(take_raw<double>(at)); return;
    case Tag::text: visitor.text(take_text(at)); return;
    case Tag::text_message_id: visitor.text(message_id); return;
    case Tag::bytes: {
        const std::string_view raw = take_text(at);
        visitor.bytes(std::span(reinterpret_cast<const std::byte*>(raw.data()), raw.size()));
        return;
    }
    case Tag::array: {
        const std::size_t count = take_varint(at);
        visitor.array(count);
        for (std::size_t index = 0; index < count; ++index) visit_value(at, message_id, visitor);
        return;
    }
    case Tag::table: visit_entries(at, take_varint(at), message_id, visitor); return;
    case Tag::timestamp: visitor.timestamp(FieldTimestamp(std::chrono::seconds(take_signed(at)))); return;
    }
    unknown_tag();
}

void skip_value(const char*& at) noexcept;

void skip_entries(const char*& at, std::size_t count) noexcept {
    for (std::size_t index = 0; index < count; ++index) {
        take_name(at);
        skip_value(at);
    }
}

void skip_value(const char*& at) noexcept {
    switch (static_cast<Tag>(*at++)) {
    case Tag::void_value:
    case Tag::false_value:
    case Tag::true_value:
    case Tag::text_message_id: return;
    case Tag::int32:
    case Tag::int64:
    case Tag::uint64:
    case Tag::timestamp: take_varint(at); return;
    case Tag::float64: at += sizeof(double); return;
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

std::size_t PackedHeaders::pack(const Headers& headers, std::string_view message_id, char* out, std::size_t capacity) {
    Output output{out, capacity};
    put_headers(output, headers, message_id);
    return output.size;
}

std::size_t PackedHeaders::pack_referencing(std::string_view packed, std::string_view message_id, char* out,
                                            std::size_t capacity) {
    Output output{out, capacity};
    if (packed.empty()) return 0;
    const PackedHeaders view(packed, {});
    output.append(packed.data(), static_cast<std::size_t>(view.entries_.data() - packed.data()));  // the count
    for (auto entry = view.begin(), last = view.end(); entry != last; ++entry) {
        const char* value = entry.value_at_;
        if (!message_id.empty() && static_cast<Tag>(*value) == Tag::text) {
            const char* read = value + 1;
            if (take_text(read) == message_id) {
                output.append(entry.at_, static_cast<std::size_t>(value - entry.at_));  // the name
                put_tag(output, Tag::text_message_id);
                continue;
            }
        }
        output.append(entry.at_, static_cast<std::size_t>(entry.next_ - entry.at_));
    }
    return output.size;
}

PackedHeaders::PackedHeaders(std::string_view packed, std::string_view message_id) noexcept : message_id_(message_id) {
    if (packed.empty()) return;
    const char* at = packed.data();
    const std::size_t head = take_varint(at);
    count_ = static_cast<std::uint32_t>(head / 2);
    nested_ = (head & 1) != 0;
    entries_ = std::string_view(at, packed.data() + packed.size() - at);
}

PackedHeaders::iterator::iterator(const char* at, const char* end, std::string_view message_id)
    : at_(at), end_(end), message_id_(message_id) {
    step();
}

void PackedHeaders::iterator::step() noexcept {
    decoded_ = false;
    if (at_ == end_) return;
    value_at_ = at_;
    name_ = take_name(value_at_);
    next_ = value_at_;
    skip_value(next_);
}

void PackedHeaders::iterator::decode() const {
    const char* read = value_at_;
    entry_.first = FieldName(name_);
    take_value_into(read, message_id_, entry_.second);
    decoded_ = true;
}

FieldValue PackedHeaders::ValueRef::decode() const {
    if (at_ == nullptr) return FieldValue();
    const char* read = at_;
    return take_value(read, message_id_);
}

std::string_view PackedHeaders::ValueRef::text() const noexcept {
    if (at_ == nullptr) return {};
    const char* read = at_ + 1;
    switch (static_cast<Tag>(*at_)) {
    case Tag::text:
    case Tag::bytes: return take_text(read);
    case Tag::text_message_id: return message_id_;
    default: return {};
    }
}

PackedHeaders::iterator& PackedHeaders::iterator::operator++() {
    at_ = next_;
    step();
    return *this;
}

PackedHeaders::iterator PackedHeaders::begin() const {
    return iterator(entries_.data(), entries_.data() + entries_.size(), message_id_);
}

PackedHeaders::iterator PackedHeaders::end() const noexcept {
    iterator past;
    past.at_ = past.end_ = entries_.data() + entries_.size();
    return past;
}

PackedHeaders::iterator PackedHeaders::find(std::string_view name) const {
    for (auto entry = begin(), last = end(); entry != last; ++entry) {
        if (entry.name() == name) return entry;
        // Names are in order: once past where `name` would be, it is not here.
        if (entry.name() > name) break;
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

void detail::visit(const PackedHeaders& headers, FieldVisitor& visitor) {
    const char* at = headers.entries_.data();
    visit_entries(at, headers.count_, headers.message_id_, visitor);
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
    for (auto ours = packed.begin(), last = packed.end(); ours != last; ++ours, ++theirs)
        if (*ours != *theirs) return false;
    return true;
}

}  // namespace

bool operator==(const PackedHeaders& packed, const Headers& table) { return same_entries(packed, table); }

bool operator==(const PackedHeaders& a, const PackedHeaders& b) { return same_entries(a, b); }

namespace {

// A packed table's bytes up to its packed headers: the id's size and the id.
void put_id(std::string& bytes, std::string_view message_id) {
    GrowingOutput out{bytes};
    put_text(out, message_id);
}

}  // namespace

PackedTable::PackedTable(const Headers& table) : PackedTable(table, {}) {}

PackedTable::PackedTable(const Headers& table, std::string_view message_id) {
    put_id(bytes_, message_id);
    const std::size_t headers_at = bytes_.size();
    bytes_.resize(headers_at + PackedHeaders::pack(table, message_id, nullptr, 0));
    PackedHeaders::pack(table, message_id, bytes_.data() + headers_at, bytes_.size() - headers_at);
}

namespace detail {

namespace {

// Writes an entry at `bytes`' `size` by `write(Output&)`, into room the string has already
// (made a little larger than the entries are expected to take, so that most entries are
// written once, by pointer, with no check a byte), or counted first and written again when it
// did not fit.
template <class Write>
void append_entry(std::string& bytes, std::size_t& size, const Write& write) {
    Output out{bytes.data() + size, bytes.size() - size};
    write(out);
    if (out.size > out.capacity) {
        bytes.resize(std::max(bytes.size() * 2, size + out.size));
        Output again{bytes.data() + size, bytes.size() - size};
        write(again);
    }
    size += out.size;
}

}  // namespace

PackedWriter::PackedWriter(std::size_t bytes_hint, std::string_view message_id) : message_id_(message_id) {
    bytes_.reserve(1 + message_id.size() + 1 + bytes_hint);
    put_id(bytes_, message_id);
    count_at_ = bytes_.size();
    size_ = count_at_ + 1;  // the count's place: one byte holds a count below 64
    bytes_.resize(bytes_.capacity());
}

void PackedWriter::put(PackedName name, const FieldValue& value) {
    append_entry(bytes_, size_, [&](Output& out) {
        put_name(out, name.text, name.contract);
        put_value(out, value, message_id_);
    });
    nested_ = nested_ || value.nests();
    ++count_;
}

void PackedWriter::put_text(PackedName name, std::string_view text) {
    const bool is_the_id = !message_id_.empty() && text == message_id_;
    append_entry(bytes_, size_, [&](Output& out) {
        put_name(out, name.text, name.contract);
        if (is_the_id) {
            put_tag(out, Tag::text_message_id);
        } else {
            put_tag(out, Tag::text);
            acemq::put_text(out, text);
        }
    });
    ++count_;
}

void PackedWriter::put_int32(PackedName name, std::int32_t value) {
    append_entry(bytes_, size_, [&](Output& out) {
        put_name(out, name.text, name.contract);
        put_signed(out, Tag::int32, value);
    });
    ++count_;
}

void PackedWriter::put_int64(PackedName name, std::int64_t value) {
    append_entry(bytes_, size_, [&](Output& out) {
        put_name(out, name.text, name.contract);
        put_signed(out, Tag::int64, value);
    });
    ++count_;
}

PackedTable PackedWriter::finish() && {
    bytes_.resize(size_);
    const std::uint64_t head = count_ * 2 + (nested_ ? 1 : 0);
    if (head < 0x80) {
        bytes_[count_at_] = static_cast<char>(head);
    } else {
        std::string count;
        GrowingOutput out{count};
        put_varint(out, head);
        bytes_.replace(count_at_, 1, count);
    }
    return PackedTable(std::move(bytes_));
}

}  // namespace detail

}  // namespace acemq
