#include <acemq/msgpack_codec.hpp>

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <limits>
#include <msgpack.hpp>
#include <optional>
#include <string>

#include <acemq/error.hpp>

namespace acemq {

namespace {

[[noreturn, gnu::cold, gnu::noinline]] void too_long(std::size_t size, std::string_view what) {
    throw EncodeError("acemq: msgpack cannot carry " + std::string(what) + " of " + std::to_string(size) +
                      " elements or bytes (the limit is 2^32 - 1)");
}

// Small enough to inline only because building the message is kept out of it.
std::uint32_t checked_length(std::size_t size, std::string_view what) {
    if (size > std::numeric_limits<std::uint32_t>::max()) too_long(size, what);
    return static_cast<std::uint32_t>(size);
}

// Packs the events straight into the body, every value in its shortest msgpack form (as
// msgpack-c packs them), except doubles: msgpack-c writes an integral double (0.0, 2.0,
// -0.0) as an integer, losing the kind and the sign of zero, so a double is always a
// float 64 here. A record is an array of its fields: the reader knows the struct.
class MsgpackWriter final : public ValueWriter {
public:
    // The body is sized ahead (one allocation covers a typical message) and trimmed when
    // done: growing a vector piece by piece costs more than the packing itself.
    MsgpackWriter() : body_(64) {}
    std::vector<std::byte> finish() && {
        body_.resize(used_);
        return std::move(body_);
    }

    void null() override { put(0xc0); }
    void boolean(bool b) override { put(b ? 0xc3 : 0xc2); }
    void int64(std::int64_t i) override {
        using std::numeric_limits;
        if (i >= 0)
            uint64(static_cast<std::uint64_t>(i));
        else if (i >= -32)
            put(static_cast<std::uint8_t>(i));  // negative fixint
        else if (i >= numeric_limits<std::int8_t>::min())
            put(0xd0, std::uint8_t(i));
        else if (i >= numeric_limits<std::int16_t>::min())
            put(0xd1, std::uint16_t(i));
        else if (i >= numeric_limits<std::int32_t>::min())
            put(0xd2, std::uint32_t(i));
        else
            put(0xd3, std::uint64_t(i));
    }
    void uint64(std::uint64_t u) override {
        using std::numeric_limits;
        if (u < 0x80)
            put(static_cast<std::uint8_t>(u));  // positive fixint
        else if (u <= numeric_limits<std::uint8_t>::max())
            put(0xcc, std::uint8_t(u));
        else if (u <= numeric_limits<std::uint16_t>::max())
            put(0xcd, std::uint16_t(u));
        else if (u <= numeric_limits<std::uint32_t>::max())
            put(0xce, std::uint32_t(u));
        else
            put(0xcf, u);
    }
    void float64(double d) override { put(0xcb, std::bit_cast<std::uint64_t>(d)); }
    void string(std::string_view text) override {
        if (const auto bad = detail::invalid_utf8_at(text))
            throw EncodeError("acemq: a string is not valid UTF-8 (bad byte at offset " + std::to_string(*bad) +
                              "); carry binary data in std::vector<std::byte>");
        const std::uint32_t size = checked_length(text.size(), "a string");
        if (size < 32)
            put(static_cast<std::uint8_t>(0xa0 | size));  // fixstr
        else
            length8(0xd9, size);
        append(std::as_bytes(std::span(text.data(), text.size())));
    }
    void bytes(std::span<const std::byte> data) override {
        length8(0xc4, checked_length(data.size(), "bytes"));
        append(data);
    }
    void begin_array(std::size_t size) override {
        enter();
        array_header(checked_length(size, "an array"));
    }
    void begin_map(std::size_t size) override {
        enter();
        const std::uint32_t n = checked_length(size, "a map");
        if (n < 16)
            put(static_cast<std::uint8_t>(0x80 | n));  // fixmap
        else
            length16(0xde, n);
    }
    void begin_record(std::size_t fields) override {
        enter();
        array_header(checked_length(fields, "a struct"));
    }
    void field(std::string_view) override {}  // positional: names stay off the wire
    void end_array() override { --depth_; }
    void end_map() override { --depth_; }
    void end_record() override { --depth_; }

private:
    void enter() {
        if (depth_ >= MsgpackCodec::max_depth)
            throw EncodeError("acemq: the value nests arrays and maps deeper than " +
                              std::to_string(MsgpackCodec::max_depth) + " levels, which no AceMQ reader accepts");
        ++depth_;
    }

