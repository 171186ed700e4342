// The embedded broker across processes, over ZeroMQ: a server that hosts an inproc::Broker on
// tcp:// and ipc:// endpoints (the `acemq-broker` program is one), and the client transport
// that reaches it, registered for the URL schemes `zmq+tcp` and `zmq+ipc`:
//
//   auto broker = acemq::inproc::broker("edge");
//   auto server = acemq::zmq::serve(broker, {"ipc:///run/edge/broker.sock"});   // in the app
//   acemq::Bus bus = acemq::connect("zmq+ipc:///run/edge/broker.sock");          // in a helper
//
// URLs: zmq+tcp://HOST:PORT and zmq+ipc:///PATH. No query parameters: settings (CurveZMQ
// keys among them) go in Options, where a misspelt one does not compile.
//
// What the pair guarantees, on top of the broker's own semantics (<acemq/inproc.hpp>):
//  - every publish is confirmed by the broker (routed, unroutable or refused); one that
//    reaches no confirm — the broker went away, the session was lost — is reported not
//    confirmed (Unconfirmed::lost: it may or may not have arrived), never as sent;
//  - a publish whose frame is larger than the broker's limit (ServerOptions::max_frame_bytes,
//    learnt at the handshake) is refused before it is sent (Unconfirmed::too_large): nothing
//    is written, and the session and the other publishes go on;
//  - consume credit is the prefetch: the broker hands a consumer at most `prefetch`
//    unsettled deliveries, as RabbitMQ does;
//  - heartbeats both ways (a beat a second, three missed and the peer is dead): a client
//    that vanishes has its unsettled deliveries returned to their queues, redelivered; a
//    broker that vanishes is reconnected with backoff (SessionOptions, <acemq/session.hpp>:
//    100 ms doubling to 5 s), the topology this transport declared
//    is declared again and subscriptions consume again; deliveries handed out before the
//    loss are returned by the broker, and settling them does nothing;
//  - frames that break the protocol (docs/zmq-protocol.md) are answered with an error frame;
//    the broker keeps serving and loses nothing it holds;
//  - with CurveZMQ keys the traffic is encrypted and the broker admits only the client
//    public keys it was given (its ZAP handler refuses every other key).
//  - durability is the broker's: what a confirm and an ack promise, with a data file
//    (`acemq-broker --data FILE`) and without, is docs/durability.md §1.
//
// Threads: every member of Server and of the transport is thread-safe. The server runs one
// I/O thread of its own; the transport runs one per connection. A DeliverFn runs on the
// transport's I/O thread and must only hand the delivery on.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/inproc.hpp>
#include <acemq/management.hpp>
#include <acemq/session.hpp>
#include <acemq/transport.hpp>

