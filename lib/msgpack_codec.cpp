#include "acemq/msgpack_codec.hpp"

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <limits>
#include <msgpack.hpp>
#include <string>

#include "acemq/error.hpp"

namespace acemq {

namespace {

[[noreturn, gnu::cold, gnu::noinline]] void too_long(std::size_t size, std::string_view what) {
    throw EncodeError("acemq: msgpack cannot carry " + std::string(what) + " of " +
                      std::to_string(size) + " elements or bytes (the limit is 2^32 - 1)");
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
        if (i >= 0) uint64(static_cast<std::uint64_t>(i));
        else if (i >= -32) put(static_cast<std::uint8_t>(i));  // negative fixint
        else if (i >= numeric_limits<std::int8_t>::min()) put(0xd0, std::uint8_t(i));
        else if (i >= numeric_limits<std::int16_t>::min()) put(0xd1, std::uint16_t(i));
        else if (i >= numeric_limits<std::int32_t>::min()) put(0xd2, std::uint32_t(i));
        else put(0xd3, std::uint64_t(i));
    }
    void uint64(std::uint64_t u) override {
        using std::numeric_limits;
        if (u < 0x80) put(static_cast<std::uint8_t>(u));  // positive fixint
        else if (u <= numeric_limits<std::uint8_t>::max()) put(0xcc, std::uint8_t(u));
        else if (u <= numeric_limits<std::uint16_t>::max()) put(0xcd, std::uint16_t(u));
        else if (u <= numeric_limits<std::uint32_t>::max()) put(0xce, std::uint32_t(u));
        else put(0xcf, u);
    }
    void float64(double d) override { put(0xcb, std::bit_cast<std::uint64_t>(d)); }
    void string(std::string_view text) override {
        if (const auto bad = detail::invalid_utf8_at(text))
            throw EncodeError("acemq: a string is not valid UTF-8 (bad byte at offset " +
                              std::to_string(*bad) +
                              "); carry binary data in std::vector<std::byte>");
        const std::uint32_t size = checked_length(text.size(), "a string");
        if (size < 32) put(static_cast<std::uint8_t>(0xa0 | size));  // fixstr
        else length8(0xd9, size);
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
        if (n < 16) put(static_cast<std::uint8_t>(0x80 | n));  // fixmap
        else length16(0xde, n);
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
                              std::to_string(MsgpackCodec::max_depth) +
                              " levels, which no AceMQ reader accepts");
        ++depth_;
    }

    void array_header(std::uint32_t n) {
        if (n < 16) put(static_cast<std::uint8_t>(0x90 | n));  // fixarray
        else length16(0xdc, n);
    }

    // msgpack numbers the forms of a length consecutively: str8 str16 str32, bin8 bin16
    // bin32, array16 array32, map16 map32. Each writes the shortest that holds `n`.
    void length8(std::uint8_t tag8, std::uint32_t n) {
        if (n <= std::numeric_limits<std::uint8_t>::max()) put(tag8, static_cast<std::uint8_t>(n));
        else length16(static_cast<std::uint8_t>(tag8 + 1), n);
    }
    void length16(std::uint8_t tag16, std::uint32_t n) {
        if (n <= std::numeric_limits<std::uint16_t>::max())
            put(tag16, static_cast<std::uint16_t>(n));
        else put(static_cast<std::uint8_t>(tag16 + 1), n);
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

Value to_value(const msgpack::object& object) {
    switch (object.type) {
        case msgpack::type::NIL: return Value();
        case msgpack::type::BOOLEAN: return Value(object.via.boolean);
        case msgpack::type::POSITIVE_INTEGER:
            if (object.via.u64 <=
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                return Value(static_cast<std::int64_t>(object.via.u64));
            return Value(object.via.u64);
        case msgpack::type::NEGATIVE_INTEGER: return Value(object.via.i64);
        case msgpack::type::FLOAT32:
        case msgpack::type::FLOAT64: return Value(object.via.f64);
        case msgpack::type::STR: {
            std::string text(object.via.str.ptr, object.via.str.size);
            if (const auto bad = detail::invalid_utf8_at(text))
                throw DecodeError("acemq: a msgpack str is not valid UTF-8 (bad byte at offset " +
                                  std::to_string(*bad) +
                                  " of the string); binary data must travel as bin");
            return Value(std::move(text));
        }
        case msgpack::type::BIN: {
            const auto* first = reinterpret_cast<const std::byte*>(object.via.bin.ptr);
            return Value(Value::Bytes(first, first + object.via.bin.size));
        }
        case msgpack::type::ARRAY: {
            Value::Array elements;
            elements.reserve(object.via.array.size);
            for (const auto& element : std::span(object.via.array.ptr, object.via.array.size))
                elements.push_back(to_value(element));
            return Value(std::move(elements));
        }
        case msgpack::type::MAP: {
            Value::Map entries;
            entries.reserve(object.via.map.size);
            for (const auto& kv : std::span(object.via.map.ptr, object.via.map.size))
                entries.emplace_back(to_value(kv.key), to_value(kv.val));
            return Value(std::move(entries));
        }
        case msgpack::type::EXT:
            throw DecodeError("acemq: the msgpack body holds an ext value (type " +
                              std::to_string(object.via.ext.type()) +
                              "), which AceMQ does not read");
    }
    throw DecodeError("acemq: the msgpack body holds a value of unknown type " +
                      std::to_string(static_cast<int>(object.type)));
}

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

Value MsgpackCodec::decode(std::span<const std::byte> body, std::string_view) const {
    if (body.empty()) throw DecodeError("acemq: the msgpack body is empty");
    const std::size_t size = body.size();
    // Every element takes at least one byte, so a length larger than the body is a lie;
    // refusing it up front keeps a 10-byte body from allocating for 4 billion elements.
    const msgpack::unpack_limit limits(/*array=*/size, /*map=*/size / 2, /*str=*/size,
                                       /*bin=*/size, /*ext=*/size, /*depth=*/max_depth);
    std::size_t used = 0;
    msgpack::object_handle handle;
    try {
        handle = msgpack::unpack(reinterpret_cast<const char*>(body.data()), size, used, nullptr,
                                 nullptr, limits);
    } catch (const msgpack::insufficient_bytes&) {
        throw DecodeError("acemq: the msgpack body is truncated: its " + std::to_string(size) +
                          " bytes end in the middle of a value");
    } catch (const msgpack::depth_size_overflow&) {
        throw DecodeError("acemq: the msgpack body nests arrays and maps deeper than " +
                          std::to_string(max_depth) + " levels");
    } catch (const msgpack::size_overflow&) {
        throw DecodeError(
            "acemq: the msgpack body declares an array, map, string or bin longer "
            "than the whole body (" +
            std::to_string(size) + " bytes): it is truncated or not msgpack");
    } catch (const msgpack::unpack_error& e) {
        throw DecodeError("acemq: the body is not msgpack: " + std::string(e.what()));
    }
    if (used != size)
        throw DecodeError("acemq: " + std::to_string(size - used) +
                          " bytes left over after the msgpack value; a body holds one value");
    return to_value(handle.get());
}

}  // namespace acemq
