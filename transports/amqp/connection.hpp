// One logged-in rabbitmq-c connection, owned by the transport's I/O thread: a thin RAII
// wrapper (closing and freeing in the destructor) plus the checks that turn rabbitmq-c's
// status codes and replies into exceptions. The one place in the transport that calls
// rabbitmq-c: each method is one AMQP operation, and a failure leaves it as ChannelClosed or
// ConnectionLost, never as a status code. Not thread-safe; internal to the transport.
#pragma once

#include <amqp.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <acemq/amqp.hpp>
#include <acemq/topology.hpp>
#include <acemq/transport.hpp>
#include "amqp/address.hpp"
#include "amqp/open_deliveries.hpp"
#include "session/settings.hpp"

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
    Connection(const Address& address, const Credentials::Resolved& credentials, const std::optional<Tls>& tls,
               const session::Settings& session);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    int socket_fd() const noexcept;
    // The largest frame, as negotiated at login.
    std::size_t frame_max() const noexcept;

    void open_channel(amqp_channel_t channel);
    // Best effort: the channel is of no further use whatever the broker answers.
    void close_channel(amqp_channel_t channel) noexcept;
    // Answers a channel.close or connection.close the broker sent on its own.
    void acknowledge_channel_close(amqp_channel_t channel) noexcept;
    void acknowledge_connection_close() noexcept;

    // Tells the broker we are leaving, waiting at most the call timeout.
    void close() noexcept;

    // ---- reading what the broker sends ------------------------------------------------
    // True when input already read from the socket waits inside rabbitmq-c, where a poll on
    // the socket does not see it.
    bool has_buffered_input() const noexcept;
    // The next frame that is already here, without waiting; nullopt when there is none. What
    // it points to stays valid until release_buffers().
    std::optional<amqp_frame_t> next_frame();
    void release_buffers() noexcept;

    // ---- publishing ---------------------------------------------------------------------
    void select_confirms(amqp_channel_t channel);
    // Writes the message; the caller has checked it encodes (encoding_refusal).
    void publish(amqp_channel_t channel, const OutboundMessage& message);

    // ---- consuming and settling -----------------------------------------------------------
    // `what` names the subscription for the error ("consume from queue \"orders\"").
    void set_prefetch(amqp_channel_t channel, std::uint16_t prefetch, std::string_view what);
    void consume(amqp_channel_t channel, const std::string& queue, const ConsumeSpec& spec, std::string_view what);
    void cancel(amqp_channel_t channel, const std::string& consumer_tag);
    // basic.ack, or basic.nack with requeue or without.
    void settle(amqp_channel_t channel, const SettlementFrame& frame);
    // A delivery that arrived after its consumer was cancelled: back to its queue.
    void give_back(amqp_channel_t channel, std::uint64_t delivery_tag);

    struct Pulled {
        InboundMessage message;
        std::uint64_t delivery_tag = 0;
    };
    // basic.get and the message's content; nullopt when the queue is empty. A refusal
    // reopens the channel.
    std::optional<Pulled> get(amqp_channel_t channel, const std::string& queue);

    // ---- topology (a refusal reopens the channel before ChannelClosed) ------------------
    void declare_exchange(amqp_channel_t channel, const ExchangeDeclaration& exchange);
    void declare_queue(amqp_channel_t channel, const QueueDeclaration& queue);
    void bind_queue(amqp_channel_t channel, const BindingDeclaration& binding);
    void delete_queue(amqp_channel_t channel, const std::string& queue);
    // The queue's message count, or nullopt when it does not exist; creates nothing.
    std::optional<std::uint64_t> message_count(amqp_channel_t channel, const std::string& queue);

private:
    // Throws ChannelClosed or ConnectionLost for a reply that is not a normal one; `what`
    // says what was being done ("declare queue \"orders\"").
    void check(amqp_rpc_reply_t reply, std::string_view what, amqp_channel_t channel);
    // The same for a channel that must stay usable: one the broker closed is opened again
    // before ChannelClosed is thrown.
    void check_reopening(amqp_rpc_reply_t reply, std::string_view what, amqp_channel_t channel);
    // ConnectionLost for a negative rabbitmq-c status.
    void check_status(int status, std::string_view what);

    amqp_connection_state_t state_;
    std::string printable_;
    bool open_ = false;
};

}  // namespace acemq::amqp
