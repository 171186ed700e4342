// AmqpTransport's insides: the owner of the connection and of the parts that work on it
// (commands, confirms, incoming content, subscriptions, the declared topology), and the
// I/O thread that drives them. Internal. Its members are defined by concern:
//   transport_impl.cpp   life cycle, state callers ask about, consuming and pulling
//   io_loop.cpp          the I/O thread's loop and the commands it runs
//   frames.cpp           what the broker sends, frame by frame
//   publishing.cpp       publishes, from the caller to the wire
//   recovery.cpp         connecting, losing the connection and getting it back
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <acemq/amqp.hpp>
#include "amqp/address.hpp"
#include "amqp/command_queue.hpp"
#include "amqp/confirms.hpp"
#include "amqp/connection.hpp"
#include "amqp/incoming.hpp"
#include "amqp/subscriptions.hpp"
#include "amqp/topology_replay.hpp"
#include "session/answer.hpp"
#include "session/delivery_tags.hpp"
#include "session/publish_window.hpp"
#include "session/settings.hpp"

namespace acemq::amqp {

// A publish refused without being written because the broker blocked the connection.
struct BlockedState {
    bool blocked = false;
    std::string reason;
};

// What amqp::open returns; see <acemq/amqp.hpp> for what it guarantees. Every member is
// thread-safe.
class AmqpTransport final : public Transport {
public:
    class Impl;
    explicit AmqpTransport(std::shared_ptr<Impl> impl);
    ~AmqpTransport() override;  // closes
    AmqpTransport(const AmqpTransport&) = delete;
    AmqpTransport& operator=(const AmqpTransport&) = delete;

    void declare(const Topology& topology) override;
    PublishResult publish(OutboundMessage message) override;
    std::vector<PublishResult> publish_batch(std::vector<OutboundMessage> messages) override;
    std::unique_ptr<Subscription> consume(std::string_view queue, const ConsumeSpec& spec, DeliverFn deliver) override;
    std::optional<Delivery> pull(std::string_view queue) override;
    std::uint64_t queue_depth(std::string_view queue) override;
    bool queue_exists(std::string_view queue) override;
    void delete_queue(std::string_view queue) override;
    void close() override;
    Health check_health(std::chrono::milliseconds timeout) override;
    TransportInfo describe() const override;
    void measure_connection(std::shared_ptr<Metrics> metrics) override;
    ConnectionState state() const;

private:
    std::shared_ptr<Impl> impl_;  // shared with the subscriptions, which may outlive a close
};

class AmqpTransport::Impl final : private SettlementLink {
public:
    using Clock = std::chrono::steady_clock;

    Impl(Address address, Options options, session::Settings session);
    ~Impl();

    // Connects (a failure is the caller's exception) and starts the I/O thread.
    void start();
    void shut_down();

    // Runs `work` on the I/O thread and waits up to `timeout` for its answer. `work` gets the
    // connection, or nullptr when the transport closed before it could run.
    template <class R>
    R on_io_thread(std::string_view what, std::function<R(Connection*)> work, std::chrono::milliseconds timeout) {
        if (std::this_thread::get_id() == io_thread_id_)
            throw UsageError("acemq: cannot " + std::string(what) +
                             " from inside a delivery callback of the same AMQP transport: hand the delivery to "
                             "another thread first");
        auto answer = std::make_shared<session::Answer<R>>();
        post([answer, work = std::move(work)](Connection* connection) {
            try {
                answer->set(work(connection));
            } catch (...) {
                answer->fail_with_current();
                if (connection != nullptr) throw;  // the I/O loop looks at a lost connection too
            }
        });
        std::optional<R> result = answer->wait_until(Clock::now() + timeout);
        if (!result)
            throw ConnectionError("acemq: cannot " + std::string(what) + " on " + address_.printable() +
                                  ": no answer within " + std::to_string(timeout.count()) +
                                  " ms (the connection is down or the broker is not answering)");
        return std::move(*result);
    }

