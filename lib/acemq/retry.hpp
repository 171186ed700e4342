// Retry policies: how many times a failed message is tried, how long it waits between
// tries, and where it waits (docs/wire-contract.md §4). The arithmetic is the family's, to
// the millisecond; only the jitter draw is random.
//
//   acemq::no_retry()                                   // the default: one delivery, then the .dlq
//   acemq::fixed_retry(4, 30s)                          // 30 s, 30 s, 30 s
//   acemq::exponential_retry(6, 10s, 1min)              // 10, 20, 40, 60, 60 s, jitter ±20 %
//   acemq::exponential_retry(5, 1s, 24h).give_up_after(2min)
//
// A wait at or above the broker-wait threshold (default 30 s) is held on a rung queue
// `{queue}.retry.{delay}` in the broker, exactly and unjittered; a shorter one is held in
// the consumer, jittered. RetryPolicy is an immutable value: share it between threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace acemq {

using std::chrono::milliseconds;

// Where a retry waits before its next attempt, and for how long.
struct RetryWait {
    milliseconds delay;
    bool in_broker;  // true: on the rung queue for `delay`; false: in the consumer
    friend bool operator==(const RetryWait&, const RetryWait&) = default;
};

inline constexpr milliseconds default_broker_wait_threshold{30000};

class RetryPolicy {
public:
    // The fields, as the family names them. Every factory below validates them.
    std::int32_t max_attempts() const noexcept { return max_attempts_; }  // counts the first delivery
    milliseconds initial_delay() const noexcept { return initial_delay_; }
    double multiplier() const noexcept { return multiplier_; }
    milliseconds max_delay() const noexcept { return max_delay_; }              // 0 = uncapped
    milliseconds max_message_age() const noexcept { return max_message_age_; }  // 0 = no limit
    double jitter_factor() const noexcept { return jitter_factor_; }
    milliseconds broker_wait_threshold() const noexcept { return broker_wait_threshold_; }

    // Copies with one field changed. Each throws InvalidArgument for a value out of range.
    RetryPolicy give_up_after(milliseconds max_age) const;
    RetryPolicy with_jitter(double factor) const;                   // in [0, 1]
    RetryPolicy wait_in_broker_from(milliseconds threshold) const;  // 0 = never in the broker

    // The unjittered waits before attempts 2..max_attempts.
    std::vector<milliseconds> schedule() const;
    // The distinct waits of the schedule held in the broker, in order of first appearance:
    // the rung queues a consumer of this policy declares.
    std::vector<milliseconds> broker_rungs() const;

    // Whether the delivery numbered `attempt` (from 1) that just failed may be tried again,
    // given the message's age (nullopt = unknown, which never trips the age limit).
    bool allows_retry(std::int32_t attempt, std::optional<milliseconds> age) const;
    // The unjittered wait after the delivery numbered `attempt` failed.
    milliseconds base_delay(std::int32_t attempt) const;
    // True when a wait of `delay` is held on a rung queue rather than in the consumer.
    bool waits_in_broker(milliseconds delay) const;

    // The wait before the next attempt, or nullopt when the policy gives up. A consumer
    // wait is jittered by `unit_draw` (uniform in [0, 1)): the multiplier is
    // 1 + (2u - 1) * jitter_factor. The overload without a draw takes one from a
    // per-thread generator.
    std::optional<RetryWait> next_wait(std::int32_t attempt, std::optional<milliseconds> age, double unit_draw) const;
    std::optional<RetryWait> next_wait(std::int32_t attempt, std::optional<milliseconds> age) const;

    friend bool operator==(const RetryPolicy&, const RetryPolicy&) = default;

private:
    RetryPolicy(std::int32_t max_attempts, milliseconds initial_delay, double multiplier, milliseconds max_delay,
                double jitter_factor);
    void validate() const;

    friend RetryPolicy no_retry();
    friend RetryPolicy fixed_retry(std::int32_t, milliseconds);
    friend RetryPolicy exponential_retry(std::int32_t, milliseconds, milliseconds);

    std::int32_t max_attempts_;
    milliseconds initial_delay_;
    double multiplier_;
    milliseconds max_delay_;
    milliseconds max_message_age_{0};
    double jitter_factor_;
    milliseconds broker_wait_threshold_{default_broker_wait_threshold};
};

// One delivery and no retry: a retry request dead-letters with "exhausted 1 attempt".
RetryPolicy no_retry();
// `attempts` deliveries in all, `delay` apart, no jitter.
RetryPolicy fixed_retry(std::int32_t attempts, milliseconds delay);
// `attempts` deliveries in all, doubling from `initial` up to `max` (0 = uncapped),
// jittered ±20 % while the wait is held in the consumer.
RetryPolicy exponential_retry(std::int32_t attempts, milliseconds initial, milliseconds max = milliseconds{0});

// The policy written as the family writes one down (the contract fixture's "how"):
// "none()", "fixed(4, 30s)", "exponential(6, 10s, 1m)", each optionally followed by
// ".giveUpAfter(2m)", ".withJitter(0.1)" and ".waitInBrokerFrom(1m)". A duration is a whole
// number and one of ms, s, m, h. Throws InvalidArgument saying what part is wrong.
RetryPolicy parse_retry_policy(std::string_view how);

}  // namespace acemq
