// Time as the engine and the embedded broker see it. Everything that waits (a consumer
// holding a retry, a message sitting out its TTL on a rung queue) asks a Clock, so a test
// can replace real time with a ManualClock and run a five-minute rung in milliseconds.
//
// Thread-safe: every member may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>

namespace acemq {

class Clock {
public:
    using time_point = std::chrono::steady_clock::time_point;
    using duration = std::chrono::steady_clock::duration;
    using TimerId = std::uint64_t;

    virtual ~Clock() = default;

    virtual time_point now() const = 0;
    // Blocks until `deadline` has come or `stop` is requested; true when the deadline came.
    virtual bool wait_until(time_point deadline, std::stop_token stop) = 0;
    // Runs `action` once `deadline` has come, on a thread of the clock's choosing (the
    // timer thread of the system clock; the thread calling ManualClock::advance). The
    // action must not block for long: timers run one at a time.
    virtual TimerId call_at(time_point deadline, std::function<void()> action) = 0;
    // Cancels a timer that has not fired; harmless when it already fired or never existed.
    // When it returns, the action is not running and will not run.
    virtual void cancel(TimerId timer) = 0;

    bool wait_for(duration delay, std::stop_token stop) { return wait_until(now() + delay, std::move(stop)); }
};

// Real time. One shared instance; its timer thread starts on the first call_at.
std::shared_ptr<Clock> system_clock();

// Time that moves only when a test says so. wait_until returns once advance() has moved
// the clock past the deadline; due timers run inside advance(), earliest first.
class ManualClock final : public Clock {
public:
    explicit ManualClock(time_point start = time_point{} + std::chrono::hours(1));

    time_point now() const override;
    bool wait_until(time_point deadline, std::stop_token stop) override;
    TimerId call_at(time_point deadline, std::function<void()> action) override;
    void cancel(TimerId timer) override;

    // Moves time forward by `step`, running every timer that falls due on the way at its
    // own time, in deadline order, and waking waiters whose deadline has come.
    void advance(duration step);
    // How many threads are blocked in wait_until now; lets a test advance only once the
    // thing it is testing has started waiting.
    std::size_t waiters() const;

    ManualClock(const ManualClock&) = delete;
    ManualClock& operator=(const ManualClock&) = delete;
    ~ManualClock() override;

private:
    struct State;  // the time, the timers and the waiters, under one lock
    std::unique_ptr<State> state_;
};

}  // namespace acemq
