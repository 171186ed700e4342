#include "message_view.hpp"

#include <span>
#include <string_view>

#include <acemq/codec.hpp>
#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/msgpack_codec.hpp>
#include "output.hpp"

namespace acemq::cli {
namespace {

// Bodies shown as hex are cut here in the text for people; --json carries them whole.
constexpr std::size_t shown_hex_bytes = 512;

struct DecodedBody {
    std::string encoding;  // "json", "msgpack", "text", "hex"
    Value value;           // the decoded tree, the text, or the hex digits
    std::string failure;   // why the codec the content type names could not read it
};

std::string hex_of(std::span<const std::byte> bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (std::byte b : bytes) {
        out += digits[std::to_integer<unsigned>(b) >> 4];
        out += digits[std::to_integer<unsigned>(b) & 0x0F];
    }
    return out;
}

bool starts_with_text(std::string_view content_type) {
    return content_type.size() >= 5 && (content_type.substr(0, 5) == "text/" || content_type.substr(0, 5) == "TEXT/");
}

DecodedBody decode(const InboundMessage& message) {
    const std::span<const std::byte> body(message.body());
    const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
    std::string failure;
    static const JsonCodec json;
    static const MsgpackCodec msgpack;
    for (const auto& [name, codec] : {std::pair<const char*, const Codec*>{"json", &json}, {"msgpack", &msgpack}}) {
        if (!codec->can_decode(message.content_type())) continue;
        try {
            return {name, codec->decode(body, message.content_type()), ""};
        } catch (const DecodeError& error) {
            failure = "not readable as " + std::string(name) + ": " + std::string(without_prefix(error.what()));
        }
    }
    // Text when the content type says so (control characters are escaped when shown), or
    // when nothing says otherwise and it reads as text.
    if (starts_with_text(message.content_type()) ? is_utf8(text) : message.content_type().empty() && is_text(text))
        return {"text", Value(std::string(text)), failure};
    return {"hex", Value(hex_of(body)), failure};
}

}  // namespace

Envelope envelope_of(const InboundMessage& message) { return read_envelope(message); }

std::string message_text(const MessageView& view) {
    const InboundMessage& message = view.message;
    const Envelope envelope = envelope_of(message);
    std::string out;
    const auto line = [&out](std::string_view name, std::string_view value) {
        std::string key(name);
        key.resize(std::max<std::size_t>(key.size(), 13), ' ');
        out += key + " " + printable(value) + "\n";
    };
    out += "--- message" + (view.position ? " " + std::to_string(*view.position) : std::string()) + "\n";
    line("id", envelope.id_generated ? "- (none)" : envelope.id);
    line("type", envelope.type);
    line("attempt", std::to_string(envelope.attempt));
    if (envelope.first_seen)
        line("first seen",
             time_text(*envelope.first_seen) + " (" + age_text(envelope.age(epoch_millis_now())) + " ago)");
    if (!envelope.error.empty()) line("error", envelope.error);
    if (!envelope.origin.empty()) line("origin", envelope.origin);
    if (envelope.correlation != envelope.id) line("correlation", envelope.correlation);
    if (!envelope.causation.empty()) line("causation", envelope.causation);
    line("exchange", message.exchange().empty() ? "(default)" : message.exchange());
    line("routing key", message.routing_key());
    line("content type", message.content_type().empty() ? "-" : message.content_type());
    if (view.persistent) line("persistent", *view.persistent ? "yes" : "no");
    if (message.redelivered()) line("redelivered", "yes");
    if (!message.reply_to().empty()) line("reply to", message.reply_to());
    for (const auto& [name, value] : envelope.headers) line("header " + name, value.to_string());
    if (!message.decode_failure().empty()) line("unreadable", message.decode_failure());
    const DecodedBody body = decode(message);
    line("body", body.encoding + ", " + std::to_string(message.body().size()) + " bytes" +
                     (body.failure.empty() ? "" : " (" + body.failure + ")"));
    if (body.encoding == "text")
        out += printable(body.value.as_string(), true) + "\n";
    else if (body.encoding == "hex")
        out += cut(body.value.as_string(), shown_hex_bytes * 2) + "\n";
    else
        out += pretty_json(body.value) + "\n";
    return out;
}

Value message_value(const MessageView& view) {
    const InboundMessage& message = view.message;
    const Envelope envelope = envelope_of(message);
    const DecodedBody body = decode(message);
    Value::Map out;
    if (view.position) out.emplace_back("position", *view.position);
    out.emplace_back("id", envelope.id_generated ? Value() : Value(envelope.id));
    out.emplace_back("type", envelope.type);
    out.emplace_back("attempt", static_cast<std::int64_t>(envelope.attempt));
    out.emplace_back("firstSeen", envelope.first_seen ? Value(time_text(*envelope.first_seen)) : Value());
    out.emplace_back("error", envelope.error);
    out.emplace_back("origin", envelope.origin);
    out.emplace_back("correlation", envelope.correlation);
    out.emplace_back("causation", envelope.causation);
    out.emplace_back("exchange", std::string(message.exchange()));
    out.emplace_back("routingKey", std::string(message.routing_key()));
    out.emplace_back("contentType", std::string(message.content_type()));
    if (view.persistent) out.emplace_back("persistent", *view.persistent);
    out.emplace_back("redelivered", message.redelivered());
    out.emplace_back("headers", to_value(envelope.headers));
    out.emplace_back("bodyBytes", static_cast<std::uint64_t>(message.body().size()));
    out.emplace_back("bodyEncoding", body.encoding);
    out.emplace_back("body", body.value);
    return Value(std::move(out));
}

}  // namespace acemq::cli
