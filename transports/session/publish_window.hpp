// The window of publishes waiting for a confirm: at most max_outstanding_publishes, so a
// broker that does not keep up slows publishers down instead of filling memory.
// Thread-safe; internal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>

namespace acemq::session {

class PublishWindow {
public:
    PublishWindow(std::size_t size, std::chrono::milliseconds wait) : size_(size), wait_(wait) {}

    // Up to `wanted` slots, waiting up to `wait` for the first; 0 when none came.
    std::size_t take(std::size_t wanted);
    void give_back(std::size_t count);
    // Why take() gave none: the publishes in the window and the wait, and what to do.
    std::string full_reason() const;

private:
    const std::size_t size_;
    const std::chrono::milliseconds wait_;
    std::mutex mutex_;  // guards in_flight_
    std::condition_variable cv_;
    std::size_t in_flight_ = 0;
};

}  // namespace acemq::session
