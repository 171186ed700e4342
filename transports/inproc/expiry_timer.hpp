// The one clock timer a queue with a TTL keeps armed for its head's expiry, as a record:
// which timer, for when, and a generation that tells a stale firing from the armed one
// (a firing can race with its own cancellation). Arming and cancelling are the broker's
// (Broker::Impl, expiry.cpp), because cancelling must wait until the broker's lock is let go.
// Internal to the inproc broker. Not thread-safe: the broker's lock guards it.
#pragma once

#include <cstdint>

#include <acemq/clock.hpp>

namespace acemq::inproc::detail {

class ExpiryTimer {
public:
    Clock::TimerId id() const noexcept { return id_; }  // 0: none armed
    // True when the armed timer fires by `deadline`: one armed earlier than needed stays,
    // fires, finds nothing due and is armed again.
    bool fires_by(Clock::time_point deadline) const noexcept { return id_ != 0 && deadline_ <= deadline; }

    // The generation to give the timer about to be armed; every earlier one is stale.
    std::uint64_t next_generation() noexcept { return ++generation_; }
    void armed(Clock::TimerId id, Clock::time_point deadline) noexcept {
        id_ = id;
        deadline_ = deadline;
    }
    bool is_current(std::uint64_t generation) const noexcept { return generation == generation_; }
    void fired() noexcept { id_ = 0; }

    // Forgets the armed timer and makes its firing stale; returns it for the caller to
    // cancel once unlocked, or 0 when none was armed.
    Clock::TimerId retire() noexcept {
        if (id_ == 0) return 0;
        const Clock::TimerId retired = id_;
        id_ = 0;
        ++generation_;
        return retired;
    }

private:
    Clock::TimerId id_ = 0;
    Clock::time_point deadline_{};
    std::uint64_t generation_ = 0;
};

}  // namespace acemq::inproc::detail
