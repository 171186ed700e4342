// Codecs turn a value into a message body and back, and say which content types they
// read. The engine asks a codec through the typed helpers at the bottom (encode<T>,
// decode<T>), which go through reflect.hpp for the C++ side. Encoding streams: the value
// is handed over as a ValueSource and written straight to bytes, with no Value tree in
// between (a publish has about 600 ns for everything; building the tree took a third).
// Decoding does the same where the codec offers a ValueReader (msgpack and JSON do).
//
// A decode failure is a DecodeError, which the engine treats as fatal (the same bytes fail
// the same way every time, so the message is parked, not retried). Codecs hold no mutable
// state: one instance may be shared by any number of threads.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <acemq/detail/codec.hpp>
#include <acemq/error.hpp>
#include <acemq/reflect.hpp>
#include <acemq/value.hpp>
#include <acemq/value_reader.hpp>
#include <acemq/value_writer.hpp>

namespace acemq {

// The content types the family writes (docs/wire-contract.md §8).
namespace content_types {
inline constexpr std::string_view json = "application/json";
inline constexpr std::string_view text = "text/plain; charset=utf-8";
inline constexpr std::string_view octet_stream = "application/octet-stream";
inline constexpr std::string_view msgpack = "application/msgpack";
}  // namespace content_types

// Any value write_value() supports (a struct, a std::vector, an acemq::Value, ...), seen
// only as something that can write itself to a ValueWriter. It refers to the value, like
// std::function_ref: pass it down a call, never keep it. Three pointers, copied by value.
class ValueSource {
public:
    template <class T>
        requires(!std::is_same_v<T, ValueSource>)
    explicit ValueSource(const T& value) noexcept
        : object_(&value),
          write_([](const void* object, ValueWriter& out) { write_value(*static_cast<const T*>(object), out); }),
          struct_name_([]() -> std::string_view {
              if constexpr (detail::is_reflected_struct<T> && !detail::has_value_form<T>) {
                  static const std::string name = detail::type_name<T>();  // demangled once per type
                  return name;
              } else {
                  return {};
              }
          }) {}

    void write_to(ValueWriter& out) const { write_(object_, out); }
    // The C++ name of the struct the value is, as error messages spell it ("acme::OrderPlaced"),
    // or empty when it is no struct (an acemq::Value, a std::map, a std::vector, ...): for a
    // format that names a document after its type, as XML names its root element.
    std::string_view struct_name() const { return struct_name_(); }

private:
    const void* object_;
    void (*write_)(const void*, ValueWriter&);
    std::string_view (*struct_name_)();
};

// The one virtual interface of the codec layer, so applications can add formats.
class Codec {
public:
    virtual ~Codec() = default;

    // A short name for error messages, e.g. "JsonCodec".
    virtual std::string_view name() const noexcept = 0;
    // What encode() produces; the publisher puts it on the message.
    virtual std::string_view content_type() const noexcept = 0;
    // Whether this codec claims a message of this content type. An empty content type
    // means the sender set none; by family rule only JSON claims such a message.
    virtual bool can_decode(std::string_view content_type) const noexcept = 0;

    // Both throw EncodeError for a value this format cannot carry. The built-in codecs
    // write the events of `source` straight to bytes, and encode a Value by streaming it
    // the same way. The default here builds a Value and calls encode(const Value&), so a
    // codec of your own need only implement that one.
    virtual std::vector<std::byte> encode(ValueSource source) const;
    virtual std::vector<std::byte> encode(const Value& value) const = 0;
    // Throws DecodeError. Does not re-check can_decode: the caller already chose.
    virtual Value decode(std::span<const std::byte> body, std::string_view content_type) const = 0;
    // A reader of `body` that decode<T> pulls a C++ value from, building no Value tree, or
    // nullptr (the default) when this codec is read only through decode(). Throws the
    // DecodeError decode() would for a body it refuses, so whatever the reader then finds
    // wrong is about the C++ type, not the bytes. The reader refers to `body`.
    virtual std::unique_ptr<ValueReader> reader(std::span<const std::byte>, std::string_view) const { return nullptr; }
    // How the struct fields in what decode() gives for this content type are keyed, so
    // decode<T> finds them; the same spelling this codec's encode() writes them with.
    virtual FieldNames field_names(std::string_view) const noexcept { return FieldNames::as_is; }
    // How what decode() gives for this content type carries scalars (reflect.hpp), so decode<T>
    // reads them: Scalars::text for XML, whose every value is text.
    virtual Scalars scalars(std::string_view) const noexcept { return Scalars::typed; }

protected:
    Codec() = default;
    Codec(const Codec&) = default;
    Codec& operator=(const Codec&) = default;
};

// Writes text/plain; charset=utf-8 and reads any text/* message, but never an untyped
// one. Carries only strings; a body that is not UTF-8 is refused, never guessed at.
class TextCodec final : public Codec {
public:
    std::string_view name() const noexcept override { return "TextCodec"; }
    std::string_view content_type() const noexcept override { return content_types::text; }
    bool can_decode(std::string_view content_type) const noexcept override;
    std::vector<std::byte> encode(ValueSource source) const override;
    std::vector<std::byte> encode(const Value& value) const override { return encode(ValueSource(value)); }
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
};

// Raw bytes in and out, for payloads the application parses itself. It claims every
// typed message, so in a composite it belongs last; it does not claim an untyped
// message (that one is JSON's), though decode() called directly accepts any body.
class BytesCodec final : public Codec {
public:
    std::string_view name() const noexcept override { return "BytesCodec"; }
    std::string_view content_type() const noexcept override { return content_types::octet_stream; }
    bool can_decode(std::string_view content_type) const noexcept override;
    std::vector<std::byte> encode(ValueSource source) const override;
    std::vector<std::byte> encode(const Value& value) const override { return encode(ValueSource(value)); }
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
};

// Several codecs as one: the first writes; a message is read by the first codec that
// claims its content type, and only by that one. Falling through to the next claimant
// after a failure would let BytesCodec (which claims everything) hide the real reason;
// the content type names a format and is believed.
class CompositeCodec final : public Codec {
public:
    // Throws InvalidArgument when the list is empty or holds a null pointer.
    explicit CompositeCodec(std::vector<std::shared_ptr<const Codec>> codecs);

