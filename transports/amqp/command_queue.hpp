// Work handed to the transport's I/O thread, and the eventfd that wakes it when work comes
// (or when a publisher found the connection lost). Thread-safe; internal.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <mutex>

namespace acemq::amqp {

class Connection;

// Runs on the I/O thread with the connection up, or with nullptr when the transport closed
// before it could run.
using Command = std::function<void(Connection*)>;

class CommandQueue {
public:
    CommandQueue();  // Error when no eventfd can be made
    ~CommandQueue();
    CommandQueue(const CommandQueue&) = delete;
    CommandQueue& operator=(const CommandQueue&) = delete;

    // Queues `command` and wakes the I/O thread, unless commands already wait (the thread
    // must not sleep while any do); false (and `command` untouched) once shut.
    bool push(Command& command);
    // Everything queued, oldest first, leaving the queue empty.
    std::deque<Command> take_all();
    // Puts back, ahead of anything queued since, commands taken but not run.
    void put_back(std::deque<Command>& commands);
    bool empty();

    // Refuses further commands; false when it was shut already.
    bool shut();
    bool is_shut();

    void wake();
    // For a poll that must also end when work comes; the caller leaves the count alone.
    int wake_fd() const noexcept { return wake_fd_; }
    // Sleeps until work is pushed or wake() is called, `socket` (when not -1) has data, or
    // `timeout` passes.
    void wait(int socket, std::chrono::milliseconds timeout);

private:
    void drain_wake();

    int wake_fd_;
    std::mutex mutex_;
    std::deque<Command> commands_;
    bool shut_ = false;
};

}  // namespace acemq::amqp