    void array_header(std::uint32_t n) {
        if (n < 16)
            put(static_cast<std::uint8_t>(0x90 | n));  // fixarray
        else
            length16(0xdc, n);
    }

    // msgpack numbers the forms of a length consecutively: str8 str16 str32, bin8 bin16
    // bin32, array16 array32, map16 map32. Each writes the shortest that holds `n`.
    void length8(std::uint8_t tag8, std::uint32_t n) {
        if (n <= std::numeric_limits<std::uint8_t>::max())
            put(tag8, static_cast<std::uint8_t>(n));
        else
            length16(static_cast<std::uint8_t>(tag8 + 1), n);
    }
    void length16(std::uint8_t tag16, std::uint32_t n) {
        if (n <= std::numeric_limits<std::uint16_t>::max())
            put(tag16, static_cast<std::uint16_t>(n));
        else
            put(static_cast<std::uint8_t>(tag16 + 1), n);
    }

    // The next `n` bytes of the body, to be written.
    std::byte* room(std::size_t n) {
        if (body_.size() - used_ < n) body_.resize(std::max(2 * body_.size(), used_ + n));
        std::byte* at = body_.data() + used_;
        used_ += n;
        return at;
    }

    void put(std::uint8_t byte) { *room(1) = std::byte{byte}; }

    // A tag and a big-endian number.
    template <std::unsigned_integral U>
    void put(std::uint8_t tag, U value) {
        std::byte* at = room(1 + sizeof(U));
        at[0] = std::byte{tag};
        for (std::size_t k = 0; k < sizeof(U); ++k)
            at[1 + k] = static_cast<std::byte>(value >> (8 * (sizeof(U) - 1 - k)));
    }

    void append(std::span<const std::byte> data) {
        if (!data.empty()) std::memcpy(room(data.size()), data.data(), data.size());
    }

    std::vector<std::byte> body_;
    std::size_t used_ = 0;  // bytes of body_ written
    std::size_t depth_ = 0;
};

// Builds a Value from msgpack-c's parse events. msgpack-c's own unpack allocates every
// array and map as its header declares, before reading the elements: 64 nested headers
// that each claim the whole body reserve 64 times the body. Here room is reserved only up
// to a bounded count and grows as elements really arrive (each takes at least one byte),
// and the values are counted against the codec's limit, so what the tree takes is bounded
// by the body and by that limit, whatever the headers say.
class TreeVisitor : public msgpack::null_visitor {
public:
    TreeVisitor(std::size_t body_size, std::size_t max_values) : body_size_(body_size), max_values_(max_values) {}

    Value take() { return out_.take(); }
    // Where the byte that starts no msgpack value is, if the parse stopped at one.
    std::optional<std::size_t> malformed_at() const { return malformed_at_; }