    // The same with the connection up: a closed transport is a ConnectionError.
    template <class R>
    R call(std::string_view what, std::function<R(Connection&)> work,
           std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
        return on_io_thread<R>(
            what,
            [work = std::move(work)](Connection* connection) -> R {
                if (connection == nullptr) throw ConnectionError("acemq: the AMQP transport is closed");
                return work(*connection);
            },
            timeout.value_or(session_.call_timeout));
    }

    // Queues work for the I/O thread; once the transport is shut it runs at once, with nullptr.
    void post(Command work);

    std::vector<PublishResult> publish(std::vector<OutboundMessage> messages);

    std::shared_ptr<SubscriptionState> subscribe(std::string_view queue, const ConsumeSpec& spec, DeliverFn deliver);
    void stop(const std::shared_ptr<SubscriptionState>& state);
    void close_subscription(const std::shared_ptr<SubscriptionState>& state);

    // I/O thread only.
    std::optional<Delivery> pull(Connection& connection, const std::string& queue);
    TopologyReplay& topology() noexcept { return topology_; }

    BlockedState blocked() const;
    bool connected() const { return connected_.load(); }
    // close() was called: unlike a lost connection, nothing will bring it back.
    bool shut() { return commands_.is_shut(); }
    std::vector<std::string> stopped_queues() const;
    session::Events& events() { return events_; }
    const Address& address() const noexcept { return address_; }
    // The connection's frame_max as last negotiated; 0 before the first connection.
    std::size_t frame_max() const noexcept { return frame_max_.load(); }

private:
    using Chunk = std::vector<std::shared_ptr<PendingPublish>>;

    void write_soon(std::function<void(Connection&, std::uint64_t generation)> write) override;
    void wake() override { commands_.wake(); }

    // io_loop.cpp
    void run();
    std::chrono::milliseconds tick() const;
    void run_commands();
    void fail_queued_commands();

    // frames.cpp
    void pump_frames();
    void handle_method(amqp_channel_t channel, const amqp_method_t& method);
    void complete(Incoming in);
    void channel_closed_by_broker(amqp_channel_t channel, const std::string& reason, const amqp_channel_close_t& close);
    void set_blocked(BlockedState state);

    // publishing.cpp
    bool publish_directly(Chunk& chunk, Clock::time_point deadline);
    void write_publishes(Connection* connection, Chunk& chunk);

    // recovery.cpp
    bool recover(int attempt);
    void connect_now();
    void open_publish_channel(Connection& connection);
    void resume_subscriptions();
    void note_stopped_queues();
    void drop_connection(const std::string& why, bool was_up);

    Address address_;
    Options options_;  // its credentials and TLS settings; the rest is in session_
    session::Settings session_;
    session::Events events_;
    CommandQueue commands_;
    std::thread io_thread_;
    std::thread::id io_thread_id_;

    mutable std::mutex state_mutex_;  // guards blocked_ and stopped_queues_
    BlockedState blocked_;
    std::vector<std::string> stopped_queues_;
    std::atomic<bool> connected_{false};

    session::PublishWindow window_;

    // Guards the connection and every member after it: held by the I/O thread, except while
    // it sleeps, or by a caller writing a publish or a settlement itself.
    std::mutex io_mutex_;
    std::unique_ptr<Connection> connection_;
    std::uint64_t generation_ = 0;  // of the connection; 0 before the first
    session::Generations generations_;
    Clock::time_point next_resume_{};
    Clock::time_point next_attempt_{};
    session::Backoff backoff_;
    std::atomic<std::size_t> frame_max_{0};  // the connection's, as negotiated; read by callers
    Confirms confirms_{window_};
    IncomingContent incoming_;
    Subscriptions subscriptions_{*this, incoming_};
    Settler pull_settler_{*this, pull_channel};
    TopologyReplay topology_;
};

}  // namespace acemq::amqp
