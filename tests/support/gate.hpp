// A latch a handler blocks on until the test opens it; always opened by its destructor so
// a failing test never leaves a worker stuck. Every wait is bounded.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace testing_support {

class Gate {
public:
    ~Gate() { open(); }
    void open() {
        {
            std::lock_guard guard(lock_);
            open_ = true;
        }
        changed_.notify_all();
    }
    void pass() {
        std::unique_lock guard(lock_);
        ++waiting_;
        changed_.notify_all();
        changed_.wait_for(guard, std::chrono::seconds(30), [&] { return open_; });
        --waiting_;
    }
    bool wait_waiting(int count, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
        std::unique_lock guard(lock_);
        return changed_.wait_for(guard, timeout, [&] { return waiting_ >= count; });
    }
    int waiting() {
        std::lock_guard guard(lock_);
        return waiting_;
    }

private:
    std::mutex lock_;
    std::condition_variable changed_;
    bool open_ = false;
    int waiting_ = 0;
};

}  // namespace testing_support
