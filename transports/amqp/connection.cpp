#include "amqp/connection.hpp"

#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/time.h>

#include <memory>

#include "amqp/wire.hpp"

namespace acemq::amqp {

namespace {

timeval timeval_of(std::chrono::milliseconds duration) {
    return timeval{static_cast<time_t>(duration.count() / 1000),
                   static_cast<suseconds_t>((duration.count() % 1000) * 1000)};
}

std::string library_error(int status) { return amqp_error_string2(status); }

// Sets up TLS on a fresh SSL socket: versions, trust, client certificate, host check.
void configure_tls(amqp_socket_t* socket, const Address& address, const Tls& tls, const std::string& printable) {
    auto refuse = [&](const std::string& why) {
        throw ConnectionError("acemq: cannot set up TLS for " + printable + ": " + why);
    };
    if (amqp_ssl_socket_set_ssl_versions(socket, AMQP_TLSv1_2, AMQP_TLSvLATEST) != AMQP_STATUS_OK)
        refuse("this OpenSSL cannot limit the protocol to TLS 1.2 and newer");
    auto* context = static_cast<SSL_CTX*>(amqp_ssl_socket_get_context(socket));
    if (tls.ca()) {
        // A named CA replaces the system store: a fresh, empty store, then only that file.
        SSL_CTX_set_cert_store(context, X509_STORE_new());
        if (amqp_ssl_socket_set_cacert(socket, tls.ca()->c_str()) != AMQP_STATUS_OK)
            refuse("cannot read the CA file " + tls.ca()->string() + " (is it a PEM certificate?)");
    } else if (SSL_CTX_set_default_verify_paths(context) != 1) {
        refuse("cannot load the system's trust store; name a CA with Tls::ca_file");
    }
    if (tls.certificate() &&
        amqp_ssl_socket_set_key(socket, tls.certificate()->c_str(), tls.key()->c_str()) != AMQP_STATUS_OK)
        refuse("cannot use client certificate " + tls.certificate()->string() + " with key " + tls.key()->string() +
               " (both PEM, and the key must match the certificate)");
    amqp_ssl_socket_set_verify_peer(socket, tls.verifies() ? 1 : 0);
    // The host check is OpenSSL's own, on the context, so a server name different from the
    // host connected to can be asked for.
    amqp_ssl_socket_set_verify_hostname(socket, 0);
    if (tls.verifies()) {
        const std::string& expected = tls.expected_server_name().empty() ? address.host : tls.expected_server_name();
        X509_VERIFY_PARAM* parameters = SSL_CTX_get0_param(context);
        const bool set = X509_VERIFY_PARAM_set1_ip_asc(parameters, expected.c_str()) == 1 ||
                         X509_VERIFY_PARAM_set1_host(parameters, expected.c_str(), expected.size()) == 1;
        if (!set) refuse("cannot ask OpenSSL to check the server name \"" + expected + "\"");
    }
}

}  // namespace

Connection::Connection(const Address& address, const Credentials::Resolved& credentials, const std::optional<Tls>& tls,
                       const session::Settings& session)
    : state_(amqp_new_connection()), printable_(address.printable()) {
    if (state_ == nullptr) throw ConnectionError("acemq: cannot connect to " + printable_ + ": out of memory");
    try {
        amqp_socket_t* socket = address.tls ? amqp_ssl_socket_new(state_) : amqp_tcp_socket_new(state_);
        if (socket == nullptr)
            throw ConnectionError("acemq: cannot connect to " + printable_ + ": cannot make a socket");
        if (address.tls) configure_tls(socket, address, tls.value_or(Tls{}), printable_);
        timeval connect_timeout = timeval_of(session.connect_timeout);
        const int opened = amqp_socket_open_noblock(socket, address.host.c_str(), address.port, &connect_timeout);
        if (opened != AMQP_STATUS_OK) {
            std::string hint = "is the broker running and listening there?";
            // A wrong CA or server name is PEER_VERIFY_FAILED. CONNECTION_FAILED is no verdict
            // on the broker's certificate: the handshake itself failed, typically because the
            // port is a plain AMQP listener or the broker refused this client's certificate.
            if (opened == AMQP_STATUS_SSL_PEER_VERIFY_FAILED || opened == AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED)
                hint =
                    "the broker's certificate was not accepted: check that the CA that signed it is the one "
                    "trusted (Tls::ca_file) and that it names the host (Tls::server_name)";
            else if (opened == AMQP_STATUS_SSL_CONNECTION_FAILED)
                hint =
                    "check that this port is the broker's TLS listener (a plain AMQP port needs an amqp:// "
                    "URL) and, when the broker checks client certificates, that it accepts this one "
                    "(Tls::client_certificate)";
            throw ConnectionError("acemq: cannot connect to " + printable_ + ": " + library_error(opened) + "; " +
                                  hint);
        }
        timeval handshake_timeout = connect_timeout;
        amqp_set_handshake_timeout(state_, &handshake_timeout);
        timeval call_timeout = timeval_of(session.call_timeout);
        amqp_set_rpc_timeout(state_, &call_timeout);

        // Capabilities so that the broker tells us when it blocks us and when it cancels a
        // consumer; rabbitmq-c adds them to its own client properties.
        amqp_table_entry_t capabilities[] = {
            {bytes_of("connection.blocked"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
            {bytes_of("consumer_cancel_notify"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
            {bytes_of("publisher_confirms"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
        };
        const std::string name = session.name.empty() ? "acemq-cpp" : session.name;
        amqp_table_entry_t properties[] = {
            {bytes_of("capabilities"), {AMQP_FIELD_KIND_TABLE, {.table = {3, capabilities}}}},
            {bytes_of("connection_name"), {AMQP_FIELD_KIND_UTF8, {.bytes = bytes_of(name)}}},
        };
        const amqp_table_t client_properties{2, properties};
        const auto heartbeat =
            static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(session.heartbeat).count());
        const amqp_rpc_reply_t login =
            amqp_login_with_properties(state_, address.vhost.c_str(), 0, 131072, heartbeat, &client_properties,
                                       AMQP_SASL_METHOD_PLAIN, credentials.user.c_str(), credentials.password.c_str());
        if (login.reply_type != AMQP_RESPONSE_NORMAL) {
            std::string why;
            std::string hint = "check the credentials and that the user may use this vhost";
            if (login.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && login.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
                const auto* close = static_cast<const amqp_connection_close_t*>(login.reply.decoded);
                why = reply_text(close->reply_code, close->reply_text);
            } else if (login.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION) {
                why = library_error(login.library_error);
                // RabbitMQ answers a wrong password or vhost with connection.close (above);
                // a connection that just ends here is another matter, and "check the
                // credentials" would send the reader the wrong way.
                hint = address.tls ? "the connection ended or stalled before the broker answered the login: the "
                                     "broker may have refused this client's certificate (Tls::client_certificate)"
                                   : "the connection ended or stalled before the broker answered the login: check "
                                     "that this port is the broker's plain AMQP listener (a TLS port needs an "
                                     "amqps:// URL)";
            } else {
                why = "the broker answered the login with something unexpected";
            }
            throw ConnectionError("acemq: cannot log in to " + printable_ + " as user \"" + credentials.user +
                                  "\": " + why + "; " + hint);
        }
        open_ = true;
    } catch (...) {
        amqp_destroy_connection(state_);
        throw;
    }
}

Connection::~Connection() {
    close();
    amqp_destroy_connection(state_);
}

void Connection::close() noexcept {
    if (!open_) return;
    open_ = false;
    // Ignored on purpose: whether the broker answers or not, the connection ends here.
    (void)amqp_connection_close(state_, AMQP_REPLY_SUCCESS);
}

int Connection::socket_fd() const noexcept { return amqp_get_sockfd(state_); }

std::size_t Connection::frame_max() const noexcept { return static_cast<std::size_t>(amqp_get_frame_max(state_)); }

void Connection::check_status(int status, std::string_view what) {
    if (status >= 0) return;
    open_ = false;
    throw ConnectionLost("acemq: cannot " + std::string(what) + " on " + printable_ + ": the connection was lost (" +
                         library_error(status) + ")");
}

void Connection::check(amqp_rpc_reply_t reply, std::string_view what, amqp_channel_t channel) {
    switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL: return;
    case AMQP_RESPONSE_NONE:
        open_ = false;
        throw ConnectionLost("acemq: cannot " + std::string(what) + " on " + printable_ + ": the broker sent no reply");
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        open_ = false;
        throw ConnectionLost("acemq: cannot " + std::string(what) + " on " + printable_ +
                             ": the connection was lost (" + library_error(reply.library_error) + ")");
    case AMQP_RESPONSE_SERVER_EXCEPTION:
        if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
            const auto* close = static_cast<const amqp_channel_close_t*>(reply.reply.decoded);
            std::string text = reply_text(close->reply_code, close->reply_text);
            acknowledge_channel_close(channel);
            throw ChannelClosed("acemq: cannot " + std::string(what) + ": " + text, close->reply_code);
        }
        if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
            const auto* close = static_cast<const amqp_connection_close_t*>(reply.reply.decoded);
            std::string text = reply_text(close->reply_code, close->reply_text);
            acknowledge_connection_close();
            throw ConnectionLost("acemq: cannot " + std::string(what) + ": the broker closed the connection (" + text +
                                 ")");
        }
        open_ = false;
        throw ConnectionLost("acemq: cannot " + std::string(what) + ": the broker answered with an unexpected method");
    }
}

void Connection::check_reopening(amqp_rpc_reply_t reply, std::string_view what, amqp_channel_t channel) {
    try {
        check(reply, what, channel);
    } catch (const ChannelClosed&) {
        open_channel(channel);
        throw;
    }
}

void Connection::open_channel(amqp_channel_t channel) {
    amqp_channel_open(state_, channel);
    check(amqp_get_rpc_reply(state_), "open channel " + std::to_string(channel), channel);
}

bool Connection::has_buffered_input() const noexcept {
    return amqp_frames_enqueued(state_) || amqp_data_in_buffer(state_);
}

std::optional<amqp_frame_t> Connection::next_frame() {
    amqp_frame_t frame;
    timeval no_wait{0, 0};
    const int status = amqp_simple_wait_frame_noblock(state_, &frame, &no_wait);
    if (status == AMQP_STATUS_TIMEOUT) return std::nullopt;
    check_status(status, "read from the broker");
    return frame;
}

void Connection::release_buffers() noexcept { amqp_maybe_release_buffers(state_); }

void Connection::select_confirms(amqp_channel_t channel) {
    amqp_confirm_select(state_, channel);
    check(amqp_get_rpc_reply(state_), "turn on publisher confirms", channel);
}

void Connection::publish(amqp_channel_t channel, const OutboundMessage& message) {
    // The table the entries point into, unpacked for rabbitmq-c, lives until the frame is sent.
    const Headers table = message.headers.table();
    TableView headers(table);
    amqp_basic_properties_t properties{};
    properties._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_HEADERS_FLAG;
    properties.content_type = bytes_of(message.content_type);
    properties.delivery_mode = message.persistent ? 2 : 1;
    properties.headers = headers.get();
    if (!message.message_id.empty()) {
        properties._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
        properties.message_id = bytes_of(message.message_id);
    }
    if (!message.reply_to.empty()) {
        properties._flags |= AMQP_BASIC_REPLY_TO_FLAG;
        properties.reply_to = bytes_of(message.reply_to);
    }
    const int status = amqp_basic_publish(
        state_, channel, bytes_of(message.exchange), bytes_of(message.routing_key), message.mandatory ? 1 : 0, 0,
        &properties, amqp_bytes_t{message.body.size(), const_cast<std::byte*>(message.body.data())});
    check_status(status, "publish to exchange " + in_quotes(message.exchange));
}

void Connection::set_prefetch(amqp_channel_t channel, std::uint16_t prefetch, std::string_view what) {
    amqp_basic_qos(state_, channel, 0, prefetch, 0);
    check(amqp_get_rpc_reply(state_), what, channel);
}

void Connection::consume(amqp_channel_t channel, const std::string& queue, const ConsumeSpec& spec,
                         std::string_view what) {
    TableView arguments(spec.arguments);
    amqp_basic_consume(state_, channel, bytes_of(queue), bytes_of(spec.tag), 0, 0, 0, arguments.get());
    check(amqp_get_rpc_reply(state_), what, channel);
}

void Connection::cancel(amqp_channel_t channel, const std::string& consumer_tag) {
    amqp_basic_cancel(state_, channel, bytes_of(consumer_tag));
    check(amqp_get_rpc_reply(state_), "cancel consumer " + consumer_tag, channel);
}

void Connection::settle(amqp_channel_t channel, const SettlementFrame& frame) {
    const amqp_boolean_t multiple = frame.multiple ? 1 : 0;
    if (frame.outcome == Outcome::ack)
        check_status(amqp_basic_ack(state_, channel, frame.broker_tag, multiple), "ack a delivery");
    else
        check_status(amqp_basic_nack(state_, channel, frame.broker_tag, multiple, frame.outcome == Outcome::requeue),
                     "nack a delivery");
}

void Connection::give_back(amqp_channel_t channel, std::uint64_t delivery_tag) {
    check_status(amqp_basic_nack(state_, channel, delivery_tag, 0, 1), "give back a delivery");
}

std::optional<Connection::Pulled> Connection::get(amqp_channel_t channel, const std::string& queue) {
    const amqp_rpc_reply_t reply = amqp_basic_get(state_, channel, bytes_of(queue), 0);
    check_reopening(reply, "pull from queue " + in_quotes(queue), channel);
    if (reply.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) return std::nullopt;
    const auto* ok = static_cast<const amqp_basic_get_ok_t*>(reply.reply.decoded);
    InboundParts parts;
    parts.exchange = string_of(ok->exchange);
    parts.routing_key = string_of(ok->routing_key);
    parts.redelivered = ok->redelivered != 0;
    const std::uint64_t delivery_tag = ok->delivery_tag;
    amqp_message_t message;
    check(amqp_read_message(state_, channel, &message, 0), "read a pulled message", channel);
    read_properties(parts, message.properties);
    const auto* body = static_cast<const std::byte*>(message.body.bytes);
    parts.body.assign(body, body + message.body.len);
    amqp_destroy_message(&message);
    return Pulled{InboundMessage(std::move(parts)), delivery_tag};
}

void Connection::declare_exchange(amqp_channel_t channel, const ExchangeDeclaration& exchange) {
    TableView arguments(exchange.arguments);
    amqp_exchange_declare(state_, channel, bytes_of(exchange.name), bytes_of(to_string(exchange.kind)), 0,
                          exchange.durable ? 1 : 0, exchange.auto_delete ? 1 : 0, 0, arguments.get());
    check_reopening(amqp_get_rpc_reply(state_), "declare exchange " + in_quotes(exchange.name), channel);
}

void Connection::declare_queue(amqp_channel_t channel, const QueueDeclaration& queue) {
    TableView arguments(queue.arguments);
    amqp_queue_declare(state_, channel, bytes_of(queue.name), 0, queue.durable ? 1 : 0, queue.exclusive ? 1 : 0,
                       queue.auto_delete ? 1 : 0, arguments.get());
    check_reopening(amqp_get_rpc_reply(state_), "declare queue " + in_quotes(queue.name), channel);
}

void Connection::bind_queue(amqp_channel_t channel, const BindingDeclaration& binding) {
    TableView arguments(binding.arguments);
    amqp_queue_bind(state_, channel, bytes_of(binding.queue), bytes_of(binding.exchange), bytes_of(binding.routing_key),
                    arguments.get());
    check_reopening(amqp_get_rpc_reply(state_),
                    "bind queue " + in_quotes(binding.queue) + " to exchange " + in_quotes(binding.exchange) + " on " +
                        in_quotes(binding.routing_key),
                    channel);
}

void Connection::delete_queue(amqp_channel_t channel, const std::string& queue) {
    amqp_queue_delete(state_, channel, bytes_of(queue), 0, 0);
    check_reopening(amqp_get_rpc_reply(state_), "delete queue " + in_quotes(queue), channel);
}

std::optional<std::uint64_t> Connection::message_count(amqp_channel_t channel, const std::string& queue) {
    const amqp_queue_declare_ok_t* ok =
        amqp_queue_declare(state_, channel, bytes_of(queue), 1, 0, 0, 0, amqp_empty_table);
    try {
        check_reopening(amqp_get_rpc_reply(state_), "ask about queue " + in_quotes(queue), channel);
    } catch (const ChannelClosed& closed) {
        if (closed.code() == AMQP_NOT_FOUND) return std::nullopt;
        throw;
    }
    return ok->message_count;
}

void Connection::close_channel(amqp_channel_t channel) noexcept {
    // Ignored on purpose: the channel is given up either way, and a lost connection is
    // noticed by the next read.
    (void)amqp_channel_close(state_, channel, AMQP_REPLY_SUCCESS);
}

void Connection::acknowledge_channel_close(amqp_channel_t channel) noexcept {
    amqp_channel_close_ok_t close_ok{};
    (void)amqp_send_method(state_, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &close_ok);
}

void Connection::acknowledge_connection_close() noexcept {
    amqp_connection_close_ok_t close_ok{};
    (void)amqp_send_method(state_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &close_ok);
    open_ = false;
}

}  // namespace acemq::amqp
