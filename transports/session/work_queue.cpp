#include "session/work_queue.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include <acemq/error.hpp>

namespace acemq::session {

WakeUp::WakeUp() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw Error("acemq: cannot make an eventfd to wake a transport's I/O thread");
}

WakeUp::~WakeUp() { ::close(fd_); }

void WakeUp::signal() noexcept {
    const std::uint64_t one = 1;
    // Only EAGAIN (the counter at its maximum) can fail here, and then a wake-up is pending anyway.
    (void)!::write(fd_, &one, sizeof one);
}

void WakeUp::clear() noexcept {
    std::uint64_t count = 0;
    // EAGAIN means another clear() took the count first: nothing is lost.
    (void)!::read(fd_, &count, sizeof count);
}

void WakeUp::wait(int socket, std::chrono::milliseconds timeout) noexcept {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {socket, POLLIN, 0}};
    ::poll(fds, socket < 0 ? 1 : 2, static_cast<int>(std::max<std::int64_t>(timeout.count(), 1)));
    if (fds[0].revents != 0) clear();
}

}  // namespace acemq::session
