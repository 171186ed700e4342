#include <acemq/protobuf_codec.hpp>

#include <utility>

#include "scalar_writer.hpp"

namespace acemq {

bool ProtobufCodec::can_decode(std::string_view content_type) const noexcept {
    return detail::starts_with_ci(content_type, "application/x-protobuf") ||
           detail::starts_with_ci(content_type, "application/protobuf") ||
           detail::starts_with_ci(content_type, "application/vnd.google.protobuf") ||
           detail::contains_ci(content_type, "+protobuf");
}

std::vector<std::byte> ProtobufCodec::encode(ValueSource source) const {
    detail::ScalarWriter writer(Value::Kind::bytes,
                                "acemq: ProtobufCodec writes only messages protoc generated "
                                "(google::protobuf::MessageLite, with <acemq/protobuf_codec.hpp> included), not ",
                                " values; use JsonCodec or MsgpackCodec for other types");
    source.write_to(writer);
    return std::move(writer.body);
}

Value ProtobufCodec::decode(std::span<const std::byte> body, std::string_view) const {
    return Value(Value::Bytes(body.begin(), body.end()));
}

namespace detail {

std::string serialize_protobuf(const google::protobuf::MessageLite& message) {
    if (!message.IsInitialized())
        throw EncodeError("acemq: the " + message.GetTypeName() + " lacks required fields (" +
                          message.InitializationErrorString() + "); set them before publishing");
    const std::size_t size = message.ByteSizeLong();
    if (size > static_cast<std::size_t>(INT_MAX))
        throw EncodeError("acemq: the " + message.GetTypeName() + " is " + std::to_string(size) +
                          " bytes, more than protobuf can carry (2 GiB); send it by claim check");
    std::string bytes;
    if (!message.SerializeToString(&bytes))
        throw EncodeError("acemq: protobuf could not serialize the " + message.GetTypeName());
    return bytes;
}

void parse_protobuf(const Value& value, google::protobuf::MessageLite& message) {
    // JSON has no bytes: a message inside a struct comes back from it as base64 text, which
    // from_value reads as bytes does for any bytes field.
    const Value::Bytes from_text =
        value.kind() == Value::Kind::bytes ? Value::Bytes{} : from_value<Value::Bytes>(value);
    const Value::Bytes& bytes = value.kind() == Value::Kind::bytes ? value.as_bytes() : from_text;
    if (bytes.size() > static_cast<std::size_t>(INT_MAX))
        throw DecodeError("acemq: a protobuf body of " + std::to_string(bytes.size()) +
                          " bytes is over protobuf's 2 GiB limit");
    // ParseFromArray would log missing required fields to stderr itself; this says it in the error.
    if (!message.ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size())))
        throw DecodeError("acemq: the " + std::to_string(bytes.size()) + "-byte body is not a valid " +
                          message.GetTypeName() +
                          " (truncated, malformed or nested too deeply); check the sender's .proto and content type");
    if (!message.IsInitialized())
        throw DecodeError("acemq: the " + message.GetTypeName() + " lacks required fields (" +
                          message.InitializationErrorString() + "); the sender's .proto differs from yours");
}

}  // namespace detail

}  // namespace acemq
