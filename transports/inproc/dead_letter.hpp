// The headers of dead-lettering, as RabbitMQ writes and reads them: `x-death` and the
// x-first-death-* / x-last-death-* a message gains each time it dies, and the cycle rule
// they decide. Where a dead message goes is routing's business (Broker::Impl). Internal to
// the inproc broker; functions of their arguments only, so thread-safe.
#pragma once

#include <string_view>

#include <acemq/transport.hpp>

namespace acemq::inproc::detail {

// Adds this death to the message's `x-death` header: newest first, and a second death
// through the same queue for the same reason counts up the entry it already has (moving
// it to the front) instead of adding one.
void record_death(InboundParts& message, std::string_view queue, std::string_view reason);

// True when a message dying by expiry must be dropped instead of reaching `target`: it
// already died in that queue, and no consumer rejected it on the way (then a client is in
// the loop and RabbitMQ lets it through).
bool dead_letter_cycle(const InboundMessage& message, std::string_view target);

}  // namespace acemq::inproc::detail
