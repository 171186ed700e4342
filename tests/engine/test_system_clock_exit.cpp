// The system clock released on its own timer thread. At exit the clock's static owner goes
// first; a timer action that still holds the clock (through a broker it keeps alive, say)
// then drops the last reference on the timer thread, which must not try to join itself
// (that threw std::system_error "Resource deadlock avoided" and aborted the process).
//
// The second half runs after Catch2's main has returned, in the destructor of a static
// constructed before the clock's: a failure there aborts the process, failing the test.
#include <catch2/catch.hpp>

#include <acemq/clock.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

using namespace std::chrono_literals;

namespace {

// A timer action that holds the clock until told to let go, and says when it has.
class ClockHolder {
public:
    ~ClockHolder() {
        std::unique_lock guard(lock_);
        if (!running_) return;  // the test case did not get as far as arming the action
        release_ = true;
        changed_.notify_all();
        if (!changed_.wait_for(guard, 10s, [&] { return released_; })) {
            std::fputs("test_system_clock_exit: the timer action never let go of the clock\n", stderr);
            std::abort();
        }
    }

    void arm() {
        std::shared_ptr<acemq::Clock> clock = acemq::system_clock();
        clock->call_at(clock->now(), [this, held = clock]() mutable {
            std::unique_lock guard(lock_);
            running_ = true;
            changed_.notify_all();
            // Bounded: the clock's own destructor joins this thread when the test goes wrong.
            if (!changed_.wait_for(guard, 30s, [&] { return release_; })) {
                std::fputs("test_system_clock_exit: never told to let go of the clock\n", stderr);
                std::abort();
            }
            held.reset();  // the last reference by now: the clock is destroyed on its own thread
            released_ = true;
            changed_.notify_all();
        });
    }

    bool wait_running() {
        std::unique_lock guard(lock_);
        return changed_.wait_for(guard, 10s, [&] { return running_; });
    }

private:
    std::mutex lock_;
    std::condition_variable changed_;
    bool running_ = false;
    bool release_ = false;
    bool released_ = false;
};

// Constructed before main, so destroyed after system_clock()'s own static.
ClockHolder holder;

}  // namespace

TEST_CASE("a timer action may outlive the system clock's last other owner") {
    holder.arm();
    REQUIRE(holder.wait_running());
}
