// What the engine does with a delivery once its handler has answered
// (docs/wire-contract.md §6, docs/patterns.md §6.2): the decision is a pure function of the
// answer, the envelope and the retry policy, so it is tested without any broker. The
// consumer then carries it out.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <acemq/ack.hpp>
#include <acemq/envelope.hpp>
#include <acemq/retry.hpp>

namespace acemq {

// The family's outcome words: acked, retried, rejected, dead_lettered, parked, in_progress.
enum class Outcome { acked, retried, rejected, dead_lettered, parked, in_progress };
std::string_view to_string(Outcome outcome) noexcept;

struct Settlement {
    Outcome outcome = Outcome::acked;
    // For rejected, dead_lettered and parked: the x-acemq-error text the copy carries.
    std::string reason;
    // For retried: how long and where the message waits before its next attempt.
    std::optional<RetryWait> wait;
    // For in_progress: how long before the message is looked at again.
    std::chrono::milliseconds delay{0};

    // True for rejected and dead_lettered: the copy goes to {queue}.dlq.
    bool dead_lettered() const noexcept { return outcome == Outcome::rejected || outcome == Outcome::dead_lettered; }
};

// Decides what to do with a message whose handler answered `ack`. `age` nullopt = unknown;
// `unit_draw` in [0, 1) jitters a consumer-side wait (see RetryPolicy::next_wait).
Settlement decide(const Ack& ack, const Envelope& envelope, const RetryPolicy& policy,
                  std::optional<std::chrono::milliseconds> age, double unit_draw);

// The settlement of a body no codec could read: parked, never retried, handler never run.
// Whatever the decoder threw counts, not only a DecodeError: a std::bad_alloc, or anything
// a codec of the application's throws, parks the message rather than end the process.
Settlement undecodable(const Failure& decode_failure);
Settlement undecodable(const std::exception& decode_failure);

// A duration as the reasons write it: "2m", "1m30s", "1h", "500ms", "0s".
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace acemq
