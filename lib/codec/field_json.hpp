// Field values (headers, queue and exchange arguments) as JSON values and back, for what
// keeps them as JSON text: the SQL outbox's headers, a topology file's arguments. JSON has
// neither bytes nor timestamps, so those are refused rather than turned into something
// that would read back as another kind.
#pragma once

#include <string_view>

#include <acemq/field.hpp>
#include <acemq/value.hpp>

namespace acemq::detail {

// `field` as a JSON value: integers as int64 (uint64 as it is), tables as objects. Throws
// InvalidArgument for bytes or a timestamp, at any depth, naming `what` and `name` (header
// "trace-blob") and saying why `keeper` cannot hold it ("the SQL outbox cannot store (it
// keeps headers as JSON)").
Value field_to_json(const FieldValue& field, std::string_view what, std::string_view name, std::string_view keeper);

// A decoded JSON value as a field value: null is void, an integer int64 (uint64 past
// INT64_MAX), or int32 when `int32` and it fits (for the family's 32-bit headers; nested
// values never are), an object a table. Throws DecodeError for a kind JSON never decodes
// to (bytes, a record).
FieldValue field_from_json(const Value& value, bool int32 = false);

}  // namespace acemq::detail
