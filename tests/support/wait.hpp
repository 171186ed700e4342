// The one way a test waits for something another thread or process does: poll, bounded.
#pragma once

#include <chrono>
#include <thread>

namespace testing_support {

// True as soon as `predicate` holds, polled every `poll`; false when `within` passes first
// (then the predicate has had one last look).
template <class Predicate>
bool eventually(Predicate&& predicate, std::chrono::milliseconds within = std::chrono::seconds(20),
                std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (!predicate()) {
        if (std::chrono::steady_clock::now() >= deadline) return predicate();
        std::this_thread::sleep_for(poll);
    }
    return true;
}

}  // namespace testing_support
