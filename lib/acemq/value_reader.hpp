// ValueReader: a body read one value at a time, pulled by the reader of a C++ type, so
// decoding a struct builds no acemq::Value (reflect.hpp's read_value; decode<T> uses it
// when the codec offers a reader, see Codec::reader). The mirror of value_writer.hpp.
//
// next() says the kind of the next value; then the one call for that kind takes it:
// null, boolean, int64 (an integer int64 holds), uint64 (one only uint64 holds),
// float64, string, bytes, array or map. array() and map() take only the header and say
// how many values follow (a map: that many key and value pairs), which are then read the
// same way; value() takes the next value whole, whatever its kind. Calling the taking
// call of another kind is a bug in the caller: UsageError.
//
// A reader is handed out only for a body its codec has checked whole: it reads exactly
// one value, and the errors of the body (truncated, too deep, ...) were thrown before.
// One use, one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <acemq/field_keys.hpp>
#include <acemq/value.hpp>

namespace acemq {

class ValueReader {
public:
    virtual ~ValueReader() = default;

    // Never Kind::record: formats carry a struct as an array or a map.
    virtual Value::Kind next() = 0;

    virtual void null() = 0;
    virtual bool boolean() = 0;
    virtual std::int64_t int64() = 0;
    virtual std::uint64_t uint64() = 0;
    virtual double float64() = 0;
    // The views stay valid as long as the body the reader reads.
    virtual std::string_view string() = 0;
    virtual std::span<const std::byte> bytes() = 0;
    virtual std::size_t array() = 0;
    virtual std::size_t map() = 0;
    virtual Value value() = 0;

    // How the keys of a struct read from a map are spelled (see Codec::field_names).
    virtual FieldNames field_names() const noexcept { return FieldNames::as_is; }

protected:
    ValueReader() = default;
    ValueReader(const ValueReader&) = default;
    ValueReader& operator=(const ValueReader&) = default;
};

}  // namespace acemq
