#include "amqp/command_queue.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include <acemq/error.hpp>

namespace acemq::amqp {

CommandQueue::CommandQueue() : wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (wake_fd_ < 0) throw Error("acemq: cannot make an eventfd for the AMQP I/O thread");
}

CommandQueue::~CommandQueue() { ::close(wake_fd_); }

bool CommandQueue::push(Command& command) {
    std::lock_guard lock(mutex_);
    if (shut_) return false;
    // Only the first command into an empty queue wakes the thread: it sleeps only after
    // seeing the queue empty, and takes everything queued once awake, so the write (a
    // syscall) per command a consumer's acks cost is not needed.
    const bool was_empty = commands_.empty();
    commands_.push_back(std::move(command));
    if (was_empty) wake();
    return true;
}

std::deque<Command> CommandQueue::take_all() {
    std::deque<Command> batch;
    std::lock_guard lock(mutex_);
    batch.swap(commands_);
    return batch;
}

void CommandQueue::put_back(std::deque<Command>& commands) {
    std::lock_guard lock(mutex_);
    for (auto it = commands.rbegin(); it != commands.rend(); ++it) commands_.push_front(std::move(*it));
    commands.clear();
}

bool CommandQueue::empty() {
    std::lock_guard lock(mutex_);
    return commands_.empty();
}

bool CommandQueue::shut() {
    std::lock_guard lock(mutex_);
    if (shut_) return false;
    shut_ = true;
    return true;
}

bool CommandQueue::is_shut() {
    std::lock_guard lock(mutex_);
    return shut_;
}

void CommandQueue::wake() {
    const std::uint64_t one = 1;
    // A full counter still wakes the reader, so a failed write loses nothing.
    (void)!::write(wake_fd_, &one, sizeof one);
}

void CommandQueue::drain_wake() {
    std::uint64_t count;
    (void)!::read(wake_fd_, &count, sizeof count);
}

void CommandQueue::wait(int socket, std::chrono::milliseconds timeout) {
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {socket, POLLIN, 0}};
    ::poll(fds, socket < 0 ? 1 : 2, static_cast<int>(std::max<std::int64_t>(timeout.count(), 1)));
    if (fds[0].revents != 0) drain_wake();
}

}  // namespace acemq::amqp
