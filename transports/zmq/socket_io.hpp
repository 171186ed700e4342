// What the broker's and the client's I/O threads share: sending one protocol frame, and
// watching a socket's connections (their wake-up is session::WakeUp). Internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include <msgpack.hpp>

namespace acemq::zmq {

// Sends `frame` without copying it (libzmq frees the buffer when written). With
// `routing_id` (a ROUTER socket) it goes to that peer; false when the peer is gone.
bool send_frame(::zmq::socket_t& socket, const std::string& routing_id, msgpack::sbuffer frame);
void send_frame(::zmq::socket_t& socket, msgpack::sbuffer frame);

// What libzmq reports about `socket`'s connections (zmq_socket_monitor: the `events` mask),
// read without waiting on the thread that owns `socket`; poll handle() beside it. Destroy it
// before `socket` is closed: the destructor stops libzmq's monitor and only then closes its
// own end. The other order can find libzmq's I/O thread sending an event to an end that is
// gone, which blocks that thread (and every socket it serves) until the context ends, and
// then leaks the event.
class SocketMonitor {
public:
    struct Event {
        std::uint16_t kind = 0;  // ZMQ_EVENT_*
        std::int32_t value = 0;  // for most kinds the connection's descriptor, else a status
    };

    SocketMonitor(::zmq::context_t& context, ::zmq::socket_t& socket, int events);
    ~SocketMonitor();
    SocketMonitor(const SocketMonitor&) = delete;
    SocketMonitor& operator=(const SocketMonitor&) = delete;

    void* handle() noexcept { return reader_.handle(); }
    // The next event reported, or nothing when none is waiting.
    std::optional<Event> next();

private:
    ::zmq::socket_t& socket_;
    ::zmq::socket_t reader_;
};

}  // namespace acemq::zmq
