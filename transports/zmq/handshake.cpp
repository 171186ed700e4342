// A new socket and its handshake: CurveZMQ through a socket monitor (a key the broker refuses
// shows only there), then hello and the broker's welcome, which starts the session
// (docs/zmq-protocol.md §7).
#include "zmq/zmq_transport.hpp"

#include <acemq/log.hpp>
#include <acemq/url.hpp>

#include "inproc/quoted.hpp"

namespace acemq::zmq {

using wire::Command;

void ZmqTransport::open_socket() {
    monitor_.reset();
    socket_.reset();
    socket_.emplace(context_, ::zmq::socket_type::dealer);
    socket_->set(::zmq::sockopt::linger, 0);
    socket_->set(::zmq::sockopt::sndhwm, 0);
    socket_->set(::zmq::sockopt::reconnect_ivl, 100);
    if (options_.curve) {
        socket_->set(::zmq::sockopt::curve_serverkey, server_key_);
        socket_->set(::zmq::sockopt::curve_publickey, public_key_);
        socket_->set(::zmq::sockopt::curve_secretkey, secret_key_);
    }
    // The handshake's failures (a key the broker refuses) are seen only through a monitor.
    monitor_.emplace(
        context_, *socket_,
        ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL);
    socket_->connect(endpoint_);
}

void ZmqTransport::watch_handshake() {
    while (const auto event = monitor_->next()) {
        if (event->kind == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
            key_refused_ = true;
            refused_because_ = "acemq: " + where() + " refused this client's CurveZMQ key (ZAP status " +
                               std::to_string(event->value) +
                               "): give the broker's operator this client's .pub file to add to its allowed keys";
        } else {
            refused_because_ = "acemq: the security handshake with " + where() +
                               " failed: do both sides use CurveZMQ, and is the broker's public key the right one?";
        }
    }
}

bool ZmqTransport::start_session(Clock::time_point deadline, bool first) {
    refused_because_.clear();
    key_refused_ = false;
    open_socket();
    hello_version_ = wire::version;
    const auto say_hello = [&] {
        hello_number_ = next_number();
        send_frame(*socket_,
                   wire::encode_hello(hello_number_, session_.name,
                                      static_cast<std::uint32_t>(session_.heartbeat.count()), hello_version_));
    };
    say_hello();
    while (!closed_.load() && Clock::now() < deadline) {
        std::vector<::zmq::pollitem_t> items{{socket_->handle(), 0, ZMQ_POLLIN, 0},
                                             {monitor_->handle(), 0, ZMQ_POLLIN, 0},
                                             {nullptr, queue_.wake_fd(), ZMQ_POLLIN, 0}};
        ::zmq::poll(items, std::min(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                                    std::chrono::milliseconds(100)));
        if (items[2].revents & ZMQ_POLLIN) queue_.clear_wake();
        if (items[1].revents & ZMQ_POLLIN) watch_handshake();
        if (!refused_because_.empty() && first) return false;
        drain_outgoing();
        ::zmq::message_t message;
        while (socket_->recv(message, ::zmq::recv_flags::dontwait)) {
            const std::span bytes(static_cast<const std::byte*>(message.data()), message.size());
            try {
                const wire::Frame frame = wire::Frame::parse(bytes);
                if (frame.command() == Command::welcome) {
                    const wire::Welcome welcome = wire::read_welcome(frame);
                    if (welcome.request != hello_number_) continue;
                    welcomed(welcome);
                    return true;
                }
                if (frame.command() == Command::error) {
                    const wire::ErrorFrame error = wire::read_error(frame);
                    if (error.code == wire::ErrorCode::unsupported_version &&
                        hello_version_ > wire::version_of(Command::manage)) {
                        // A broker of version 2 serves everything but batches: docs/zmq-protocol.md §9.
                        hello_version_ = wire::version_of(Command::manage);
                        say_hello();
                        continue;
                    }
                    if (error.code == wire::ErrorCode::unsupported_version) {
                        refused_because_ = "acemq: " + where() + " does not speak this client's protocol version " +
                                           std::to_string(hello_version_) + ": " +
                                           std::string(without_prefix(error.text)) +
                                           "; upgrade the broker, or use a client of the broker's version";
                        return false;
                    }
                }
            } catch (const wire::ProtocolError& error) {
                log(LogLevel::warning, "zmq",
                    "zmq transport: an unreadable frame from " + where() + ": " + error.what());
            }
        }
    }
    return false;
}

void ZmqTransport::welcomed(const wire::Welcome& welcome) {
    broker_heartbeat_ = std::chrono::milliseconds(std::max<std::uint32_t>(welcome.heartbeat_millis, 1));
    max_frame_bytes_.store(welcome.max_frame_bytes);
    broker_takes_arguments_ = welcome.consumer_arguments;
    broker_batches_ = hello_version_ >= wire::version_of(Command::batch);
    outbox_ = wire::Batch(welcome.max_frame_bytes);
    named_in_process_ = inproc::detail::broker_in_errors(welcome.broker_name);
    named_here_ = "the zmq broker " + inproc::detail::in_quotes(welcome.broker_name) + " at " + redacted_url(url_);
    generation_.store(generations_.next());
    last_heard_ = last_sent_ = Clock::now();
    replay();
    ready_.store(true);
}

}  // namespace acemq::zmq
