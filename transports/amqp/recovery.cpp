// Connecting, losing the connection and getting it back: a new connection declares the
// remembered topology again and consumes again for every live subscription.

#include <algorithm>

#include "amqp/channels.hpp"
#include "amqp/transport_impl.hpp"

namespace acemq::amqp {

// One attempt at a new connection after a loss; true when it is up again.
bool AmqpTransport::Impl::recover(int attempt) {
    events_.emit(ConnectionEvent::Kind::retrying, address_.printable(), attempt);
    try {
        connect_now();
        topology_.replay(*connection_);
        resume_subscriptions();
        connected_.store(true);
        events_.emit(ConnectionEvent::Kind::recovered, address_.printable(), attempt);
        return true;
    } catch (const Error& error) {
        drop_connection(error.what(), false);
        next_attempt_ = Clock::now() + backoff_.next();
        return false;
    }
}

void AmqpTransport::Impl::connect_now() {
    Credentials::Resolved credentials;
    if (options_.credentials) {
        credentials = options_.credentials->resolve();
    } else {
        credentials.user = address_.login_user();
        credentials.password = address_.login_password();
    }
    auto connection = std::make_unique<Connection>(address_, credentials, options_.tls, session_);
    open_publish_channel(*connection);
    connection->open_channel(admin_channel);
    connection->open_channel(pull_channel);
    frame_max_.store(connection->frame_max());
    connection_ = std::move(connection);
    generation_ = generations_.next();
    subscriptions_.on_new_connection();
    set_blocked(BlockedState{});
}

void AmqpTransport::Impl::open_publish_channel(Connection& connection) {
    connection.open_channel(publish_channel);
    connection.select_confirms(publish_channel);
    confirms_.restart();
}

// Retried a second later for those that could not consume again.
void AmqpTransport::Impl::resume_subscriptions() {
    subscriptions_.resume(*connection_);
    next_resume_ = Clock::now() + std::chrono::seconds(1);
    note_stopped_queues();
}

// What health reports as "stopped reading", kept where callers can read it.
void AmqpTransport::Impl::note_stopped_queues() {
    std::vector<std::string> stopped = subscriptions_.stopped_queues();
    std::lock_guard lock(state_mutex_);
    stopped_queues_ = std::move(stopped);
}

void AmqpTransport::Impl::drop_connection(const std::string& why, bool was_up) {
    connected_.store(false);
    // A block belongs to the connection that got it: once that connection is gone,
    // publishes wait for the next one (and fail as lost, not as paused) and health
    // says down rather than "up, blocked". A new connection starts unblocked.
    set_blocked(BlockedState{});
    incoming_.clear();
    subscriptions_.release_all();
    confirms_.fail_all("the connection was lost before the broker confirmed it (" + why + ")");
    connection_.reset();
    if (was_up) {
        backoff_.reset();
        next_attempt_ = Clock::now() + backoff_.next();
        events_.emit(ConnectionEvent::Kind::lost, why);
    }
    commands_.wake();  // a publisher may have found the loss: the I/O thread recovers
}

}  // namespace acemq::amqp
