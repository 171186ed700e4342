#include "zmq/socket_io.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <system_error>

namespace acemq::zmq {

EventFd::EventFd() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "acemq: cannot make an eventfd");
}

EventFd::~EventFd() { ::close(fd_); }

void EventFd::signal() noexcept {
    const std::uint64_t one = 1;
    // Only EAGAIN (the counter at its maximum) can fail here, and then a wake-up is pending anyway.
    (void)!::write(fd_, &one, sizeof one);
}

void EventFd::clear() noexcept {
    std::uint64_t count = 0;
    // EAGAIN means another clear() took the count first: nothing is lost.
    (void)!::read(fd_, &count, sizeof count);
}

namespace {

::zmq::message_t message_of(msgpack::sbuffer& frame) {
    const std::size_t size = frame.size();
    return ::zmq::message_t(
        frame.release(), size, [](void* data, void*) { std::free(data); }, nullptr);
}

}  // namespace

bool send_frame(::zmq::socket_t& socket, const std::string& routing_id, msgpack::sbuffer frame) {
    try {
        if (!socket.send(::zmq::buffer(routing_id), ::zmq::send_flags::sndmore | ::zmq::send_flags::dontwait))
            return false;
    } catch (const ::zmq::error_t& error) {
        if (error.num() == EHOSTUNREACH) return false;
        throw;
    }
    (void)socket.send(message_of(frame), ::zmq::send_flags::none);
    return true;
}

void send_frame(::zmq::socket_t& socket, msgpack::sbuffer frame) {
    (void)socket.send(message_of(frame), ::zmq::send_flags::none);
}

}  // namespace acemq::zmq
