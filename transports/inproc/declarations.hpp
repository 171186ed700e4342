// What the embedded broker makes of a declaration, as RabbitMQ does: the arguments of a
// queue it acts on, and whether a redeclaration matches what exists. Internal to the
// inproc broker; free functions of their arguments only, so thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <acemq/clock.hpp>
#include <acemq/topology.hpp>

namespace acemq::inproc::detail {

// The consumer argument choosing where a stream consumer starts, and the header each of a
// stream's deliveries carries its offset in: RabbitMQ's name for both.
inline constexpr std::string_view stream_offset_header = "x-stream-offset";

// The arguments of a queue the broker enforces, read once at declare. A plain value.
struct QueuePolicy {
    std::optional<Clock::duration> ttl;  // x-message-ttl
    std::optional<std::string> dead_letter_exchange;
    std::optional<std::string> dead_letter_routing_key;  // only with an exchange
    // A stream's retention: its oldest messages go once older than max_age or once the log's
    // bodies hold more than max_length_bytes (x-max-age, x-max-length-bytes).
    std::optional<Clock::duration> max_age;
    std::optional<std::uint64_t> max_length_bytes;
};

// A duration as RabbitMQ writes x-max-age and an x-stream-offset interval: a positive whole
// number and one unit of Y (365 days), M (30 days), D, h, m, s, e.g. "7D", "90m"; above 200
// years it reads as 200 years. nullopt for anything else.
std::optional<Clock::duration> parse_max_age(std::string_view text);

// Throws TopologyError "PRECONDITION_FAILED - invalid ..." for an argument RabbitMQ would
// refuse, naming it, its value and what it must be, and for a stream that is not durable,
// or is exclusive or auto-delete. A stream takes no TTL or dead-lettering: those arguments
// are kept as declared and not acted on.
QueuePolicy read_policy(const QueueDeclaration& queue);

// An identical redeclaration is a no-op; one with other flags or arguments throws
// TopologyError "PRECONDITION_FAILED - ..." naming every difference. Arguments compare by
// value, so 60000 sent as a 32-bit and as a 64-bit integer are the same argument.
void check_redeclaration(const ExchangeDeclaration& existing, const ExchangeDeclaration& asked);
void check_redeclaration(const QueueDeclaration& existing, const QueueDeclaration& asked);

}  // namespace acemq::inproc::detail
