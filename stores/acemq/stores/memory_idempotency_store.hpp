// An idempotency store in this process's memory: for tests, examples and a single worker
// that can afford to handle a message twice after a restart.
//
// Not for production: what it remembers is per process (two consumer processes, or two
// Bus instances in different processes, each believe they are first) and is lost on
// restart, so a redelivery after a crash runs the handler again. Use SqlIdempotencyStore
// (<acemq/stores/sql_idempotency_store.hpp>) when several processes consume one queue or a repeat costs
// money.
//
// One window, `ttl`, is both the claim's lease and how long a confirmed key is remembered:
// an unconfirmed claim answers in_progress until it is `ttl` old, then the key is free
// again; a confirmed key is a duplicate until `ttl` after it was first claimed (confirming
// does not extend it). Expired keys are dropped lazily, oldest first, on each claim; the
// store runs no timer.
//
// Thread-safe: one mutex, held only for the map work (never while a handler runs).
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <acemq/clock.hpp>
#include <acemq/idempotency.hpp>

namespace acemq {

inline constexpr std::chrono::milliseconds default_memory_ttl = std::chrono::hours(1);

class InMemoryIdempotencyStore final : public IdempotencyStore {
public:
    // Throws InvalidArgument unless `ttl` is positive. `clock` (default: real time) lets a
    // test move time with a ManualClock.
    explicit InMemoryIdempotencyStore(std::chrono::milliseconds ttl = default_memory_ttl,
                                      std::shared_ptr<Clock> clock = {});

    // Drops expired keys, then: absent → claimed (remembered now); confirmed → duplicate;
    // claimed and unconfirmed → in_progress.
    Claim claim(const std::string& key) override;
    // Marks a remembered key confirmed, keeping its original time; an unknown key is ignored.
    void confirm(const std::string& key) override;
    // Removes the key whatever its state.
    void forget(const std::string& key) override;
    // What is left of the window of a remembered, unconfirmed key; nullopt otherwise.
    std::optional<std::chrono::milliseconds> lease_left(const std::string& key) override;

    // Keys remembered, including expired ones not yet dropped.
    std::size_t size() const;
    std::chrono::milliseconds ttl() const noexcept { return ttl_; }

private:
    struct Entry {
        std::string key;
        Clock::time_point claimed_at;
        bool confirmed = false;
    };

    void sweep(Clock::time_point now);

    const std::chrono::milliseconds ttl_;
    const std::shared_ptr<Clock> clock_;
    mutable std::mutex lock_;
    std::list<Entry> entries_;  // oldest first, never reordered
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace acemq
