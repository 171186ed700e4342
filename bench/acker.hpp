// Acks deliveries on a thread of its own, for the benchmarks that consume: a DeliverFn must
// only hand a delivery on, never call back into the transport or broker it came from.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <acemq/transport.hpp>

namespace bench {

class Acker {
public:
    Acker() : thread_([this] { run(); }) {}
    ~Acker() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        arrived_.notify_one();
        thread_.join();
    }
    Acker(const Acker&) = delete;
    Acker& operator=(const Acker&) = delete;

    void hand(acemq::Delivery delivery) {
        {
            std::lock_guard lock(mutex_);
            waiting_.push_back(std::move(delivery));
        }
        arrived_.notify_one();
    }

    // Waits until `count` deliveries are acked; throws when they are not within `deadline`
    // or an ack threw.
    void wait_for(int count, std::chrono::steady_clock::duration deadline) {
        std::unique_lock lock(mutex_);
        const bool done =
            acked_changed_.wait_for(lock, deadline, [&] { return failure_ != nullptr || acked_ >= count; });
        if (failure_) std::rethrow_exception(failure_);
        if (!done)
            throw std::runtime_error(
                "only " + std::to_string(acked_) + " of " + std::to_string(count) +
                " deliveries arrived and were acked in " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(deadline).count()) + " s");
    }

private:
    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            arrived_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
            if (stopping_) return;
            std::deque<acemq::Delivery> batch;
            batch.swap(waiting_);
            lock.unlock();
            std::exception_ptr failure;
            try {
                for (acemq::Delivery& delivery : batch) delivery.ack();
            } catch (...) {
                failure = std::current_exception();  // wait_for rethrows it on the measuring thread
            }
            lock.lock();
            acked_ += static_cast<int>(batch.size());
            if (failure) failure_ = failure;
            acked_changed_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable arrived_, acked_changed_;
    std::deque<acemq::Delivery> waiting_;
    int acked_ = 0;
    bool stopping_ = false;
    std::exception_ptr failure_;
    std::thread thread_;
};

}  // namespace bench
