// cppzmq used by hand, what the ZeroMQ rows are read against (zmq_bench, request_reply_bench):
// sockets that give up after peer_timeout_ms rather than hang, and a thread to run a peer on.
#pragma once

#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <acemq/field.hpp>

#include <zmq.hpp>

namespace bench::raw_zmq {

// How long one send, receive or wait may take before the benchmark gives up: only a broken
// side is this slow, and a benchmark that hangs reports nothing.
constexpr int peer_timeout_ms = 10'000;

// Runs `body` on a thread of its own; join() rethrows what it threw.
class Worker {
public:
    template <class Body>
    explicit Worker(Body body)
        : thread_([this, body = std::move(body)]() mutable {
              try {
                  body();
              } catch (...) {
                  failure_ = std::current_exception();  // handed to join(), on the thread that reports
              }
          }) {}
    ~Worker() {
        if (thread_.joinable()) thread_.join();
    }
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    void join() {
        thread_.join();
        if (failure_) std::rethrow_exception(failure_);
    }

private:
    std::exception_ptr failure_;
    std::thread thread_;
};

inline void receive(zmq::socket_t& socket, zmq::message_t& message, const char* what) {
    if (!socket.recv(message, zmq::recv_flags::none))
        throw std::runtime_error(std::string(what) + ": nothing arrived in " + std::to_string(peer_timeout_ms) + " ms");
}

// Sends on a PUSH or DEALER socket, which block while the peer takes nothing.
inline void send(zmq::socket_t& socket, const acemq::Bytes& payload, const char* what) {
    if (!socket.send(zmq::buffer(payload.data(), payload.size()), zmq::send_flags::none))
        throw std::runtime_error(std::string(what) + ": the peer took nothing for " + std::to_string(peer_timeout_ms) +
                                 " ms");
}

// Gives up on a send or receive after peer_timeout_ms; drops what is unsent when closed.
inline zmq::socket_t timed_socket(zmq::context_t& context, zmq::socket_type type) {
    zmq::socket_t socket(context, type);
    socket.set(zmq::sockopt::rcvtimeo, peer_timeout_ms);
    socket.set(zmq::sockopt::sndtimeo, peer_timeout_ms);
    socket.set(zmq::sockopt::linger, 0);
    return socket;
}

inline zmq::socket_t bound(zmq::context_t& context, zmq::socket_type type, const std::string& bind) {
    zmq::socket_t socket = timed_socket(context, type);
    socket.bind(bind);
    return socket;
}

inline zmq::socket_t connected(zmq::context_t& context, zmq::socket_type type, const std::string& address) {
    zmq::socket_t socket = timed_socket(context, type);
    socket.connect(address);
    return socket;
}

// A ROUTER bound to `bind` whose thread sends every request back as it came, and the DEALER
// that asks it: a call is send() then receive(), and any number may be sent before their
// echoes are read (they come back in order). close() ends the echo with an empty request and
// rethrows what its thread threw.
class Echo {
public:
    Echo(zmq::context_t& context, const std::string& bind)
        : router_(bound(context, zmq::socket_type::router, bind)),
          dealer_(connected(context, zmq::socket_type::dealer, router_.get(zmq::sockopt::last_endpoint))),
          thread_([this] { echo(); }) {}
    ~Echo() {
        if (closed_) return;
        try {
            raw_zmq::send(dealer_, acemq::Bytes{},
                          "DEALER, the last request");  // else the thread waits out its timeout
        } catch (const std::exception&) {
            // The thread then ends at its receive timeout; the destructor has no one to tell.
        }
    }
    Echo(const Echo&) = delete;
    Echo& operator=(const Echo&) = delete;

    void send(const acemq::Bytes& payload) { raw_zmq::send(dealer_, payload, "DEALER, a request"); }
    void receive() { raw_zmq::receive(dealer_, reply_, "DEALER, the echo"); }

    // Every echo sent for must have been received first.
    void close() {
        closed_ = true;
        raw_zmq::send(dealer_, acemq::Bytes{}, "DEALER, the last request");
        raw_zmq::receive(dealer_, reply_, "DEALER, the echo of the last request");
        thread_.join();
    }

private:
    void echo() {
        zmq::message_t identity, body;
        for (bool last = false; !last;) {
            raw_zmq::receive(router_, identity, "ROUTER, a request's identity");
            raw_zmq::receive(router_, body, "ROUTER, a request's body");
            last = body.size() == 0;  // read before the send, which leaves `body` empty
            router_.send(identity, zmq::send_flags::sndmore);
            router_.send(body, zmq::send_flags::none);
        }
    }

    zmq::socket_t router_;
    zmq::socket_t dealer_;
    zmq::message_t reply_;
    bool closed_ = false;
    Worker thread_;  // last: started once the sockets exist, joined before they go
};

// `count` round trips of `payload` through `echo`, one at a time: each one's microseconds.
inline std::vector<double> round_trip_micros(Echo& echo, const acemq::Bytes& payload, int count) {
    using Clock = std::chrono::steady_clock;
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        const auto sent = Clock::now();
        echo.send(payload);
        echo.receive();
        samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - sent).count());
    }
    return samples;
}

}  // namespace bench::raw_zmq
