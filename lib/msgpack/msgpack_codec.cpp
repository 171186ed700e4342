#include <acemq/msgpack_codec.hpp>

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <msgpack.hpp>
#include <optional>
#include <string>

#include <acemq/error.hpp>
#include <acemq/value_reader.hpp>
#include "msgpack/bounds.hpp"

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
        detail::require_utf8_to_encode(text, "a string");
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

// Checks a body from msgpack-c's parse events and, given a builder, builds its Value.
// Every header is checked against the body (message_pack::Bounds) before anything is
// reserved for it, room is reserved only up to a bounded count and grows as elements really
// arrive, and the values are counted against the codec's limit, so what the tree takes is
// bounded by the body and by that limit, whatever the headers say.
class BodyVisitor : public msgpack::null_visitor {
public:
    // `out` null: only check.
    BodyVisitor(std::size_t body_size, std::size_t max_values, ValueBuilder* out)
        : out_(out), bounds_(body_size, MsgpackCodec::max_depth), body_size_(body_size), max_values_(max_values) {}

    // Where the byte that starts no msgpack value is, if the parse stopped at one.
    std::optional<std::size_t> malformed_at() const { return malformed_at_; }

    bool visit_nil() {
        return add([&](ValueBuilder& out) { out.null(); });
    }
    bool visit_boolean(bool b) {
        return add([&](ValueBuilder& out) { out.boolean(b); });
    }
    bool visit_positive_integer(std::uint64_t u) {
        return add([&](ValueBuilder& out) {
            if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                out.int64(static_cast<std::int64_t>(u));
            else
                out.uint64(u);
        });
    }
    bool visit_negative_integer(std::int64_t i) {
        return add([&](ValueBuilder& out) { out.int64(i); });
    }
    bool visit_float32(float f) {
        return add([&](ValueBuilder& out) { out.float64(f); });
    }
    bool visit_float64(double d) {
        return add([&](ValueBuilder& out) { out.float64(d); });
    }
    bool visit_str(const char* text, std::uint32_t size) {
        const std::string_view view(text, size);
        if (const auto bad = detail::invalid_utf8_at(view))
            throw DecodeError("acemq: a msgpack str is not valid UTF-8 (bad byte at offset " + std::to_string(*bad) +
                              " of the string); binary data must travel as bin");
        return add([&](ValueBuilder& out) { out.string(view); });
    }
    bool visit_bin(const char* data, std::uint32_t size) {
        return add([&](ValueBuilder& out) { out.bytes(std::as_bytes(std::span(data, size))); });
    }
    bool visit_ext(const char* data, std::uint32_t) {
        // msgpack-c hands over the ext's type byte first, then its data.
        throw DecodeError("acemq: the msgpack body holds an ext value (type " +
                          std::to_string(static_cast<std::int8_t>(data[0])) + "), which AceMQ does not read");
    }
    bool start_array(std::uint32_t elements) {
        open(elements);
        return add([&](ValueBuilder& out) { out.begin_array(std::min<std::size_t>(elements, max_reserved)); });
    }
    bool end_array() {
        bounds_.close();
        if (out_ != nullptr) out_->end_array();
        return true;
    }
    bool start_map(std::uint32_t entries) {
        open(2 * std::size_t{entries});
        return add([&](ValueBuilder& out) { out.begin_map(std::min<std::size_t>(entries, max_reserved)); });
    }
    bool end_map() {
        bounds_.close();
        if (out_ != nullptr) out_->end_map();
        return true;
    }
    // msgpack-c passes the offset of the bad byte second; the first is one before it.
    void parse_error(std::size_t, std::size_t error_offset) { malformed_at_ = error_offset; }

private:
    // Room reserved ahead for one array or map; beyond it, the vector grows as read.
    static constexpr std::size_t max_reserved = 1024;

    // An array or a map whose header says `values` values follow it.
    void open(std::size_t values) {
        switch (bounds_.open(values)) {
        case message_pack::Bounds::Refusal::none: break;
        case message_pack::Bounds::Refusal::too_deep:
            throw DecodeError("acemq: the msgpack body nests arrays and maps deeper than " +
                              std::to_string(MsgpackCodec::max_depth) + " levels");
        case message_pack::Bounds::Refusal::more_elements_than_bytes:
            throw DecodeError(
                "acemq: the msgpack body declares an array, map, string or bin longer "
                "than the whole body (" +
                std::to_string(body_size_) + " bytes): it is truncated or not msgpack");
        }
        // Refused on the header, before any of it is read.
        if (values > max_values_ - values_) too_many();
    }

