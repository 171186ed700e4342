// One logged-in rabbitmq-c connection, owned by the transport's I/O thread: a thin RAII
// wrapper (closing and freeing in the destructor) plus the checks that turn rabbitmq-c's
// status codes and replies into exceptions. Not thread-safe; internal to the transport.
#pragma once

#include <amqp.h>

#include <chrono>
#include <string>
#include <string_view>

#include "amqp/address.hpp"
#include <acemq/amqp.hpp>

namespace acemq::amqp {

// The broker closed a channel (e.g. 404 NOT_FOUND, 406 PRECONDITION_FAILED); the
// connection is still good and the channel has been acknowledged closed.
class ChannelClosed : public Error {
public:
    ChannelClosed(const std::string& what, int code) : Error(what), code_(code) {}
    int code() const noexcept { return code_; }  // e.g. 404 (NOT_FOUND)

private:
    int code_;
};

// The connection is gone (socket error, missed heartbeats, a connection.close or a call
// that timed out): nothing more can be done on it.
class ConnectionLost : public ConnectionError {
public:
    using ConnectionError::ConnectionError;
};

class Connection {
public:
    // Opens the socket (TLS when the address says so), logs in and sets the call timeout.
    // ConnectionError naming the address (never the credentials) on failure.
    Connection(const Address& address, const Credentials::Resolved& credentials, const Options& options);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    amqp_connection_state_t get() const noexcept { return state_; }
    int socket_fd() const noexcept { return amqp_get_sockfd(state_); }

    // Throws ChannelClosed or ConnectionLost for a reply that is not a normal one; `what`
    // says what was being done ("declare queue \"orders\"").
    void check(amqp_rpc_reply_t reply, std::string_view what, amqp_channel_t channel);
    // The same for a channel that must stay usable: one the broker closed is opened again
    // before ChannelClosed is thrown.
    void check_reopening(amqp_rpc_reply_t reply, std::string_view what, amqp_channel_t channel);
    // ConnectionLost for a negative rabbitmq-c status.
    void check_status(int status, std::string_view what);

    void open_channel(amqp_channel_t channel);
    // Best effort: the channel is of no further use whatever the broker answers.
    void close_channel(amqp_channel_t channel) noexcept;
    // Answers a channel.close or connection.close the broker sent on its own.
    void acknowledge_channel_close(amqp_channel_t channel) noexcept;
    void acknowledge_connection_close() noexcept;

    // Tells the broker we are leaving, waiting at most the call timeout.
    void close() noexcept;

private:
    amqp_connection_state_t state_;
    std::string printable_;
    bool open_ = false;
};

}  // namespace acemq::amqp
