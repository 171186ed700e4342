// What the broker's and the client's I/O threads share: a wake-up another thread can signal
// (an eventfd, polled beside the sockets) and sending one protocol frame. Internal.
#pragma once

#include <string>
#include <string_view>

#include <zmq.hpp>

#include <msgpack.hpp>

namespace acemq::zmq {

// An eventfd: signal() from any thread, poll fd() for readability, clear() on the polling thread.
class EventFd {
public:
    EventFd();
    ~EventFd();
    EventFd(const EventFd&) = delete;
    EventFd& operator=(const EventFd&) = delete;

    int fd() const noexcept { return fd_; }
    void signal() noexcept;
    void clear() noexcept;

private:
    int fd_;
};

// Sends `frame` without copying it (libzmq frees the buffer when written). With
// `routing_id` (a ROUTER socket) it goes to that peer; false when the peer is gone.
bool send_frame(::zmq::socket_t& socket, const std::string& routing_id, msgpack::sbuffer frame);
void send_frame(::zmq::socket_t& socket, msgpack::sbuffer frame);

}  // namespace acemq::zmq
