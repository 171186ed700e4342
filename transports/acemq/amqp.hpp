// RabbitMQ over AMQP 0-9-1, through rabbitmq-c. Registered for the URL schemes `amqp` and
// `amqps`, so `acemq::connect("amqp://127.0.0.1:5672/")` needs nothing from this header;
// include it to give credentials, TLS settings or recovery options apart from the URL:
//
//   auto transport = acemq::amqp::open("amqps://mq.internal:5671/orders", {
//       .credentials = acemq::amqp::Credentials::from_environment("MQ_USER", "MQ_PASSWORD"),
//       .tls = acemq::amqp::Tls{}.ca_file("/etc/mq/ca.pem").client_certificate("/etc/mq/me.pem", "/etc/mq/me.key"),
//       .session = {.name = "payments@pod-1"},
//   });
//   acemq::Bus bus = acemq::connect(transport, {.origin = "payments@pod-1"});
//
// URL: amqp[s]://[user[:password]@]host[:port][/vhost], port 5672 (5671 for amqps), vhost
// "/" when the path is empty; percent-escapes are decoded ("%2f" is "/"). No query
// parameters: settings go in Options, where a misspelt one does not compile.
//
// What the transport guarantees: publisher confirms always on (publish waits for its
// confirm; publish_batch keeps up to max_outstanding_publishes in flight); mandatory
// returns reported as unroutable; a nack or a lost connection reported as not confirmed,
// never as sent; while the broker blocks the connection (a resource alarm) publishes are
// refused at once. What rabbitmq-c cannot encode is refused before anything is written, not
// confirmed with Unconfirmed::too_large and a reason naming the field, its size and the
// limit: a short string over 255 bytes (exchange, routing key, content type, message id,
// reply-to, a header name), headers whose content header passes the connection's frame_max
// (131072) less 20 bytes, tables nested past 64 levels; the connection is never the price.
// A delivery whose headers nest past 64 levels is handed on unread, with empty headers and
// decode_failure saying why (the engine parks it). A lost connection is re-established with
// backoff (SessionOptions, <acemq/session.hpp>: 1 s doubling to 30 s), the topology this transport declared is declared again and
// subscriptions consume again with their tags; deliveries handed out before the loss are
// returned by the broker and settling them does nothing.
//
// Threads: every member is thread-safe. One I/O thread per transport looks after the
// connection; calls hand it work and wait for the answer. A single publish, or the ack or
// nack of a pulled delivery, finding the connection free does its own I/O instead (a publish
// then reads its own confirm), which saves two thread wake-ups per message. The settlements
// of a subscription's deliveries wait for the I/O thread instead, which a lone one wakes at
// once (no timer): it writes all that wait on the subscription's channel in as few frames as
// AMQP allows, one basic.ack (or basic.nack) with `multiple` for each run of one outcome at
// the bottom of the channel's unsettled deliveries, one frame each above a delivery still
// unsettled (never a `multiple` over it). A DeliverFn runs on the I/O thread or on a thread
// inside publish(); either way it must only hand the delivery on.
// on_event runs on either kind of thread too. Settle every Delivery before the transport and
// its subscriptions are destroyed (settling one after a close is fine: it does nothing).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/management.hpp>
#include <acemq/session.hpp>
#include <acemq/transport.hpp>

namespace acemq::amqp {

// Where the user name and password come from. Never printed, logged or put in an error:
// operator<< says where they come from, not what they are.
class Credentials {
public:
    static Credentials plain(std::string user, std::string password);
    // Read from the two environment variables at each connect.
    static Credentials from_environment(std::string user_variable, std::string password_variable);
    // Read at each connect (so a rotated secret is picked up on reconnect): the user name on
    // the first line, the password on the second.
    static Credentials from_file(std::filesystem::path file);

    struct Resolved {
        std::string user;
        std::string password;
    };
    // InvalidArgument naming the variable or file (never a value) when it cannot be read.
    Resolved resolve() const;

    friend std::ostream& operator<<(std::ostream& out, const Credentials& credentials);

private:
    enum class Source { plain, environment, file };
    Credentials(Source source, std::string first, std::string second);
    Source source_;
    std::string first_;
    std::string second_;
};

// TLS for amqps:// URLs, at least TLS 1.2. The broker is verified (certificate chain and
// host name) against the system's trust store unless ca_file names another, which then
// replaces it.
class Tls {
public:
    Tls& ca_file(std::filesystem::path file);
    Tls& client_certificate(std::filesystem::path certificate, std::filesystem::path key);
    // The name the broker's certificate must carry, when it is not the URL's host (e.g. the
    // URL names an IP address or a load balancer).
    Tls& server_name(std::string name);

    // Encrypts without checking who answers: anyone on the path can read and change the
    // traffic. For a laboratory, never for production.
    static Tls without_verification_insecure();

