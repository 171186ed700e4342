// One step of hand-over between a caller and the transport's I/O thread: the I/O thread
// sets a value or a failure, the caller waits for it with a deadline. Internal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <string>

#include <acemq/amqp.hpp>
#include <acemq/error.hpp>

namespace acemq::amqp {

template <class T>
class Answer {
public:
    using Clock = std::chrono::steady_clock;

    void set(T value) {
        {
            std::lock_guard lock(mutex_);
            value_ = std::move(value);
        }
        // After unlocking, so the woken waiter does not block on the mutex at once; both
        // sides hold the Answer through a shared_ptr, so it outlives this call.
        cv_.notify_all();
    }
    bool ready() {
        std::lock_guard lock(mutex_);
        return value_.has_value() || failure_.has_value();
    }
    // The exception being handled, by its class. A failure travels as its class and text,
    // not as an exception_ptr: the waiting thread throws a fresh exception, so no exception
    // object is shared between threads (whose reference count the sanitizers cannot see
    // through libstdc++).
    void fail_with_current() {
        try {
            throw;
        } catch (const TopologyError& error) {
            fail(Kind::topology, error.what());
        } catch (const ConnectionError& error) {
            fail(Kind::connection, error.what());
        } catch (const UsageError& error) {
            fail(Kind::usage, error.what());
        } catch (const InvalidArgument& error) {
            fail(Kind::invalid_argument, error.what());
        } catch (const std::exception& error) {
            fail(Kind::error, error.what());
        }
    }
    // nullopt when `deadline` passes first; throws a failure.
    std::optional<T> wait_until(Clock::time_point deadline) {
        std::unique_lock lock(mutex_);
        cv_.wait_until(lock, deadline, [&] { return value_.has_value() || failure_.has_value(); });
        if (failure_) {
            switch (failure_->kind) {
            case Kind::topology: throw TopologyError(failure_->what);
            case Kind::connection: throw ConnectionError(failure_->what);
            case Kind::usage: throw UsageError(failure_->what);
            case Kind::invalid_argument: throw InvalidArgument(failure_->what);
            case Kind::error: throw Error(failure_->what);
            }
        }
        return std::move(value_);
    }

private:
    enum class Kind { error, topology, connection, usage, invalid_argument };
    struct Failure {
        Kind kind;
        std::string what;
    };

    void fail(Kind kind, std::string what) {
        {
            std::lock_guard lock(mutex_);
            failure_ = Failure{kind, std::move(what)};
        }
        cv_.notify_all();
    }

    std::mutex mutex_;
    std::condition_variable cv_;
    std::optional<T> value_;
    std::optional<Failure> failure_;
};

}  // namespace acemq::amqp
