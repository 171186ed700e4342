// The one translation of what a transport said about a publish into the family's errors
// (docs/wire-contract.md §7.2), for every publish that must be taken by the broker: a
// Publisher's sends, the outbox relay and replay. Internal: not installed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <acemq/publisher.hpp>
#include <acemq/transport.hpp>

namespace acemq::detail {

// "exchange "<ex>" with key "<key>"", as every publish error names where a message went.
std::string destination(std::string_view exchange, std::string_view routing_key);

// The publish the errors name.
struct PublishTarget {
    std::string_view message_id;
    std::string_view exchange;
    std::string_view routing_key;
    bool mandatory = false;  // only then is a message that reached no queue a failure
};

// nullopt when the broker took the message: confirmed and, if mandatory, routed. Otherwise
// the family's PublishError, its reason by why it was not confirmed (the transport's
// reason, when it gave one, in parentheses):
//   refused (nack): "acemq: cannot publish message <id> to exchange "<ex>" with key "<key>":
//     the broker refused to confirm it. The message reached the broker and the broker has
//     not taken responsibility for it, so it must be treated as not sent"
//   in_doubt (lost: the connection went, or no confirm in time): "... : no confirm came from the
//     broker, so it is unknown whether it arrived; treat it as not sent"
//   paused (a blocked connection, nothing written): "acemq: publishing is paused because
//     the broker blocked this connection (<reason>)"
//   too_large (the transport cannot encode it, nothing written): "... : <which field, its
//     size and the limit>. Nothing was written; make it smaller and publish again"
//   not_sent (unsent: the transport is closed, or the connection went before its turn): "... : it
//     was not sent, nothing was written (<reason>)"
// or, unroutable (confirmed but returned): "acemq: message <id> to exchange "<ex>" with key
// "<key>" reached no queue (<reason>); the broker dropped it".
std::optional<PublishError> publish_failure(const PublishResult& result, const PublishTarget& target);

}  // namespace acemq::detail