    template <class Write>
    bool add(Write write) {
        if (++values_ > max_values_) too_many();
        if (out_ != nullptr) write(*out_);
        return true;
    }

    [[noreturn]] void too_many() const {
        throw DecodeError("acemq: the msgpack body holds more than " + std::to_string(max_values_) +
                          " values (arrays, maps and every element count one each), the most this "
                          "MsgpackCodec reads; send less per message, or construct the codec with a "
                          "higher max_values");
    }

    ValueBuilder* out_;
    message_pack::Bounds bounds_;
    std::size_t body_size_;
    std::size_t max_values_;
    std::size_t values_ = 0;
    std::optional<std::size_t> malformed_at_;
};

// Parses `body` whole with `visitor`, refusing what is not exactly one msgpack value.
void parse_body(std::span<const std::byte> body, BodyVisitor& visitor) {
    if (body.empty()) throw DecodeError("acemq: the msgpack body is empty");
    const std::size_t size = body.size();
    std::size_t used = 0;
    if (!msgpack::parse(reinterpret_cast<const char*>(body.data()), size, used, visitor)) {
        if (const auto at = visitor.malformed_at())
            throw DecodeError("acemq: the body is not msgpack: the byte at offset " + std::to_string(*at) +
                              " starts no msgpack value");
        throw DecodeError("acemq: the msgpack body is truncated: its " + std::to_string(size) +
                          " bytes end in the middle of a value");
    }
    if (used != size)
        throw DecodeError("acemq: " + std::to_string(size - used) +
                          " bytes left over after the msgpack value; a body holds one value");
}

// Reads a body parse_body has accepted, in place. Trusting it (every length is within the
// body, no ext, strings are UTF-8) keeps this a plain walk over the bytes.
class MsgpackReader final : public ValueReader {
public:
    MsgpackReader(std::span<const std::byte> body, std::size_t max_values)
        : at_(body.data()), max_values_(max_values) {}

    Value::Kind next() override {
        if (!peeked_) peek();
        return kind_;
    }
    void null() override { take(Value::Kind::null); }
    bool boolean() override { return take(Value::Kind::boolean) != 0; }
    std::int64_t int64() override { return static_cast<std::int64_t>(take(Value::Kind::int64)); }
    std::uint64_t uint64() override { return take(Value::Kind::uint64); }
    double float64() override { return std::bit_cast<double>(take(Value::Kind::float64)); }
    std::string_view string() override {
        const std::size_t size = take(Value::Kind::string);
        return {reinterpret_cast<const char*>(payload_), size};
    }
    std::span<const std::byte> bytes() override { return {payload_, take(Value::Kind::bytes)}; }
    std::size_t array() override { return take(Value::Kind::array); }
    std::size_t map() override { return take(Value::Kind::map); }
    Value value() override {
        next();
        const std::byte* begin = start_;
        at_ = start_;
        skip();
        peeked_ = false;
        const std::span<const std::byte> part(begin, at_);
        ValueBuilder out;
        BodyVisitor visitor(part.size(), max_values_, &out);
        parse_body(part, visitor);
        return out.take();
    }

private:
    std::uint8_t byte() { return std::to_integer<std::uint8_t>(*at_++); }

    template <std::unsigned_integral U>
    U big_endian() {
        U value = 0;
        for (std::size_t k = 0; k < sizeof(U); ++k) value = static_cast<U>(value << 8) | byte();
        return value;
    }

