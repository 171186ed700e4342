// One step of hand-over between a caller and a client's I/O thread: the I/O thread sets a
// value or a failure, the caller waits for it with a deadline. A failure travels as its
// class and text, not as an exception_ptr: the waiting thread throws a fresh exception, so
// no exception object is shared between threads (whose reference count the sanitizers cannot
// see through libstdc++). Internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace acemq::session {

// An acemq exception by its class. The numbers are also the zmq protocol's failure kinds
// (docs/zmq-protocol.md §4), which carry all but `connection`.
enum class FailureKind : std::uint8_t { error = 0, topology = 1, invalid_argument = 2, usage = 3, connection = 4 };

struct Failure {
    FailureKind kind;
    std::string what;
};

// The exception being handled, by its class; inside a catch block only.
Failure failure_of_current();
// Throws a fresh exception of `failure`'s class: TopologyError, InvalidArgument, UsageError,
// acemq::ConnectionError or acemq::Error.
[[noreturn]] void raise(const Failure& failure);

template <class T>
class Answer {
public:
    using Clock = std::chrono::steady_clock;

    // The first of set and fail counts; a later one is ignored.
    void set(T value) {
        {
            std::lock_guard lock(mutex_);
            if (value_ || failure_) return;
            value_ = std::move(value);
        }
        // After unlocking, so the woken waiter does not block on the mutex at once; both
        // sides hold the Answer through a shared_ptr, so it outlives this call.
        cv_.notify_all();
    }
    void fail(FailureKind kind, std::string what) {
        {
            std::lock_guard lock(mutex_);
            if (value_ || failure_) return;
            failure_ = Failure{kind, std::move(what)};
        }
        cv_.notify_all();
    }
    void fail_with_current() {
        Failure failure = failure_of_current();
        fail(failure.kind, std::move(failure.what));
    }
    bool ready() {
        std::lock_guard lock(mutex_);
        return value_.has_value() || failure_.has_value();
    }
    // nullopt when `deadline` passes first, and the answer is then abandoned; throws a failure.
    std::optional<T> wait_until(Clock::time_point deadline) {
        std::unique_lock lock(mutex_);
        if (!cv_.wait_until(lock, deadline, [&] { return value_.has_value() || failure_.has_value(); })) {
            abandoned_.store(true, std::memory_order_relaxed);
            return std::nullopt;
        }
        if (failure_) raise(*failure_);
        return std::move(value_);
    }
    // The caller stopped waiting: the I/O thread need not send its request any more.
    bool abandoned() const noexcept { return abandoned_.load(std::memory_order_relaxed); }

private:
    std::mutex mutex_;  // guards value_ and failure_
    std::condition_variable cv_;
    std::optional<T> value_;
    std::optional<Failure> failure_;
    std::atomic<bool> abandoned_{false};
};

}  // namespace acemq::session
