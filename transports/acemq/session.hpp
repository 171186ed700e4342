// What the two client transports that keep a session to a broker across its losses share:
// the ZeroMQ client (<acemq/zmq.hpp>) and the AMQP one (<acemq/amqp.hpp>). Their Options
// hold a SessionOptions under `.session`; their on_event is told ConnectionEvents; a broker
// that cannot be reached or a session that is gone is an acemq::ConnectionError
// (<acemq/error.hpp>) from either.
//
//   auto transport = acemq::zmq::open("zmq+ipc:///run/edge/broker.sock", {
//       .session = {.heartbeat = std::chrono::milliseconds(200), .name = "sensor@pod-1"},
//   });
//
// Opening is one shape for every transport, the embedded one included:
//   std::shared_ptr<acemq::Transport> acemq::NAME::open(std::string_view url, Options options = {});
// with NAME inproc, zmq or amqp and Options that namespace's (inproc's is ConnectionOptions).
// acemq::connect(url) opens the same transports with default options.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace acemq {

// What happens to the session, for logs and health: lost (with why), retrying (the attempt
// about to be made), recovered, blocked (with the broker's reason; AMQP only), unblocked,
// gave_up (recovery off, or closed while recovering).
struct ConnectionEvent {
    enum class Kind { lost, retrying, recovered, blocked, unblocked, gave_up };
    Kind kind;
    std::string detail;
    int attempt = 0;
};
// "lost", "retrying", "recovered", "blocked", "unblocked", "gave-up".
std::string_view to_string(ConnectionEvent::Kind kind);

// Every duration in milliseconds. Where the two transports' defaults differ the field is
// optional, and nullopt takes the transport's own default, named beside it.
struct SessionOptions {
    // open() waits this long for the broker (amqp 30 s, zmq 10 s); recovery applies only to
    // a session that was up.
    std::optional<std::chrono::milliseconds> connect_timeout{};
    // A call that needs the broker's answer (declare, consume, pull, depth, ...) fails after this long.
    std::chrono::milliseconds call_timeout{30'000};
    // Publishes waiting for a confirm at most; a publish that finds the window full waits up
    // to confirm_timeout for a slot, then fails with "the broker is not keeping up". One with
    // no confirm after confirm_timeout is lost (it may or may not have arrived).
    std::size_t max_outstanding_publishes = 1000;
    std::chrono::milliseconds confirm_timeout{10'000};
    // How often this side beats (amqp 30 s, in whole seconds as AMQP negotiates it, 0 for
    // none; zmq 1 s).
    std::optional<std::chrono::milliseconds> heartbeat{};
    // A lost session is re-established with a delay doubling from the first to the most
    // (amqp 1 s to 30 s, zmq 100 ms to 5 s).
    bool recover = true;
    std::optional<std::chrono::milliseconds> first_recovery_delay{};
    std::optional<std::chrono::milliseconds> max_recovery_delay{};
    // Shown to the broker's operator: RabbitMQ's management UI, the zmq broker's log.
    std::string name{};
    // Called on the transport's I/O thread (AMQP: or on a publishing thread that found the
    // connection lost); keep it short and do not call the transport from it.
    std::function<void(const ConnectionEvent&)> on_event{};
};

}  // namespace acemq