namespace acemq::zmq {

// ---- CurveZMQ keys --------------------------------------------------------------------
// Keys live in files as ZeroMQ writes them, Z85 text of 40 characters: NAME.pub holds the
// public key, NAME.key the secret key (mode 0600; a secret key file others can read is
// refused). Keys are never printed or logged.
struct KeyFiles {
    std::filesystem::path public_key;
    std::filesystem::path secret_key;
};
// Makes a new key pair and writes `base`.pub and `base`.key (0600). InvalidArgument when
// either exists (never overwritten) or cannot be written.
KeyFiles generate_key_pair(const std::filesystem::path& base);

struct ServerCurve {
    std::filesystem::path secret_key;                        // the broker's own (its .key file)
    std::vector<std::filesystem::path> allowed_client_keys;  // the clients' .pub files; at least one
};

struct ClientCurve {
    std::filesystem::path server_public_key;  // the broker's .pub file
    std::filesystem::path secret_key;         // this client's .key file (its .pub must be allowed)
};

// ---- The server -----------------------------------------------------------------------
struct ServerOptions {
    // A beat at least this often to every client; one that sends nothing for
    // `missed_heartbeats` times its own interval is taken as gone.
    std::chrono::milliseconds heartbeat{1'000};
    int missed_heartbeats = 3;
    // A frame larger than this is refused. Clients learn it from the welcome and refuse a
    // publish whose frame is larger before sending it (too_large: nothing written). One that
    // arrives anyway, up to twice this size, is read, logged (a warning naming its sender and
    // its size) and answered (a publish with a confirm not confirmed, too_large; anything else
    // with an error frame), and the session goes on; libzmq drops the connection of a peer
    // that sends a larger one without allocating it, which the broker logs (as it logs every
    // connection that drops while its session is open).
    std::size_t max_frame_bytes = 64 * 1024 * 1024;
    std::optional<ServerCurve> curve{};
    // tcp:// endpoints must name a loopback address (127.0.0.0/8, ::1, localhost, which binds
    // 127.0.0.1) unless this is true; ipc:// endpoints are always allowed.
    bool allow_remote = false;
    // Answer the management commands (docs/zmq-protocol.md); false refuses each with an error
    // naming `acemq-broker --no-management` (ManagementError::Reason::disabled at the client).
    bool management = true;
};

// What the server does, for a test or a status line.
struct ServerStats {
    std::uint64_t sessions = 0;         // clients connected now
    std::uint64_t sessions_ended = 0;   // said goodbye, went silent or could not be reached
    std::uint64_t frames_refused = 0;   // answered with an error frame
    std::uint64_t clients_refused = 0;  // CurveZMQ keys the ZAP handler turned away
};

// Serves one broker on its endpoints until destroyed. Thread-safe.
class Server {
public:
    virtual ~Server() = default;  // stops: every session ends as if its client had gone
    // The endpoints as bound: a tcp:// endpoint with port 0 (or `*`) shows the port chosen.
    virtual const std::vector<std::string>& endpoints() const noexcept = 0;
    virtual ServerStats stats() const = 0;
};

// Binds every endpoint (tcp://ADDRESS:PORT, ipc:///PATH; tcp://localhost:PORT binds
// 127.0.0.1, since libzmq binds addresses, not names) and starts serving. Throws
// InvalidArgument for an endpoint that is not one, a remote one without allow_remote, a
// curve option without allowed keys, or a key file that cannot be read; ConnectionError
// when an endpoint cannot be bound (in use, no permission).
std::unique_ptr<Server> serve(std::shared_ptr<inproc::Broker> broker, std::vector<std::string> endpoints,
                              ServerOptions options = {});
// The same, opening the broker (called once, on this thread) only after every endpoint is
// bound: an endpoint that cannot be bound then leaves nothing made behind, such as a durable
// broker's new data file. What `open_broker` throws, serve throws.
using BrokerOpener = std::function<std::shared_ptr<inproc::Broker>()>;
std::unique_ptr<Server> serve(const BrokerOpener& open_broker, std::vector<std::string> endpoints,
                              ServerOptions options = {});

// ---- The client transport -------------------------------------------------------------
struct Options {
    std::optional<ClientCurve> curve{};
    // The broker is taken as gone when it sends nothing for this many of its heartbeat
    // intervals (learnt at the handshake).
    int missed_heartbeats = 3;
    // Timeouts, the confirm window, heartbeats, recovery, the name shown in the broker's log
    // and on_event (on the I/O thread).
    SessionOptions session{};
};

// Connects (waiting up to connect_timeout for the broker's welcome) and returns the
// transport. Throws InvalidArgument for a URL that is not zmq+tcp:// or zmq+ipc://, or
// unreadable keys; acemq::ConnectionError (naming the endpoint, never a key) when no broker
// answers in time or it refuses this client's key; a session lost later is one too.
std::shared_ptr<Transport> open(std::string_view url, Options options = {});

// Management (<acemq/management.hpp>) of the broker at `url`, over a session of its own opened
// with `options` (CurveZMQ keys apply as for open()); open_management("zmq+...") is this
// with default options, management.timeout as the connect and call timeout, and the client
// name "acemq management". Each call waits up to session.call_timeout (ConnectionError
// after). Throws ManagementError access_refused when the broker refuses this client's
// CurveZMQ key; ConnectionError when no broker answers within connect_timeout, or when it
// speaks only version 1 of the protocol, which has no management (docs/zmq-protocol.md §9).
std::unique_ptr<Management> manage(std::string_view url, Options options = {});

}  // namespace acemq::zmq