    // The next value's header into kind_ and number_ (its value, or its length); for a
    // string or bin, payload_ is its data and at_ is past it.
    void peek() {
        start_ = at_;
        const std::uint8_t tag = byte();
        peeked_ = true;
        if (tag <= 0x7f) return set(Value::Kind::int64, tag);
        if (tag >= 0xe0) return set(Value::Kind::int64, static_cast<std::uint64_t>(std::int64_t{std::int8_t(tag)}));
        if (tag <= 0x8f) return set(Value::Kind::map, tag & 0x0fu);
        if (tag <= 0x9f) return set(Value::Kind::array, tag & 0x0fu);
        if (tag <= 0xbf) return text(Value::Kind::string, tag & 0x1fu);
        switch (tag) {
        case 0xc0: return set(Value::Kind::null, 0);
        case 0xc2: return set(Value::Kind::boolean, 0);
        case 0xc3: return set(Value::Kind::boolean, 1);
        case 0xc4: return text(Value::Kind::bytes, big_endian<std::uint8_t>());
        case 0xc5: return text(Value::Kind::bytes, big_endian<std::uint16_t>());
        case 0xc6: return text(Value::Kind::bytes, big_endian<std::uint32_t>());
        case 0xca: {
            const double d = std::bit_cast<float>(big_endian<std::uint32_t>());
            return set(Value::Kind::float64, std::bit_cast<std::uint64_t>(d));
        }
        case 0xcb: return set(Value::Kind::float64, big_endian<std::uint64_t>());
        case 0xcc: return positive(big_endian<std::uint8_t>());
        case 0xcd: return positive(big_endian<std::uint16_t>());
        case 0xce: return positive(big_endian<std::uint32_t>());
        case 0xcf: return positive(big_endian<std::uint64_t>());
        case 0xd0: return negative(std::int8_t(big_endian<std::uint8_t>()));
        case 0xd1: return negative(std::int16_t(big_endian<std::uint16_t>()));
        case 0xd2: return negative(std::int32_t(big_endian<std::uint32_t>()));
        case 0xd3: return negative(std::int64_t(big_endian<std::uint64_t>()));
        case 0xd9: return text(Value::Kind::string, big_endian<std::uint8_t>());
        case 0xda: return text(Value::Kind::string, big_endian<std::uint16_t>());
        case 0xdb: return text(Value::Kind::string, big_endian<std::uint32_t>());
        case 0xdc: return set(Value::Kind::array, big_endian<std::uint16_t>());
        case 0xdd: return set(Value::Kind::array, big_endian<std::uint32_t>());
        case 0xde: return set(Value::Kind::map, big_endian<std::uint16_t>());
        case 0xdf: return set(Value::Kind::map, big_endian<std::uint32_t>());
        default: unchecked(tag);
        }
    }

    void set(Value::Kind kind, std::uint64_t number) {
        kind_ = kind;
        number_ = number;
    }
    // Positive integers are int64 unless only uint64 holds them, as decode() reads them.
    void positive(std::uint64_t u) {
        set(u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ? Value::Kind::int64
                                                                                      : Value::Kind::uint64,
            u);
    }
    void negative(std::int64_t i) { set(Value::Kind::int64, static_cast<std::uint64_t>(i)); }
    void text(Value::Kind kind, std::size_t size) {
        set(kind, size);
        payload_ = at_;
        at_ += size;
    }

    // The next value, which must be of `kind`; its number.
    std::uint64_t take(Value::Kind kind) {
        if (next() != kind)
            throw UsageError("acemq: a ValueReader was asked for " + std::string(kind_name(kind)) +
                             " where the next value is " + std::string(kind_name(kind_)) + "; ask next() first");
        peeked_ = false;
        return number_;
    }

    // Moves at_ past the value starting there.
    void skip() {
        for (std::uint64_t left = 1; left > 0; --left) {
            peek();
            if (kind_ == Value::Kind::array) left += number_;
            if (kind_ == Value::Kind::map) left += 2 * number_;
        }
    }

    [[noreturn, gnu::cold]] static void unchecked(std::uint8_t tag) {
        throw Error("acemq: MsgpackReader met the byte " + std::to_string(tag) +
                    ", which MsgpackCodec's check of the body refuses; this is a bug in acemq");
    }

    const std::byte* at_;
    const std::byte* start_ = nullptr;    // where the value peeked starts
    const std::byte* payload_ = nullptr;  // a string's or bin's data
    std::size_t max_values_;
    Value::Kind kind_ = Value::Kind::null;
    std::uint64_t number_ = 0;
    bool peeked_ = false;
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
    ValueBuilder out;
    BodyVisitor visitor(body.size(), max_values_, &out);
    parse_body(body, visitor);
    return out.take();
}

std::unique_ptr<ValueReader> MsgpackCodec::reader(std::span<const std::byte> body, std::string_view) const {
    BodyVisitor check(body.size(), max_values_, nullptr);
    parse_body(body, check);
    return std::make_unique<MsgpackReader>(body, max_values_);
}

}  // namespace acemq
