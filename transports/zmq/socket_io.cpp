#include "zmq/socket_io.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace acemq::zmq {

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

SocketMonitor::SocketMonitor(::zmq::context_t& context, ::zmq::socket_t& socket, int events)
    : socket_(socket), reader_(context, ::zmq::socket_type::pair) {
    static std::atomic<std::uint64_t> monitors{0};
    const std::string endpoint = "inproc://acemq-monitor-" + std::to_string(++monitors);
    reader_.set(::zmq::sockopt::linger, 0);
    if (zmq_socket_monitor(socket_.handle(), endpoint.c_str(), events) != 0) throw ::zmq::error_t();
    reader_.connect(endpoint);
}

SocketMonitor::~SocketMonitor() {
    // Stopping can fail only when the socket is no longer open (ETERM, ENOTSOCK), and then
    // there is no monitor left to stop.
    (void)zmq_socket_monitor(socket_.handle(), nullptr, 0);
}

std::optional<SocketMonitor::Event> SocketMonitor::next() {
    for (;;) {
        ::zmq::message_t event, address;
        if (!reader_.recv(event, ::zmq::recv_flags::dontwait)) return std::nullopt;
        if (reader_.get(::zmq::sockopt::rcvmore)) (void)reader_.recv(address);
        // Every event is two frames, the first six bytes or more; anything shorter is not one.
        if (event.size() < 6) continue;
        Event read;
        std::memcpy(&read.kind, event.data(), 2);
        std::memcpy(&read.value, static_cast<const char*>(event.data()) + 2, 4);
        return read;
    }
}

}  // namespace acemq::zmq
