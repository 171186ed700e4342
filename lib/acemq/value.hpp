// acemq::Value is the meeting point of C++ types and wire formats: reflect.hpp turns
// structs into Values and back, codecs turn Values into bytes and back, so neither side
// has to know the other. (Encoding a typed value skips the tree: see value_writer.hpp.)
// It is a plain value type (copy, compare, move); a const Value may be read from several
// threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <acemq/detail/value.hpp>

namespace acemq {

class ValueWriter;

class Value {
public:
    enum class Kind { null, boolean, int64, uint64, float64, string, bytes, array, map, record };

    using Bytes = std::vector<std::byte>;
    using Array = std::vector<Value>;
    // Maps keep their order because JSON objects and msgpack maps do, and a reader that
    // re-encodes a message should not shuffle it. Keys are usually strings, but msgpack
    // allows any key, so the type does too.
    using Map = std::vector<std::pair<Value, Value>>;
    // A C++ struct's fields, in declaration order, with their names. Kept apart from Map
    // because formats differ on it: msgpack writes a record positionally (an array, the
    // compact C++ default), JSON writes it as an object keyed by field name (what the
    // other AceMQ languages read).
    using Record = std::vector<std::pair<std::string, Value>>;

    Value() noexcept;  // null
    Value(std::nullptr_t) noexcept;
    Value(bool b) noexcept;
    Value(std::int64_t i) noexcept;
    Value(std::uint64_t u) noexcept;
    Value(double d) noexcept;
    Value(std::string s) noexcept;
    Value(const char* s);
    Value(Bytes b) noexcept;
    Value(Array a) noexcept;
    Value(Map m) noexcept;
    Value(Record r) noexcept;
    // Other integer types would be ambiguous between int64 and uint64; say which.
    template <class I>
        requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
    Value(I i) noexcept
        : Value(std::is_signed_v<I> ? Value(static_cast<std::int64_t>(i)) : Value(static_cast<std::uint64_t>(i))) {}

    Value(const Value&);
    Value(Value&&) noexcept;
    Value& operator=(const Value&);
    Value& operator=(Value&&) noexcept;
    ~Value();

    Kind kind() const noexcept;
    bool is_null() const noexcept { return kind() == Kind::null; }

    // Each accessor throws DecodeError naming the kind it wanted and the kind it found:
    // a Value usually came off the wire, so a mismatch is a bad message, not a bug.
    bool as_bool() const;
    std::int64_t as_int64() const;    // also a uint64 that fits
    std::uint64_t as_uint64() const;  // also a non-negative int64
    double as_double() const;         // also an integer (JSON writes 2.0 as 2 in some languages)
    const std::string& as_string() const;
    const Bytes& as_bytes() const;
    const Array& as_array() const;
    const Map& as_map() const;
    const Record& as_record() const;

    // The first value under `key` in a record or a map with string keys, or nullptr.
    // Throws DecodeError on any other kind.
    const Value* find(std::string_view key) const;

    // Sends this value to `out` as events, depth first: how a codec writes a Value.
    void write_to(ValueWriter& out) const;

    // Integers compare by their mathematical value whatever their kind, because formats
    // do not preserve it (msgpack and JSON readers return int64 for 5, however it was
    // written). NaN equals NaN, so equality is reflexive and round trips can be checked.
    // A record never equals a map: compare after decoding into the C++ type instead.
    friend bool operator==(const Value& a, const Value& b);

private:
    friend class ValueBuilder;  // fills containers in place

    std::variant<std::monostate, bool, std::int64_t, std::uint64_t, double, std::string, Bytes, Array, Map, Record>
        data_;
};

// "int64", "record", ...: the words error messages use.
std::string_view kind_name(Value::Kind kind) noexcept;

}  // namespace acemq
