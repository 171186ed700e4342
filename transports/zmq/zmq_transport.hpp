// The client transport (zmq+tcp://, zmq+ipc://): callers encode their frames and hand them to
// one I/O thread, which owns the DEALER socket, keeps the session alive with heartbeats, and
// on a loss starts a new session on a new socket (docs/zmq-protocol.md §7, §8). What it shares
// with the AMQP client (the hand-over and its answers, the confirm window, delivery tags,
// the declared topology, backoff and events) is the session layer's (transports/session);
// this is its wire. See <acemq/zmq.hpp> for what it guarantees. Internal. Its members are
// defined by concern:
//   zmq_transport.cpp   life cycle, state callers ask about, requests, consuming and settling
//   publishing.cpp      publishes, from the caller to the I/O thread and back
//   io_loop.cpp         the I/O thread's loop, what it sends and what the broker sends
//   handshake.cpp       a new socket and its hello / welcome
//   recovery.cpp        losing a session, and declaring and consuming again in the next
//   zmq_management.cpp  management calls (zmq::manage), on a transport of their own
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

#include <acemq/zmq.hpp>

#include "session/answer.hpp"
#include "session/declared_topology.hpp"
#include "session/delivery_tags.hpp"
#include "session/publish_window.hpp"
#include "session/settings.hpp"
#include "session/work_queue.hpp"
#include "zmq/management_wire.hpp"
#include "zmq/protocol.hpp"
#include "zmq/socket_io.hpp"