    const std::optional<std::filesystem::path>& ca() const noexcept { return ca_; }
    const std::optional<std::filesystem::path>& certificate() const noexcept { return certificate_; }
    const std::optional<std::filesystem::path>& key() const noexcept { return key_; }
    const std::string& expected_server_name() const noexcept { return server_name_; }
    bool verifies() const noexcept { return verify_; }

private:
    std::optional<std::filesystem::path> ca_;
    std::optional<std::filesystem::path> certificate_;
    std::optional<std::filesystem::path> key_;
    std::string server_name_;
    bool verify_ = true;
};

struct Options {
    // Default: the URL's user:password, else guest/guest.
    std::optional<Credentials> credentials{};
    // Only with amqps:// (InvalidArgument with amqp://). Default for amqps: verify against
    // the system trust store.
    std::optional<Tls> tls{};
    // Timeouts, the confirm window, heartbeats (whole seconds, as AMQP negotiates them; 0
    // for none), recovery, the connection's name in the management UI and on_event.
    SessionOptions session{};
};

// Connects (once, with connect_timeout; recovery applies only to a connection that was up)
// and returns the transport. Throws InvalidArgument for a bad URL or contradicting options,
// acemq::ConnectionError (naming the host and port, never the credentials) when the broker
// cannot be reached or refuses the login; a lost connection later is one too.
std::shared_ptr<Transport> open(std::string_view url, Options options = {});

// What the connection is doing now, beyond what check_health asks the broker:
//  - connected: false while it is down and recovering, and once closed;
//  - blocked: the broker blocks the connection (a resource alarm; publishes are refused at
//    once, as paused), with the broker's reason; a new connection starts unblocked;
//  - stopped_queues: queues whose subscriptions deliver nothing now: the broker cancelled
//    them (their queue was deleted), or consuming again after a reconnect has failed so far
//    (retried every second); also listed in Health::stopped_reading.
struct ConnectionState {
    bool connected = false;
    bool blocked = false;
    std::string blocked_reason;
    std::vector<std::string> stopped_queues;
};
// InvalidArgument when `transport` is not one amqp::open (or connect("amqp://...")) made.
ConnectionState state(const Transport& transport);

// What the transport open returns says to check_health and describe:
//  - check_health(timeout): asks the broker whether a queue that nobody uses exists (creates
//    nothing), within `timeout`. up when it answers; up with a note when the broker blocks
//    the connection (no round trip then); degraded when some subscriptions have stopped
//    reading (ConnectionState::stopped_queues, also in Health::stopped_reading); down when it
//    does not answer ("the broker did not answer: ..."), the connection is down and
//    recovering, or it was closed ("the connection has been closed").
//  - describe(): "amqp", "rabbitmq", the URL without user or password; capabilities
//    "confirms", "quorum-queues", "blocked-connections", and "tls" for amqps://;
//    max_properties_bytes from the negotiated frame_max (less 20 bytes of framing).

// Management (<acemq/management.hpp>) of the RabbitMQ at `url` through its management HTTP API
// (the rabbitmq_management plugin), with the URL's credentials and vhost: the API at
// ManagementOptions::http_url, else http://HOST:15672; the listings are of the URL's vhost.
// Where RabbitMQ differs from the embedded broker:
//  - the counts (a queue's ready, unacked, consumers and bytes, a session's consumers and
//    unacked) are RabbitMQ's statistics as of its last sample, every 5 s by default: a queue
//    declared or a consumer come since shows 0 until the next one; purge returns the ready
//    count sampled before it (the API does not say how many it dropped);
//  - browse gets the messages and requeues them, in order, marked redelivered; a quorum queue
//    has them back a moment after the call returns, with x-delivery-count one higher, so a
//    quorum queue with a delivery limit (x-delivery-limit, or a policy's) is not browsed
//    (ManagementError unsupported), nor is a stream queue;
//  - delete_queue refuses a consumed classic queue through RabbitMQ's if-unused; a quorum or
//    stream queue (RabbitMQ has no if-unused for them) by its sampled consumer count only;
//  - oldest_age comes only from a head message carrying an AMQP timestamp, which this
//    transport does not set; sessions are the vhost's AMQP connections, each named by the
//    connection_name its client gave (SessionOptions::name);
//  - backup is unsupported: export the definitions and back up the node as RabbitMQ's backup
//    guide says.
// Throws ConnectionError naming the API's address when it does not answer (the plugin is off,
// or http_url is wrong), ManagementError access_refused naming the user (never the password)
// when RabbitMQ refuses the credentials; both at the open too, which asks for the vhost.
std::unique_ptr<Management> manage(std::string_view url, ManagementOptions options = {});

}  // namespace acemq::amqp
