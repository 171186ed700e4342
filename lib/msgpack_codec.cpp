#include "acemq/msgpack_codec.hpp"

#include <bit>
#include <cstdint>
#include <limits>
#include <msgpack.hpp>
#include <string>

#include "acemq/error.hpp"

namespace acemq {

namespace {

// msgpack::packer writes into any stream with write(const char*, size_t).
struct ByteSink {
    std::vector<std::byte>& out;
    void write(const char* data, std::size_t size) {
        const auto* first = reinterpret_cast<const std::byte*>(data);
        out.insert(out.end(), first, first + size);
    }
};

std::uint32_t checked_length(std::size_t size, std::string_view what) {
    if (size > std::numeric_limits<std::uint32_t>::max())
        throw EncodeError("acemq: msgpack cannot carry " + std::string(what) + " of " +
                          std::to_string(size) + " elements or bytes (the limit is 2^32 - 1)");
    return static_cast<std::uint32_t>(size);
}

void enter_container(std::size_t depth) {
    if (depth >= MsgpackCodec::max_depth)
        throw EncodeError("acemq: the value nests arrays and maps deeper than " +
                          std::to_string(MsgpackCodec::max_depth) +
                          " levels, which no AceMQ reader accepts");
}

// msgpack-cxx's pack_double writes integral doubles (0.0, 2.0, -0.0) as integers, which
// loses the kind and the sign of zero; a float 64 is always written as one here.
void pack_float64(ByteSink& sink, double d) {
    const auto bits = std::bit_cast<std::uint64_t>(d);
    char buffer[9];
    buffer[0] = static_cast<char>(0xcb);
    for (int i = 0; i < 8; ++i) buffer[1 + i] = static_cast<char>((bits >> (56 - 8 * i)) & 0xff);
    sink.write(buffer, sizeof buffer);
}

void pack(msgpack::packer<ByteSink>& out, ByteSink& sink, const Value& value, std::size_t depth) {
    switch (value.kind()) {
        case Value::Kind::null: out.pack_nil(); return;
        case Value::Kind::boolean: value.as_bool() ? out.pack_true() : out.pack_false(); return;
        case Value::Kind::int64: out.pack_int64(value.as_int64()); return;
        case Value::Kind::uint64: out.pack_uint64(value.as_uint64()); return;
        case Value::Kind::float64: pack_float64(sink, value.as_double()); return;
        case Value::Kind::string: {
            const std::string& text = value.as_string();
            if (const auto bad = detail::invalid_utf8_at(text))
                throw EncodeError("acemq: a string is not valid UTF-8 (bad byte at offset " +
                                  std::to_string(*bad) +
                                  "); carry binary data in std::vector<std::byte>");
            const auto size = checked_length(text.size(), "a string");
            out.pack_str(size);
            out.pack_str_body(text.data(), size);
            return;
        }
        case Value::Kind::bytes: {
            const auto& bytes = value.as_bytes();
            const auto size = checked_length(bytes.size(), "bytes");
            out.pack_bin(size);
            out.pack_bin_body(reinterpret_cast<const char*>(bytes.data()), size);
            return;
        }
        case Value::Kind::array:
            enter_container(depth);
            out.pack_array(checked_length(value.as_array().size(), "an array"));
            for (const auto& element : value.as_array()) pack(out, sink, element, depth + 1);
            return;
        case Value::Kind::map:
            enter_container(depth);
            out.pack_map(checked_length(value.as_map().size(), "a map"));
            for (const auto& [key, element] : value.as_map()) {
                pack(out, sink, key, depth + 1);
                pack(out, sink, element, depth + 1);
            }
            return;
        case Value::Kind::record:  // positionally: the reader knows the struct
            enter_container(depth);
            out.pack_array(checked_length(value.as_record().size(), "a struct"));
            for (const auto& field : value.as_record()) pack(out, sink, field.second, depth + 1);
            return;
    }
}

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

std::vector<std::byte> MsgpackCodec::encode(const Value& value) const {
    std::vector<std::byte> body;
    ByteSink sink{body};
    msgpack::packer<ByteSink> packer(sink);
    pack(packer, sink, value, 0);
    return body;
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
