// What the embedded broker makes of a declaration, as RabbitMQ does: the arguments of a
// queue it acts on, and whether a redeclaration matches what exists. Internal to the
// inproc broker; free functions of their arguments only, so thread-safe.
#pragma once

#include <optional>
#include <string>

#include <acemq/clock.hpp>
#include <acemq/topology.hpp>

namespace acemq::inproc::detail {

// The arguments of a queue the broker enforces, read once at declare. A plain value.
struct QueuePolicy {
    std::optional<Clock::duration> ttl;  // x-message-ttl
    std::optional<std::string> dead_letter_exchange;
    std::optional<std::string> dead_letter_routing_key;  // only with an exchange
};

// Throws TopologyError "PRECONDITION_FAILED - invalid ..." for an argument RabbitMQ would
// refuse, naming it, its value and what it must be.
QueuePolicy read_policy(const QueueDeclaration& queue);

// An identical redeclaration is a no-op; one with other flags or arguments throws
// TopologyError "PRECONDITION_FAILED - ..." naming every difference. Arguments compare by
// value, so 60000 sent as a 32-bit and as a 64-bit integer are the same argument.
void check_redeclaration(const ExchangeDeclaration& existing, const ExchangeDeclaration& asked);
void check_redeclaration(const QueueDeclaration& existing, const QueueDeclaration& asked);

}  // namespace acemq::inproc::detail
