// One message as peek, tail and the dlq commands show it: its envelope (id, attempt, error,
// first seen, ...), its properties, its application headers, and its body decoded by the
// codec its content type names (JSON pretty, msgpack as JSON, text as text, anything else as
// hex), every text escaped so that nothing in it reaches the terminal as a control
// character. Internal to the program.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <acemq/envelope.hpp>
#include <acemq/transport.hpp>
#include <acemq/value.hpp>

namespace acemq::cli {

struct MessageView {
    const InboundMessage& message;
    std::optional<std::uint64_t> position{};  // in its queue, when browsed
    std::optional<bool> persistent{};         // when the broker tells
};

// The envelope as the family reads it off the message's headers.
Envelope envelope_of(const InboundMessage& message);

// Lines for people, ending in a newline.
std::string message_text(const MessageView& view);
// A JSON object: position, id, type, attempt, firstSeen, error, ..., headers, body.
Value message_value(const MessageView& view);

}  // namespace acemq::cli
