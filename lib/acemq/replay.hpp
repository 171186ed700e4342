// Replay (docs/wire-contract.md §9): moving messages that were set aside
// ({queue}.dlq, {queue}.parked) back to where they can be handled again, once the cause
// is fixed.
//
//   acemq::ReplayResult result = acemq::replay(bus, "orders.new.dlq");
//   std::puts(result.to_string().c_str());                // "moved 3, skipped 0 (drained)"
//
// Each message is pulled, stamped (acemq-replayed-from, acemq-replayed-at,
// acemq-replay-count), republished with its body, content type and id unchanged
// (persistent, mandatory), and only then acked: a failure can duplicate a message, never
// lose one. Identity (id, correlation, first-seen) is kept; by default the attempt restarts
// at 1 and x-acemq-error is dropped, so the retry policy starts over.
//
// Where a message goes: the routing key given, else through the default exchange from
// "{q}.dlq" or "{q}.parked" back to "{q}", else the message's own routing key. The middle
// rule is this library's: the family's rule ("the message's own key") was written for
// copies that kept their original key, but every member's set-aside copy travels with the
// set-aside queue's name as its key (docs/wire-contract.md §6.1, and
// x-dead-letter-routing-key for the broker's own dead letters), so "its own key" would only
// put it back where it was. A message whose own key would lead straight back into the queue
// being replayed stops the replay with ReplayError instead of circling forever: give
// routing_key.
//
// replay() is a one-off, synchronous pass on the calling thread. Two replays of one queue
// at once are safe (each message is pulled by one of them) but pointless.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <acemq/bus.hpp>
#include <acemq/envelope.hpp>
#include <acemq/error.hpp>

namespace acemq {

// Why a replay pass ended: the queue was empty, `limit` messages were moved, the deadline
// passed, or (only inside ReplayError) a message could not be read or republished.
enum class ReplayStop { drained, limit, deadline, failed };
std::string_view to_string(ReplayStop reason) noexcept;

struct ReplayResult {
    std::size_t moved = 0;
    std::size_t skipped = 0;  // declined by `only` and put back on the source queue
    ReplayStop reason = ReplayStop::drained;

    // "moved 3, skipped 0 (drained)"
    std::string to_string() const;

    friend bool operator==(const ReplayResult&, const ReplayResult&) = default;
};

// Which messages to move: given the envelope and the body as they sit in the queue.
using ReplayFilter = std::function<bool(const Envelope& envelope, std::span<const std::byte> body)>;

struct ReplayOptions {
    std::string exchange{};                    // "" = the default exchange
    std::optional<std::string> routing_key{};  // default: see "Where a message goes" above
    std::size_t limit = 0;                     // move at most this many; 0 = all
    // Stop pulling once this long has passed (on the bus's clock); zero stops before the
    // first pull. Checked between messages: one move is never cut in half.
    std::optional<std::chrono::milliseconds> deadline{};
    // Declined messages are held unsettled until the pass ends, then all put back at once
    // (one at a time, each would come straight back to the head and be read forever).
    ReplayFilter only{};
    bool restart = true;  // attempt back to 1 and x-acemq-error dropped; false keeps both
};

// A replay stopped by a message it could not read or republish. That message is back on
// its queue; result() says what had been done before (reason `failed`).
class ReplayError : public Error {
public:
    ReplayError(const std::string& what, ReplayResult result) : Error(what), result_(result) {}
    const ReplayResult& result() const noexcept { return result_; }

private:
    ReplayResult result_;
};

// Moves messages from `queue` as described above. Throws InvalidArgument for an empty
// queue name or a negative deadline, ReplayError when a message cannot be pulled or
// republished (it stays on `queue`; a republish the broker did not take is told in a
// send's words: refused, lost, or "publishing is paused" on a blocked connection), and
// whatever the filter throws (after putting the held messages back).
ReplayResult replay(Bus& bus, std::string_view queue, ReplayOptions options = {});

}  // namespace acemq
