// Protobuf bodies for the message classes protoc generates (the optional protobuf part:
// libacemq-protobuf, acemq-protobuf.pc, CMake component `protobuf`; -Dprotobuf=disabled
// builds acemq without it). Include this header beside your generated .pb.h, and give the
// publisher and consumer of those types a ProtobufCodec:
//
//   auto codec = std::make_shared<acemq::ProtobufCodec>();
//   bus.publisher_to_queue("orders", {.codec = codec}).send(order);  // an acme::OrderPlaced
//   bus.consume<acme::OrderPlaced>("orders", handler, {.codec = codec});
//
// docs/protobuf.md says how to build and link it, and what is refused.
//
// Any class derived from google::protobuf::MessageLite (full or lite runtime) is carried as
// its protobuf bytes: that is its value_form (reflect.hpp), so the same message inside a
// struct travels as a bytes field (base64 text in JSON). Published whole, it is a body only
// through ProtobufCodec: encode() and every send with another codec (JsonCodec, msgpack, a
// composite that writes JSON) throw EncodeError saying so, as no other member would read
// those bytes as the message. The message type is the C++ type
// decode<T> is asked for, so one codec serves every generated type (the family's "one
// message type per codec" is each consumer's T).
//
// Reading is libprotobuf's parser: a body that is truncated, malformed, nests groups deeper
// than its recursion limit (100), claims a length longer than the body, lacks a proto2
// required field or is 2 GiB or more is a DecodeError, which parks the message. Nothing is
// allocated for a length before the bytes it claims are there. Immutable: safe to share
// between threads.
#pragma once

#include <climits>
#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/message_lite.h>

#include <acemq/codec.hpp>
#include <acemq/error.hpp>
#include <acemq/reflect.hpp>
#include <acemq/value.hpp>
#include <acemq/value_writer.hpp>

namespace acemq {

namespace content_types {
inline constexpr std::string_view protobuf = "application/x-protobuf";
}  // namespace content_types

// Writes application/x-protobuf; reads that, application/protobuf,
// application/vnd.google.protobuf and any +protobuf type (docs/wire-contract.md §8), never an
// untyped message. Put it in a CompositeCodec to read protobuf beside JSON and the rest.
class ProtobufCodec final : public Codec {
public:
    std::string_view name() const noexcept override { return "ProtobufCodec"; }
    std::string_view content_type() const noexcept override { return content_types::protobuf; }
    bool can_decode(std::string_view content_type) const noexcept override;
    // Throws EncodeError for anything but a generated message (or bytes already encoded).
    std::vector<std::byte> encode(ValueSource source) const override;
    std::vector<std::byte> encode(const Value& value) const override { return encode(ValueSource(value)); }
    // The body as bytes: what it holds is known only to the T that decode<T> reads.
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
};

namespace detail {

// The message's bytes; throws EncodeError when a proto2 required field is unset or the
// message is 2 GiB or more, which protobuf cannot carry.
std::string serialize_protobuf(const google::protobuf::MessageLite& message);
// Parses `value`'s bytes (or base64 text, as JSON carries bytes) into `message`; throws
// DecodeError naming the message type.
void parse_protobuf(const Value& value, google::protobuf::MessageLite& message);

}  // namespace detail

template <class T>
    requires std::derived_from<T, google::protobuf::MessageLite>
struct value_form<T> {
    static constexpr BodyFormat body_format{"ProtobufCodec", content_types::protobuf};
    static void write(const T& message, ValueWriter& out) {
        const std::string bytes = detail::serialize_protobuf(message);
        out.bytes(std::as_bytes(std::span(bytes.data(), bytes.size())));
    }
    static T read(const Value& value) {
        T message;
        detail::parse_protobuf(value, message);
        return message;
    }
};

}  // namespace acemq