namespace acemq::zmq {

// The broker refused this client's CurveZMQ key when the transport opened: a ConnectionError
// to open()'s callers, told apart by manage(), which makes it ManagementError access_refused.
class KeyRefused : public ConnectionError {
public:
    using ConnectionError::ConnectionError;
};

// A consumer as this client keeps it, across sessions: consumed again after a loss.
struct LocalConsumer {
    std::string queue;
    ConsumeSpec spec;
    DeliverFn deliver;
    // Guards stopped and released; held while deliver runs, so stop() can wait out the last one.
    std::mutex delivering;
    bool stopped = false;
    bool released = false;
    std::uint64_t server_id = 0;  // in the current session; I/O thread only
};

class ZmqTransport final : public Transport,
                           public std::enable_shared_from_this<ZmqTransport>,
                           private DeliverySettler {
public:
    using Clock = std::chrono::steady_clock;
    // How long close() lets the bye (and the settlements before it) take to leave.
    static constexpr std::chrono::milliseconds goodbye_linger{200};

    ZmqTransport(std::string url, std::string endpoint, Options options);  // connects
    ~ZmqTransport() override;                                              // closes

    void declare(const Topology& topology) override;
    PublishResult publish(OutboundMessage message) override;
    std::vector<PublishResult> publish_batch(std::vector<OutboundMessage> messages) override;
    std::unique_ptr<Subscription> consume(std::string_view queue, const ConsumeSpec& spec, DeliverFn deliver) override;
    std::optional<Delivery> pull(std::string_view queue) override;
    std::uint64_t queue_depth(std::string_view queue) override;
    bool queue_exists(std::string_view queue) override;
    void delete_queue(std::string_view queue) override;
    // A ping answered within `timeout`: up, with its round trip; down, with the broker's
    // reason, when the broker says it refuses persistent publishes (its data file refuses
    // commits); down at once, with the reason the session was lost, while there is no
    // session; down when the ping is not answered in time, or the transport is closed.
    Health check_health(std::chrono::milliseconds timeout) override;
    // "zmq", "acemq", the endpoint; capabilities "confirms", "dead-letters", "ttl", and "curve"
    // when the session is encrypted.
    TransportInfo describe() const override;
    void measure_connection(std::shared_ptr<Metrics> metrics) override;
    void close() override;

    // For the subscription: cancel (stop) or release (close) a consumer, waiting for the broker.
    void end_consumer(const std::shared_ptr<LocalConsumer>& consumer, bool release);

    // A management call (docs/zmq-protocol.md §11), its request number given here, waited for
    // up to call_timeout: the reply frame's bytes. Throws ManagementError for the broker's
    // refusal, else what every request throws (ConnectionError when it is not answered).
    std::vector<std::byte> manage(wire::ManageRequest call);

private:
    // A request's answer: the reply frame's bytes (the caller reads them on its own thread),
    // and the session generation it came in.
    struct Reply {
        std::vector<std::byte> frame;
        std::uint64_t generation = 0;
        std::optional<wire::Refusal> refusal{};  // a management call's, its text naming the broker here
    };
    using ReplyAnswer = session::Answer<Reply>;
    using ConfirmAnswer = session::Answer<PublishResult>;  // set, never failed: a publish fails as a result

    // What a caller hands the I/O thread.
    struct Outgoing {
        enum class Kind { request, publish, settle, consume, end_consumer } kind;
        std::uint64_t number = 0;                   // request number or publish sequence
        msgpack::sbuffer frame{};                   // encoded by the caller (empty for end_consumer)
        std::shared_ptr<ReplyAnswer> reply{};       // request, consume, end_consumer
        std::shared_ptr<ConfirmAnswer> confirm{};   // publish
        std::shared_ptr<LocalConsumer> consumer{};  // consume, end_consumer
        bool release = false;                       // end_consumer
        std::uint64_t generation = 0;               // settle: the session its tag is from
        bool batchable = false;                     // publish, settle: may travel in a batch frame
        bool abandoned() const;
    };

    void ack(std::uint64_t delivery_tag) override;
    void requeue(std::uint64_t delivery_tag) override;
    void reject(std::uint64_t delivery_tag) override;
    void settle(std::uint64_t delivery_tag, std::optional<bool> nack_requeue);

    // Caller side (zmq_transport.cpp).
    void submit(Outgoing outgoing);
    Reply request(Outgoing outgoing, std::string_view what);
    std::uint64_t next_number() { return next_number_.fetch_add(1, std::memory_order_relaxed); }
    std::string where() const;
    std::string closed_text() const;
    // `text` from the broker with the embedded broker's name for itself (`inproc broker
    // "NAME"`, true in its own process) made the one this client talks to: the zmq broker
    // "NAME" at this transport's URL. I/O thread only.
    std::string as_named_here(std::string text) const;

    // publishing.cpp
    PublishResult start_publish(OutboundMessage& message, std::shared_ptr<ConfirmAnswer>& confirm);
    PublishResult finish_publish(const std::shared_ptr<ConfirmAnswer>& confirm, Clock::time_point deadline);

    // io_loop.cpp: the I/O thread.
    void run();
    void serve_session();
    void drain_outgoing();
    // Sends the settlements waiting and the bye, and lets them leave before the socket closes.
    void say_goodbye();
    void send_outgoing(Outgoing& outgoing);
    // Sends `frame` in the next batch when the broker takes batches and `batchable`, else at
    // once (after what the batch holds); flush_outbox() sends what the batch holds.
    void send_batched(msgpack::sbuffer frame, bool batchable);
    void flush_outbox();
    void receive_all();
    void handle(std::span<const std::byte> bytes);
    void dispatch(const wire::Frame& frame, std::span<const std::byte> bytes);
    void deliver(wire::Deliver deliver);
    void answer(const wire::Frame& frame, std::span<const std::byte> bytes);

    // handshake.cpp
    bool start_session(Clock::time_point deadline, bool first);
    void open_socket();
    void watch_handshake();
    void welcomed(const wire::Welcome& welcome);

    // recovery.cpp
    void lose_session(std::string why);
    void replay();
    void fail_queued(const std::string& why);

    std::string url_;
    std::string endpoint_;
    Options options_;  // its curve keys and missed_heartbeats; the rest is in session_
    session::Settings session_;
    session::Events events_;
    std::string server_key_, public_key_, secret_key_;  // Z85, when Curve is on

    ::zmq::context_t context_{1};
    std::optional<::zmq::socket_t> socket_;
    std::optional<SocketMonitor> monitor_;  // socket_'s handshakes; reset before socket_
    session::WorkQueue<Outgoing> queue_;
    std::thread thread_;

    std::atomic<std::uint64_t> next_number_{1};
    std::atomic<std::uint64_t> generation_{0};  // of the current session; 0 while there is none
    std::atomic<bool> ready_{false};
    // The broker's frame limit, from its welcome: a publish whose frame is larger is refused
    // before it is sent (0 until the first welcome).
    std::atomic<std::uint64_t> max_frame_bytes_{0};
    std::atomic<bool> closed_{false};  // set once queue_ is shut

    session::PublishWindow window_;

    std::mutex consumers_mutex_;                           // guards consumers_
    std::list<std::shared_ptr<LocalConsumer>> consumers_;  // open ones, consumed again after a loss
    std::mutex declared_mutex_;                            // guards declared_
    session::DeclaredTopology declared_;                   // declared again after a loss

    std::mutex lost_mutex_;     // guards lost_because_
    std::string lost_because_;  // written on the I/O thread; check_health reads it
    std::mutex open_mutex_;     // guards opened_ and open_failure_
    std::condition_variable open_cv_;
    std::optional<std::string> open_failure_;
    bool open_key_refused_ = false;  // open_failure_ is the broker refusing this client's key
    bool opened_ = false;

    // I/O thread only.
    std::unordered_map<std::uint64_t, Outgoing> awaiting_;  // requests by number
    std::unordered_map<std::uint64_t, std::shared_ptr<ConfirmAnswer>> confirms_;
    std::unordered_map<std::uint64_t, std::shared_ptr<LocalConsumer>> by_server_id_;
    session::Generations generations_;
    session::Backoff backoff_;
    std::chrono::milliseconds broker_heartbeat_{1000};
    // The broker's welcome says it reads a consume's arguments (an older broker's does not,
    // and would start a stream read at its own default: such a consume is refused here).
    bool broker_takes_arguments_ = false;
    // How the broker's texts name it (`inproc broker "NAME"`, NAME from the welcome) and what
    // as_named_here puts in its place.
    std::string named_in_process_, named_here_;
    Clock::time_point last_heard_{}, last_sent_{};
    std::uint64_t hello_number_ = 0;
    // The version the hello asks for: wire::version, or 2 again after a broker refused it.
    std::uint32_t hello_version_ = wire::version;
    bool broker_batches_ = false;  // the broker welcomed a hello of version 3: it reads batches
    wire::Batch outbox_{0};        // publishes and settlements waiting to go in one frame
    std::string refused_because_;  // the handshake was refused (Curve key not admitted)
    bool key_refused_ = false;     // ... by the broker's ZAP handler, which refused the key itself
};

}  // namespace acemq::zmq
