// A count that handlers raise and the test thread waits on, always with a bound: "it ran",
// "it ran twice", "the payment is in the books". Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace testing_support {

class Tally {
public:
    void add() {
        {
            std::lock_guard guard(lock_);
            ++count_;
        }
        changed_.notify_all();
    }
    // True once add() was called `count` times; false when `timeout` passed first.
    bool wait_at_least(int count, std::chrono::milliseconds timeout) {
        std::unique_lock guard(lock_);
        return changed_.wait_for(guard, timeout, [&] { return count_ >= count; });
    }
    int count() {
        std::lock_guard guard(lock_);
        return count_;
    }

private:
    std::mutex lock_;
    std::condition_variable changed_;
    int count_ = 0;
};

}  // namespace testing_support
