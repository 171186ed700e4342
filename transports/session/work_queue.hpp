// Work handed to a client's I/O thread, and the eventfd that wakes it when work comes (or
// when another thread has news for it). Thread-safe; internal.
#pragma once

#include <chrono>
#include <deque>
#include <mutex>

namespace acemq::session {

// An eventfd: signal() from any thread, poll fd() for readability, clear() on the polling thread.
class WakeUp {
public:
    WakeUp();  // Error when no eventfd can be made
    ~WakeUp();
    WakeUp(const WakeUp&) = delete;
    WakeUp& operator=(const WakeUp&) = delete;

    int fd() const noexcept { return fd_; }
    void signal() noexcept;
    void clear() noexcept;
    // Sleeps until signalled (and clears), `socket` (when not -1) has data, or `timeout` passes.
    void wait(int socket, std::chrono::milliseconds timeout) noexcept;

private:
    int fd_;
};

template <class T>
class WorkQueue {
public:
    // Queues `item` and wakes the I/O thread, unless items already wait (the thread must not
    // sleep while any do, and takes everything queued once awake, so the write, a syscall, is
    // needed only for the first of a burst); false (and `item` untouched) once shut.
    bool push(T& item) {
        std::lock_guard lock(mutex_);
        if (shut_) return false;
        const bool was_empty = items_.empty();
        items_.push_back(std::move(item));
        if (was_empty) wake_.signal();
        return true;
    }
    // Everything queued, oldest first, leaving the queue empty.
    std::deque<T> take_all() {
        std::deque<T> batch;
        std::lock_guard lock(mutex_);
        batch.swap(items_);
        return batch;
    }
    // Puts back, ahead of anything queued since, items taken but not done.
    void put_back(std::deque<T>& items) {
        std::lock_guard lock(mutex_);
        for (auto it = items.rbegin(); it != items.rend(); ++it) items_.push_front(std::move(*it));
        items.clear();
    }
    bool empty() {
        std::lock_guard lock(mutex_);
        return items_.empty();
    }

    // Refuses further items; false when it was shut already.
    bool shut() {
        std::lock_guard lock(mutex_);
        if (shut_) return false;
        shut_ = true;
        return true;
    }
    bool is_shut() {
        std::lock_guard lock(mutex_);
        return shut_;
    }

    void wake() noexcept { wake_.signal(); }
    // For a poll that must also end when work comes; clear_wake() once it has.
    int wake_fd() const noexcept { return wake_.fd(); }
    void clear_wake() noexcept { wake_.clear(); }
    // Sleeps until work is pushed or wake() is called, `socket` (when not -1) has data, or
    // `timeout` passes.
    void wait(int socket, std::chrono::milliseconds timeout) noexcept { wake_.wait(socket, timeout); }

private:
    WakeUp wake_;
    std::mutex mutex_;  // guards items_ and shut_
    std::deque<T> items_;
    bool shut_ = false;
};

}  // namespace acemq::session