    std::string_view name() const noexcept override { return "CompositeCodec"; }
    std::string_view content_type() const noexcept override;
    bool can_decode(std::string_view content_type) const noexcept override;
    // Both hand the value, as given, to the first codec.
    std::vector<std::byte> encode(ValueSource source) const override;
    std::vector<std::byte> encode(const Value& value) const override;
    // When nothing can read the message the DecodeError lists every codec asked and why:
    // "acemq: no codec could read this message. Tried MsgpackCodec: ...; JsonCodec: ...".
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
    // The claimant's, its errors reported as decode() reports them.
    std::unique_ptr<ValueReader> reader(std::span<const std::byte> body, std::string_view content_type) const override;
    // The claimant's.
    FieldNames field_names(std::string_view content_type) const noexcept override;
    // The claimant's.
    Scalars scalars(std::string_view content_type) const noexcept override;

    // The codec that reads a message of this content type, or nullptr when none claims it.
    const Codec* claimant(std::string_view content_type) const noexcept;
    const std::vector<std::shared_ptr<const Codec>>& codecs() const noexcept { return codecs_; }

private:
    std::vector<std::shared_ptr<const Codec>> codecs_;
};

// JSON writes (application/json, camelCase keys), as every AceMQ language does; msgpack (`.codec =` a MsgpackCodec
// on the bus, publisher or consumer for it), text and bytes read by content type. One shared immutable instance.
std::shared_ptr<const Codec> default_codec();

// The default codec reading more formats by content type: JSON writes; a message is read by
// JSON, msgpack, then the first of `more` that claims it (a YAML, protobuf or Avro codec, say),
// then text, and BytesCodec last: `more` comes before TextCodec, which claims every text/*
// type, so that text/xml (or text/yaml) reaches the codec of its format. Throws
// InvalidArgument for a null codec in `more`.
//
//   .codec = acemq::default_codec_reading({std::make_shared<acemq::YamlCodec>()})
std::shared_ptr<const Codec> default_codec_reading(std::vector<std::shared_ptr<const Codec>> more);

struct Encoded {
    std::vector<std::byte> body;
    std::string content_type;
};

// Throws EncodeError naming T and the codec; also for a T whose value_form has a body_format
// (reflect.hpp) when `codec` writes another content type.
template <class T>
Encoded encode(const Codec& codec, const T& value) {
    try {
        if constexpr (requires { value_form<T>::body_format; })
            detail::require_body_format(codec, value_form<T>::body_format);
        return Encoded{codec.encode(ValueSource(value)), std::string(codec.content_type())};
    } catch (...) {  // translated (or passed on, for bad_alloc) by the helper, never swallowed
        detail::rethrow_as_encode_error(detail::type_name<T>(), codec.name());
    }
}

// Throws DecodeError naming T, the content type and the reason, e.g.
// "acemq: cannot decode a Payment from application/msgpack: Payment.amount_cents: ...".
// A message only BytesCodec claims (its content type no other codec reads) is refused as
// such, naming the codecs known, unless T reads bytes. std::bad_alloc passes unchanged.
template <class T>
T decode(const Codec& codec, std::span<const std::byte> body, std::string_view content_type) {
    try {
        // A Value is what decode() gives already; anything else is read straight off the
        // body when the codec can (the same value and errors, without the tree in between).
        if constexpr (!std::is_same_v<T, Value>) {
            if (const std::unique_ptr<ValueReader> in = codec.reader(body, content_type)) {
                try {
                    return read_value<T>(*in);
                } catch (const DecodeError&) {
                    // The reader meets a body's faults in the body's order (a JSON object's
                    // keys come in any); the tree below names the first in T's declaration
                    // order, the message decode<T> has always given. Only refusals pay.
                }
            }
        }
        return from_value<T>(codec.decode(body, content_type), codec.field_names(content_type),
                             codec.scalars(content_type));
    } catch (...) {  // translated (or passed on, for bad_alloc) by the helper, never swallowed
        detail::rethrow_as_decode_error(detail::type_name<T>(), content_type, codec);
    }
}

}  // namespace acemq
