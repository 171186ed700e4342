// The client transport (zmq+tcp://, zmq+ipc://): callers encode their frames and hand them to
// one I/O thread, which owns the DEALER socket, keeps the session alive with heartbeats, and
// on a loss starts a new session on a new socket (docs/zmq-protocol.md §6). See
// <acemq/zmq.hpp> for what it guarantees. Internal.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <zmq.hpp>

#include <acemq/zmq.hpp>

#include "zmq/call.hpp"
#include "zmq/socket_io.hpp"

namespace acemq::zmq {

// A consumer as this client keeps it, across sessions: consumed again after a loss.
struct LocalConsumer {
    std::string queue;
    ConsumeSpec spec;
    DeliverFn deliver;
    std::mutex delivering;        // held while deliver runs, so stop() can wait out the last one
    bool stopped = false;         // guarded by `delivering`
    bool released = false;        // guarded by `delivering`
    std::uint64_t server_id = 0;  // in the current session; I/O thread only
};

class ZmqTransport final : public Transport,
                           public std::enable_shared_from_this<ZmqTransport>,
                           private DeliverySettler {
public:
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
    void close() override;

    // For the subscription: cancel (stop) or release (close) a consumer, waiting for the broker.
    void end_consumer(const std::shared_ptr<LocalConsumer>& consumer, bool release);

private:
    // What a caller hands the I/O thread.
    struct Outgoing {
        enum class Kind { request, publish, settle, consume, end_consumer } kind;
        std::uint64_t number = 0;                   // request number or publish sequence
        msgpack::sbuffer frame{};                   // encoded by the caller (empty for end_consumer)
        std::shared_ptr<Call> call{};               // none for settle
        std::shared_ptr<LocalConsumer> consumer{};  // consume, end_consumer
        bool release = false;                       // end_consumer
        std::uint64_t generation = 0;               // settle: the session its tag is from
    };

    void ack(std::uint64_t delivery_tag) override;
    void nack(std::uint64_t delivery_tag, bool requeue) override;
    void settle(std::uint64_t delivery_tag, std::optional<bool> nack_requeue);

    // Caller side.
    std::shared_ptr<Call> submit(Outgoing outgoing);
    Call::Result request(Outgoing outgoing, std::string_view what);
    std::uint64_t next_number() { return next_number_.fetch_add(1, std::memory_order_relaxed); }
    PublishResult start_publish(OutboundMessage& message, std::shared_ptr<Call>& call);
    PublishResult finish_publish(const std::shared_ptr<Call>& call, Call::Clock::time_point deadline);
    void release_window_slot();
    std::string where() const;
    // `text` from the broker with the embedded broker's name for itself (`inproc broker
    // "NAME"`, true in its own process) made the one this client talks to: the zmq broker
    // "NAME" at this transport's URL. I/O thread only.
    std::string as_named_here(std::string text) const;

    // I/O thread.
    void run();
    bool start_session(Call::Clock::time_point deadline, bool first);
    void open_socket();
    void watch_handshake();
    void serve_session();
    void drain_outgoing();
    void send_outgoing(Outgoing& outgoing);
    void receive_all();
    void handle(std::span<const std::byte> bytes);
    void dispatch(const wire::Frame& frame, std::span<const std::byte> bytes);
    void lose_session(std::string why);
    void replay();
    void fail_queued(Call::Outcome outcome, const std::string& why);
    void event(ConnectionEvent::Kind kind, std::string detail, int attempt = 0);

    std::string url_;
    std::string endpoint_;
    Options options_;
    std::string server_key_, public_key_, secret_key_;  // Z85, when Curve is on

    ::zmq::context_t context_{1};
    std::optional<::zmq::socket_t> socket_;
    std::optional<SocketMonitor> monitor_;  // socket_'s handshakes; reset before socket_
    EventFd wake_;
    std::thread thread_;

    std::mutex queue_mutex_;
    std::deque<Outgoing> queue_;

    std::atomic<std::uint64_t> next_number_{1};
    std::atomic<std::uint64_t> generation_{0};  // of the current session; 0 while there is none
    std::atomic<bool> ready_{false};
    // The broker's frame limit, from its welcome: a publish whose frame is larger is refused
    // before it is sent (0 until the first welcome).
    std::atomic<std::uint64_t> max_frame_bytes_{0};
    std::atomic<bool> closed_{false};

    std::mutex window_mutex_;
    std::condition_variable window_cv_;
    std::size_t in_flight_ = 0;

    std::mutex consumers_mutex_;
    std::list<std::shared_ptr<LocalConsumer>> consumers_;  // open ones, consumed again after a loss
    struct Declared {
        std::vector<ExchangeDeclaration> exchanges;
        std::vector<QueueDeclaration> queues;
        std::vector<BindingDeclaration> bindings;
    } declared_;  // declared again after a loss, each once

    // I/O thread only.
    std::unordered_map<std::uint64_t, Outgoing> awaiting_;  // requests by number
    std::unordered_map<std::uint64_t, std::shared_ptr<Call>> confirms_;
    std::unordered_map<std::uint64_t, std::shared_ptr<LocalConsumer>> by_server_id_;
    std::chrono::milliseconds broker_heartbeat_{1000};
    // How the broker's texts name it (`inproc broker "NAME"`, NAME from the welcome) and what
    // as_named_here puts in its place.
    std::string named_in_process_, named_here_;
    Call::Clock::time_point last_heard_{}, last_sent_{};
    std::uint64_t hello_number_ = 0;
    std::uint64_t sessions_started_ = 0;
    std::mutex lost_mutex_;
    std::string lost_because_;     // written on the I/O thread under lost_mutex_; check_health reads it
    std::string refused_because_;  // the handshake was refused (Curve key not admitted)
    std::mutex open_mutex_;
    std::condition_variable open_cv_;
    std::optional<std::string> open_failure_;
    bool opened_ = false;
};

}  // namespace acemq::zmq