    bool visit_nil() {
        return add([&] { out_.null(); });
    }
    bool visit_boolean(bool b) {
        return add([&] { out_.boolean(b); });
    }
    bool visit_positive_integer(std::uint64_t u) {
        return add([&] {
            if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                out_.int64(static_cast<std::int64_t>(u));
            else
                out_.uint64(u);
        });
    }
    bool visit_negative_integer(std::int64_t i) {
        return add([&] { out_.int64(i); });
    }
    bool visit_float32(float f) {
        return add([&] { out_.float64(f); });
    }
    bool visit_float64(double d) {
        return add([&] { out_.float64(d); });
    }
    bool visit_str(const char* text, std::uint32_t size) {
        const std::string_view view(text, size);
        if (const auto bad = detail::invalid_utf8_at(view))
            throw DecodeError("acemq: a msgpack str is not valid UTF-8 (bad byte at offset " + std::to_string(*bad) +
                              " of the string); binary data must travel as bin");
        return add([&] { out_.string(view); });
    }
    bool visit_bin(const char* data, std::uint32_t size) {
        return add([&] { out_.bytes(std::as_bytes(std::span(data, size))); });
    }
    bool visit_ext(const char* data, std::uint32_t) {
        // msgpack-c hands over the ext's type byte first, then its data.
        throw DecodeError("acemq: the msgpack body holds an ext value (type " +
                          std::to_string(static_cast<std::int8_t>(data[0])) + "), which AceMQ does not read");
    }
    bool start_array(std::uint32_t elements) {
        open(elements);
        return add([&] { out_.begin_array(std::min<std::size_t>(elements, max_reserved)); });
    }
    bool end_array() {
        --depth_;
        out_.end_array();
        return true;
    }
    bool start_map(std::uint32_t entries) {
        open(2 * std::size_t{entries});
        return add([&] { out_.begin_map(std::min<std::size_t>(entries, max_reserved)); });
    }
    bool end_map() {
        --depth_;
        out_.end_map();
        return true;
    }
    void parse_error(std::size_t parsed, std::size_t) { malformed_at_ = parsed; }

private:
    // Room reserved ahead for one array or map; beyond it, the vector grows as read.
    static constexpr std::size_t max_reserved = 1024;

    // An array or a map whose header says `values` values follow it.
    void open(std::size_t values) {
        if (depth_ >= MsgpackCodec::max_depth)
            throw DecodeError("acemq: the msgpack body nests arrays and maps deeper than " +
                              std::to_string(MsgpackCodec::max_depth) + " levels");
        if (values > body_size_)
            throw DecodeError(
                "acemq: the msgpack body declares an array, map, string or bin longer "
                "than the whole body (" +
                std::to_string(body_size_) + " bytes): it is truncated or not msgpack");
        // Refused on the header, before any of it is read.
        if (values > max_values_ - values_) too_many();
        ++depth_;
    }

    template <class Write>
    bool add(Write write) {
        if (++values_ > max_values_) too_many();
        write();
        return true;
    }

    [[noreturn]] void too_many() const {
        throw DecodeError("acemq: the msgpack body holds more than " + std::to_string(max_values_) +
                          " values (arrays, maps and every element count one each), the most this "
                          "MsgpackCodec reads; send less per message, or construct the codec with a "
                          "higher max_values");
    }

    ValueBuilder out_;
    std::size_t body_size_;
    std::size_t max_values_;
    std::size_t values_ = 0;
    std::size_t depth_ = 0;
    std::optional<std::size_t> malformed_at_;
};

}  // namespace

bool MsgpackCodec::can_decode(std::string_view content_type) const noexcept {
    return detail::starts_with_ci(content_type, "application/msgpack") ||
           detail::starts_with_ci(content_type, "application/x-msgpack") ||
           detail::contains_ci(content_type, "+msgpack");
}

std::vector<std::byte> MsgpackCodec::encode(ValueSource source) const {
    MsgpackWriter writer;
    source.write_to(writer);
    return std::move(writer).finish();
}

MsgpackCodec::MsgpackCodec(std::size_t max_values) : max_values_(max_values) {
    if (max_values == 0) throw InvalidArgument("acemq: a MsgpackCodec must read at least one value (max_values 0)");
}

Value MsgpackCodec::decode(std::span<const std::byte> body, std::string_view) const {
    if (body.empty()) throw DecodeError("acemq: the msgpack body is empty");
    const std::size_t size = body.size();
    TreeVisitor tree(size, max_values_);
    std::size_t used = 0;
    if (!msgpack::parse(reinterpret_cast<const char*>(body.data()), size, used, tree)) {
        if (const auto at = tree.malformed_at())
            throw DecodeError("acemq: the body is not msgpack: the byte at offset " + std::to_string(*at) +
                              " starts no msgpack value");
        throw DecodeError("acemq: the msgpack body is truncated: its " + std::to_string(size) +
                          " bytes end in the middle of a value");
    }
    if (used != size)
        throw DecodeError("acemq: " + std::to_string(size - used) +
                          " bytes left over after the msgpack value; a body holds one value");
    return tree.take();
}

}  // namespace acemq
