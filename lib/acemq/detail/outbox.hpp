// Internal: what record() of <acemq/outbox.hpp> calls into the library for. Included by it;
// do not include it yourself, nothing in it is API.
#pragma once

#include <optional>
#include <string_view>

#include <acemq/envelope.hpp>

namespace acemq {

class Bus;

namespace detail {

// The envelope record() renders: the caller's, completed, or a fresh one from `bus`.
Envelope outbox_envelope(const Bus& bus, std::string_view routing_key, std::optional<Envelope> given);

}  // namespace detail

}  // namespace acemq
