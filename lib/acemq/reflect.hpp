// write_value / to_value / from_value / read_value: the bridge between C++ types and
// acemq::Value. write_value sends a C++ value to a ValueWriter as events (what codecs
// encode from); to_value collects the same events into a Value, so the two cannot
// disagree. read_value pulls a C++ value from a ValueReader (what decode<T> reads from
// when the codec offers one), by the same rules as from_value and with the same errors.
//
// Supported: bool, every integer type, enums (as their underlying integer), float and
// double, std::string, std::vector<std::byte> (bytes), std::vector<T>, std::array<T, N>,
// std::optional<T> (nullopt is null), std::map<K, T>, acemq::Value itself, and plain
// aggregate structs of those, reflected with Boost.PFR so user types need no macros.
// A struct becomes a record carrying its field keys, so JSON can key objects by them: the
// writer's field_names() spells them, field_keys<T> renames the odd one (field_keys.hpp).
// A type that is none of those takes part through a value_form<T> of its own (below): how
// <acemq/protobuf_codec.hpp> carries generated protobuf messages.
//
// from_value is tolerant of how formats lose type information and strict about
// everything else:
// - a struct reads from a record or a map (by field key: unknown keys are ignored, a
//   missing field is an error unless it is a std::optional) or from an array (by
//   position, which is how msgpack carries it; the length must match). Under
//   FieldNames::camel_case a field whose camelCase key is absent is read from its C++
//   name, so JSON written with FieldNames::as_is still reads; the camelCase key wins
//   when a document has both;
// - an integer reads from int64 or uint64 and must fit the target type;
// - bytes read from bytes or from base64 text (JSON has no bytes);
// - an integer map key reads from decimal text (JSON keys are always strings).
// Every failure is a DecodeError naming the field path and the C++ type, e.g.
// "acemq: Order.items[2].quantity: expected an integer (uint32_t), found a string".
//
// Stateless templates: safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include <acemq/error.hpp>
#include <acemq/field_keys.hpp>
#include <acemq/value.hpp>
#include <acemq/value_reader.hpp>
#include <acemq/value_writer.hpp>

namespace acemq {

// Left undefined: a specialisation makes T a value of its own form, written and read by
//   static void write(const T& value, ValueWriter& out);  // the events of one value
//   static T read(const Value& value);  // throws DecodeError, saying what was wrong
// in place of the rules above (T is then neither reflected nor refused). It must be visible
// wherever T is encoded or decoded: the header that defines it goes with T's. A T that is a
// whole message body in one format only (a protoc-generated message) says so too,
//   static constexpr BodyFormat body_format{"ProtobufCodec", "application/x-protobuf"};
// and encode<T> then refuses it as a body from a codec writing another content type (as a
// field of a struct it is still written as write() says).
template <class T>
struct value_form;

// The one codec, and the content type it writes, that T is a whole message body of.
struct BodyFormat {
    std::string_view codec;
    std::string_view content_type;
};

// Sends `value` to `out` as the events of its Value form, building no Value: the
// streaming path codecs use to encode typed values.
template <class T>
void write_value(const T& value, ValueWriter& out);

template <class T>
Value to_value(const T& value);

// How a format carries scalars, for from_value. typed: as their kinds (JSON, msgpack). text:
// every scalar as a string and a list as repeated entries, as XML does (xml_codec.hpp); from_value
// then also reads, where the C++ type asks for it,
// - an integer (or an enum) from decimal text, the whole text: digits, a leading '-' for a
//   signed type, nothing else ("4250", not " 4250", "+4250" or "4250.0"), that fits the type;
// - a float or double from decimal text ("42.5", "1e-3"), "NaN", "INF" or "-INF";
// - a bool from "true", "false", "1" or "0";
// - an empty std::optional from an empty text (XML writes a null as an empty element);
// - a std::vector from a single value (one element: a list of one) and from nothing (a
//   missing field: a list of none, which is how XML writes an empty list);
// - a std::map or a struct from an empty text (an element with no children).
// Text that does not read as the type asks is a DecodeError naming the field and the text.
enum class Scalars { typed, text };

// `names` says how the keys of records and maps were spelled: as to_value writes them by
// default, or as a JsonCodec of that policy did; `scalars`, how the format carried scalars.
template <class T>
T from_value(const Value& value, FieldNames names = FieldNames::as_is, Scalars scalars = Scalars::typed);

// Reads one value from `in` as a T. A struct that arrives as a map (keyed by the reader's
// field_names()) and a std::map are read as a Value first and then as from_value reads.
template <class T>
T read_value(ValueReader& in);

}  // namespace acemq

// The definitions: templates, so they are in a header; not part of the API.
#include <acemq/detail/reflect.hpp>
