// A client's SessionOptions with every default filled in by its transport, the delay
// between attempts to get a lost session back, and the ConnectionEvents it reports.
// Internal.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <acemq/metrics.hpp>
#include <acemq/session.hpp>

namespace acemq::session {

using std::chrono::milliseconds;

// A transport's own defaults for the optional fields of SessionOptions.
struct Defaults {
    milliseconds connect_timeout;
    milliseconds heartbeat;
    milliseconds first_recovery_delay;
    milliseconds max_recovery_delay;
};

struct Settings {
    milliseconds connect_timeout;
    milliseconds call_timeout;
    std::size_t max_outstanding_publishes;
    milliseconds confirm_timeout;
    milliseconds heartbeat;
    bool recover;
    milliseconds first_recovery_delay;
    milliseconds max_recovery_delay;
    std::string name;
    std::function<void(const ConnectionEvent&)> on_event;
};

// InvalidArgument, naming `options_name` (e.g. "amqp::Options"), for a value no transport can use.
Settings settle(const SessionOptions& options, const Defaults& defaults, std::string_view options_name);

// The wait before each attempt to get a lost session back: the first delay, doubling up to
// the most, and the first again once a session is up.
class Backoff {
public:
    Backoff(milliseconds first, milliseconds most) : first_(first), most_(most), next_(first) {}
    milliseconds next() {
        const milliseconds now = next_;
        next_ = std::min(next_ * 2, most_);
        return now;
    }
    void reset() { next_ = first_; }

private:
    milliseconds first_;
    milliseconds most_;
    milliseconds next_;
};

// Tells on_event, the log (under `component`, "zmq" or "amqp"; `who` names the transport
// and its broker) and, once measure() was called, the connection metrics what happened to the
// session. An observer that throws is logged, never lets the session down. Thread-safe.
class Events {
public:
    Events(std::string component, std::string who, std::function<void(const ConnectionEvent&)> on_event);
    void emit(ConnectionEvent::Kind kind, std::string detail, int attempt = 0) const;
    // Reports the session's state, losses, recoveries and outages into `metrics` from now on,
    // labelled transport=`component` (Transport::measure_connection).
    void measure(const std::shared_ptr<Metrics>& metrics);

private:
    struct Measured;  // the state the session is in, and the instruments once bound
    std::string component_;
    std::string who_;
    std::function<void(const ConnectionEvent&)> on_event_;
    std::shared_ptr<Measured> measured_;
};

}  // namespace acemq::session
