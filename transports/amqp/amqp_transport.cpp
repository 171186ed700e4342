#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <acemq/error.hpp>
#include <acemq/uuid.hpp>
#include <acemq/amqp.hpp>
#include "amqp/connection.hpp"
#include "amqp/wire.hpp"

namespace acemq::amqp {

namespace {

using Clock = std::chrono::steady_clock;

constexpr amqp_channel_t publish_channel = 1;  // confirm mode; every publish
constexpr amqp_channel_t admin_channel = 2;    // declarations and questions (a failure closes it)
constexpr amqp_channel_t pull_channel = 3;     // basic.get and its settlements
constexpr amqp_channel_t first_consumer_channel = 4;

// A delivery tag as handed to Delivery: the connection's generation in the top 16 bits, so
// a settlement of a delivery from before a reconnect can be told apart (the broker has
// already given that message back to its queue, and its tag now means another message).
constexpr int generation_shift = 48;
std::uint64_t tag_for(std::uint64_t generation, std::uint64_t broker_tag) {
    return (generation << generation_shift) | broker_tag;
}

std::string in_quotes(std::string_view text) { return "\"" + std::string(text) + "\""; }

const char* kind_name(ExchangeKind kind) {
    switch (kind) {
    case ExchangeKind::direct: return "direct";
    case ExchangeKind::topic: return "topic";
    case ExchangeKind::fanout: return "fanout";
    case ExchangeKind::headers: return "headers";
    }
    return "direct";
}

enum class FailureKind { error, topology, connection };

// One step of hand-over between a caller and the I/O thread.
template <class T>
class Answer {
public:
    void set(T value) {
        {
            std::lock_guard lock(mutex_);
            value_ = std::move(value);
        }
        // After unlocking, so the woken waiter does not block on the mutex at once; both
        // sides hold the Answer through a shared_ptr, so it outlives this call.
        cv_.notify_all();
    }
    bool ready() {
        std::lock_guard lock(mutex_);
        return value_.has_value() || failure_.has_value();
    }
    // A failure travels as its class and text, not as an exception_ptr: the waiting thread
    // throws a fresh exception, so no exception object is shared between threads (whose
    // reference count the sanitizers cannot see through libstdc++).
    void fail(FailureKind kind, std::string what) {
        {
            std::lock_guard lock(mutex_);
            failure_ = Failure{kind, std::move(what)};
        }
        cv_.notify_all();
    }
    // The exception being handled, by its class.
    void fail_with_current() {
        try {
            throw;
        } catch (const TopologyError& error) {
            fail(FailureKind::topology, error.what());
        } catch (const ConnectionError& error) {
            fail(FailureKind::connection, error.what());
        } catch (const std::exception& error) {
            fail(FailureKind::error, error.what());
        }
    }
    // nullopt when `deadline` passes first; throws a failure.
    std::optional<T> wait_until(Clock::time_point deadline) {
        std::unique_lock lock(mutex_);
        cv_.wait_until(lock, deadline, [&] { return value_.has_value() || failure_.has_value(); });
        if (failure_) {
            switch (failure_->kind) {
            case FailureKind::topology: throw TopologyError(failure_->what);
            case FailureKind::connection: throw ConnectionError(failure_->what);
            case FailureKind::error: throw Error(failure_->what);
            }
        }
        return std::move(value_);
    }

private:
    struct Failure {
        FailureKind kind;
        std::string what;
    };

    std::mutex mutex_;
    std::condition_variable cv_;
    std::optional<T> value_;
    std::optional<Failure> failure_;
};

struct PendingPublish {
    OutboundMessage message;
    Answer<PublishResult> answer;
    std::atomic<bool> abandoned{false};  // the caller stopped waiting: do not write it late
    bool returned = false;
    std::string return_reason;
};

}  // namespace

class AmqpTransport::Impl {
public:
    Impl(Address address, Options options) : address_(std::move(address)), options_(std::move(options)) {
        wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (wake_fd_ < 0) throw Error("acemq: cannot make an eventfd for the AMQP I/O thread");
    }

    ~Impl() {
        shut_down();
        ::close(wake_fd_);
    }

    void start() {
        connect_now();  // the first connect is the caller's: its failure is an exception
        connected_.store(true);
        io_thread_ = std::thread([this] { run(); });
        io_thread_id_ = io_thread_.get_id();
    }

    // ---- calls from any thread --------------------------------------------------------

    // Runs `work` on the I/O thread and waits up to `timeout` for its answer. `work` gets the
    // connection, or nullptr when the transport closed before it could run.
    template <class R>
    R on_io_thread(std::string_view what, std::function<R(Connection*)> work, std::chrono::milliseconds timeout) {
        if (std::this_thread::get_id() == io_thread_id_)
            throw Error("acemq: cannot " + std::string(what) +
                        " from inside a delivery callback of the same AMQP transport: hand the delivery to "
                        "another thread first");
        auto answer = std::make_shared<Answer<R>>();
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
            timeout.value_or(options_.call_timeout));
    }

    // Queues work for the I/O thread; it runs with the connection up (nullptr: the
    // transport closed before it could run).
    void post(std::function<void(Connection*)> work) {
        {
            std::lock_guard lock(commands_mutex_);
            if (!shut_) {
                commands_.push_back(std::move(work));
                wake();
                return;
            }
        }
        std::lock_guard io(io_mutex_);  // after the commands lock, never inside it (lock order)
        work(nullptr);
    }

    std::vector<PublishResult> publish(std::vector<OutboundMessage> messages) {
        std::vector<PublishResult> results(messages.size());
        // What rabbitmq-c cannot encode is refused here, written never: half a publish on
        // the wire would cost the connection and every delivery in flight on it.
        std::vector<std::size_t> sendable;
        sendable.reserve(messages.size());
        for (std::size_t i = 0; i < messages.size(); ++i) {
            std::string refusal = encoding_refusal(messages[i], frame_max_.load());
            if (refusal.empty()) sendable.push_back(i);
            else results[i] = PublishResult{false, true, std::move(refusal), PublishResult::Unconfirmed::too_large};
        }
        std::vector<std::shared_ptr<PendingPublish>> pending;
        pending.reserve(sendable.size());
        std::size_t next = 0;
        while (next < sendable.size()) {
            if (const BlockedState state = blocked(); state.blocked) {
                for (; next < sendable.size(); ++next)
                    results[sendable[next]] = PublishResult{false, true, state.reason, PublishResult::Unconfirmed::paused};
                break;
            }
            const std::size_t granted = take_slots(sendable.size() - next);
            if (granted == 0) {
                const std::string why = std::to_string(options_.max_outstanding_publishes) +
                                        " publishes are already waiting for a confirm and none completed within " +
                                        std::to_string(options_.confirm_timeout.count()) +
                                        " ms. The broker is not keeping up; publish more slowly rather than "
                                        "buffering more";
                for (; next < sendable.size(); ++next)
                    results[sendable[next]] = PublishResult{false, true, why, PublishResult::Unconfirmed::lost};
                break;
            }
            std::vector<std::shared_ptr<PendingPublish>> chunk;
            chunk.reserve(granted);
            for (std::size_t i = 0; i < granted; ++i) {
                auto one = std::make_shared<PendingPublish>();
                one->message = std::move(messages[sendable[next + i]]);
                chunk.push_back(one);
                pending.push_back(std::move(one));
            }
            next += granted;
            if (sendable.size() == 1 && publish_directly(chunk, Clock::now() + options_.confirm_timeout)) break;
            post([this, chunk = std::move(chunk)](Connection* connection) mutable {
                write_publishes(connection, chunk);
            });
        }
        const auto deadline = Clock::now() + options_.confirm_timeout;
        for (std::size_t i = 0; i < pending.size(); ++i) {
            std::optional<PublishResult> result = pending[i]->answer.wait_until(deadline);
            if (!result) {
                pending[i]->abandoned.store(true);
                result = PublishResult{false, true,
                                       "no confirm within " + std::to_string(options_.confirm_timeout.count()) + " ms",
                                       PublishResult::Unconfirmed::lost};
            }
            results[sendable[i]] = std::move(*result);
        }
        return results;
    }

    // One publish written, and its confirm read, on the caller's own thread when nobody else
    // is using the connection: the hand-over to the I/O thread and back costs more than the
    // write itself (two thread wake-ups against one). False when the connection is busy or
    // down; then the I/O thread takes it. Deliveries that arrive meanwhile are handed to
    // their DeliverFn on this thread.
    bool publish_directly(std::vector<std::shared_ptr<PendingPublish>>& chunk, Clock::time_point deadline) {
        std::unique_lock io(io_mutex_, std::try_to_lock);
        if (!io.owns_lock() || !connection_) return false;
        try {
            write_publishes(connection_.get(), chunk);
            PendingPublish& pending = *chunk.front();
            while (connection_ && !pending.answer.ready()) {
                pump_frames();
                if (!connection_ || pending.answer.ready()) break;
                if (amqp_frames_enqueued(connection_->get()) || amqp_data_in_buffer(connection_->get())) continue;
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
                if (left.count() <= 0) break;
                pollfd fds[2] = {{connection_->socket_fd(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
                ::poll(fds, 2, static_cast<int>(std::min<std::int64_t>(left.count() + 1, 1000)));
                // Work is waiting for the connection: hand it back to the I/O thread, which
                // reads this confirm too (it watches the socket while publishes are unconfirmed).
                if (fds[1].revents != 0) break;
            }
        } catch (const std::exception& lost) {
            drop_connection(lost.what(), true);
        }
        return true;
    }

    BlockedState blocked() const {
        std::lock_guard lock(state_mutex_);
        return blocked_;
    }

    bool connected() const { return connected_.load(); }

    std::vector<std::string> stopped_queues() const {
        std::lock_guard lock(state_mutex_);
        return stopped_queues_;
    }

    void shut_down() {
        {
            std::lock_guard lock(commands_mutex_);
            if (shut_) return;
            shut_ = true;
        }
        wake();
        if (io_thread_.joinable()) io_thread_.join();
        // Whatever was posted after the I/O thread's last look.
        fail_queued_commands();
        std::lock_guard io(io_mutex_);
        connection_.reset();
        connected_.store(false);
    }

    const Address& address() const noexcept { return address_; }

    // ---- subscriptions ------------------------------------------------------------------

    struct SubscriptionState;

    // Settles on the pull channel, or on whichever channel its subscription has now.
    class Settler final : public DeliverySettler {
    public:
        Settler(Impl& impl, amqp_channel_t channel) : impl_(impl), fixed_channel_(channel) {}
        Settler(Impl& impl, std::shared_ptr<const SubscriptionState> subscription)
            : impl_(impl), fixed_channel_(0), subscription_(std::move(subscription)) {}
        void ack(std::uint64_t delivery_tag) override { settle(delivery_tag, true, false); }
        void nack(std::uint64_t delivery_tag, bool requeue) override { settle(delivery_tag, false, requeue); }

    private:
        void settle(std::uint64_t delivery_tag, bool ack, bool requeue) {
            {
                // Written at once when the connection is free, else handed to the I/O thread.
                std::unique_lock io(impl_.io_mutex_, std::try_to_lock);
                if (io.owns_lock() && impl_.connection_) {
                    try {
                        write(*impl_.connection_, delivery_tag, ack, requeue);
                    } catch (const std::exception& lost) {
                        impl_.drop_connection(lost.what(), true);
                    }
                    return;
                }
            }
            impl_.post([this, delivery_tag, ack, requeue](Connection* connection) {
                if (connection != nullptr) write(*connection, delivery_tag, ack, requeue);
            });
        }

        void write(Connection& connection, std::uint64_t delivery_tag, bool ack, bool requeue) {
            // A settlement for another connection's delivery, or after the channel closed:
            // the broker gave that message back already, so nothing is settled.
            const amqp_channel_t channel = subscription_ ? subscription_->channel : fixed_channel_;
            if ((delivery_tag >> generation_shift) != impl_.generation_ || channel == 0) return;
            const std::uint64_t broker_tag = delivery_tag & ((std::uint64_t{1} << generation_shift) - 1);
            const int status = ack ? amqp_basic_ack(connection.get(), channel, broker_tag, 0)
                                   : amqp_basic_nack(connection.get(), channel, broker_tag, 0, requeue ? 1 : 0);
            connection.check_status(status, ack ? "ack a delivery" : "nack a delivery");
        }

        Impl& impl_;
        amqp_channel_t fixed_channel_;
        std::shared_ptr<const SubscriptionState> subscription_;  // read under the I/O lock
    };

    struct SubscriptionState {
        std::string queue;
        ConsumeSpec spec;
        DeliverFn deliver;
        Settler* settler = nullptr;
        amqp_channel_t channel = 0;  // 0 while not consuming (lost, or stopped)
        bool stopped = false;
        bool cancelled_by_broker = false;
    };

    std::shared_ptr<SubscriptionState> subscribe(std::string_view queue, const ConsumeSpec& spec, DeliverFn deliver) {
        auto state = std::make_shared<SubscriptionState>();
        state->queue = std::string(queue);
        state->spec = spec;
        if (state->spec.prefetch == 0) state->spec.prefetch = 20;
        if (state->spec.tag.empty()) state->spec.tag = "acemq-" + state->queue + "-" + new_uuid().substr(0, 8);
        state->deliver = std::move(deliver);
        call<bool>("consume from queue " + in_quotes(queue), [this, state](Connection& connection) {
            state->settler = &new_settler(state);
            start_consuming(connection, *state);
            subscriptions_.push_back(state);
            return true;
        });
        return state;
    }

    void stop(const std::shared_ptr<SubscriptionState>& state) {
        if (std::this_thread::get_id() == io_thread_id_) throw Error("acemq: cannot stop a subscription from its own delivery callback");
        on_io_thread<bool>(
            "stop consuming from queue " + in_quotes(state->queue),
            [this, state](Connection* connection) {
                state->stopped = true;  // from here, deliveries that still arrive go straight back
                if (connection != nullptr && state->channel != 0) {
                    amqp_basic_cancel(connection->get(), state->channel, bytes_of(state->spec.tag));
                    try {
                        connection->check(amqp_get_rpc_reply(connection->get()), "cancel consumer " + state->spec.tag,
                                          state->channel);
                    } catch (const ChannelClosed&) {
                        release_channel(*state);
                    }
                }
                return true;
            },
            options_.call_timeout);
    }

    void close_subscription(const std::shared_ptr<SubscriptionState>& state) {
        stop(state);
        on_io_thread<bool>(
            "close the subscription to queue " + in_quotes(state->queue),
            [this, state](Connection* connection) {
                if (connection != nullptr && state->channel != 0) connection->close_channel(state->channel);
                release_channel(*state);
                subscriptions_.erase(std::remove(subscriptions_.begin(), subscriptions_.end(), state),
                                     subscriptions_.end());
                state->deliver = {};  // its settler keeps the state; not what the callback holds
                note_stopped_queues();
                return true;
            },
            options_.call_timeout);
    }

    // ---- I/O thread only ----------------------------------------------------------------

    std::optional<Delivery> pull(Connection& connection, const std::string& queue) {
        const amqp_rpc_reply_t reply = amqp_basic_get(connection.get(), pull_channel, bytes_of(queue), 0);
        connection.check_reopening(reply, "pull from queue " + in_quotes(queue), pull_channel);
        if (reply.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) return std::nullopt;
        const auto* ok = static_cast<const amqp_basic_get_ok_t*>(reply.reply.decoded);
        InboundMessage inbound;
        inbound.exchange = string_of(ok->exchange);
        inbound.routing_key = string_of(ok->routing_key);
        inbound.redelivered = ok->redelivered != 0;
        const std::uint64_t broker_tag = ok->delivery_tag;
        amqp_message_t message;
        connection.check(amqp_read_message(connection.get(), pull_channel, &message, 0), "read a pulled message",
                         pull_channel);
        fill(inbound, message.properties);
        const auto* body = static_cast<const std::byte*>(message.body.bytes);
        inbound.body.assign(body, body + message.body.len);
        amqp_destroy_message(&message);
        return Delivery(std::move(inbound), pull_settler_, tag_for(generation_, broker_tag));
    }

private:
    friend class AmqpTransport;

    // ---- the I/O loop ---------------------------------------------------------------------

    void run() {
        int attempt = 0;
        while (!shutting_down()) {
            std::unique_lock io(io_mutex_);
            if (!connection_) {
                if (!options_.recover) {
                    io.unlock();
                    fail_queued_commands();
                    wait_for_wake(-1, std::chrono::milliseconds(500));
                    continue;
                }
                const auto now = Clock::now();
                if (now < next_attempt_) {
                    io.unlock();
                    wait_for_wake(-1, std::chrono::duration_cast<std::chrono::milliseconds>(next_attempt_ - now));
                    continue;
                }
                ++attempt;
                emit({ConnectionEvent::Kind::retrying, address_.printable(), attempt});
                try {
                    connect_now();
                    restore();
                    connected_.store(true);
                    emit({ConnectionEvent::Kind::recovered, address_.printable(), attempt});
                    attempt = 0;
                } catch (const Error& error) {
                    drop_connection(error.what(), false);
                    next_attempt_ = Clock::now() + recovery_delay_;
                    recovery_delay_ = std::min(recovery_delay_ * 2, options_.max_recovery_delay);
                }
                continue;
            }
            int socket = -1;
            try {
                run_commands();
                pump_frames();
                if (connection_ && Clock::now() >= next_resume_) resume_subscriptions();
                if (!connection_) continue;
                if (amqp_frames_enqueued(connection_->get()) || amqp_data_in_buffer(connection_->get())) continue;
                // The socket is watched only when something is expected on it that nobody else
                // reads: deliveries, or confirms of publishes whose callers wait on us. Otherwise
                // a publisher reading its own confirm would wake this thread for nothing; what
                // the broker says unasked (blocked, a close) is read at the next tick.
                if (!subscriptions_.empty() || !unconfirmed_.empty()) socket = connection_->socket_fd();
            } catch (const std::exception& lost) {
                // ConnectionLost, or a failure half-way through re-opening a channel the
                // broker closed: either way the connection is not in a state to go on with.
                drop_connection(lost.what(), true);
                continue;
            }
            io.unlock();
            if (!has_commands()) wait_for_wake(socket, tick());
        }
        std::lock_guard io(io_mutex_);
        if (connection_) {
            for (auto& state : subscriptions_) release_channel(*state);
            fail_pending_publishes("the transport was closed before the broker confirmed it");
            connection_->close();
        }
        if (attempt > 0) emit({ConnectionEvent::Kind::gave_up, address_.printable(), attempt});
    }

    // How long the I/O thread sleeps at most: often enough to send heartbeats in time and to
    // notice what the broker says unasked.
    std::chrono::milliseconds tick() const {
        const auto heartbeat = std::chrono::duration_cast<std::chrono::milliseconds>(options_.heartbeat);
        return heartbeat.count() > 0 ? std::min(heartbeat / 4, std::chrono::milliseconds(1000))
                                     : std::chrono::milliseconds(1000);
    }

    bool shutting_down() {
        std::lock_guard lock(commands_mutex_);
        return shut_;
    }

    bool has_commands() {
        std::lock_guard lock(commands_mutex_);
        return !commands_.empty();
    }

    void wake() {
        const std::uint64_t one = 1;
        // A full counter still wakes the reader, so a failed write loses nothing.
        (void)!::write(wake_fd_, &one, sizeof one);
    }

    void drain_wake() {
        std::uint64_t count;
        (void)!::read(wake_fd_, &count, sizeof count);
    }

    // Sleeps until a caller posts work, `socket` (when not -1) has data, or `timeout` passes.
    void wait_for_wake(int socket, std::chrono::milliseconds timeout) {
        pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {socket, POLLIN, 0}};
        ::poll(fds, socket < 0 ? 1 : 2, static_cast<int>(std::max<std::int64_t>(timeout.count(), 1)));
        if (fds[0].revents != 0) drain_wake();
    }

    void run_commands() {
        std::deque<std::function<void(Connection*)>> batch;
        {
            std::lock_guard lock(commands_mutex_);
            batch.swap(commands_);
        }
        while (!batch.empty() && connection_) {
            auto work = std::move(batch.front());
            batch.pop_front();
            try {
                work(connection_.get());
            } catch (const ConnectionLost&) {
                // Put back what has not run: it runs on the next connection.
                std::lock_guard lock(commands_mutex_);
                for (auto it = batch.rbegin(); it != batch.rend(); ++it) commands_.push_front(std::move(*it));
                throw;
            } catch (const Error&) {
                // The work's own failure went to its caller through its Answer.
            }
        }
        if (!batch.empty()) {
            std::lock_guard lock(commands_mutex_);
            for (auto it = batch.rbegin(); it != batch.rend(); ++it) commands_.push_front(std::move(*it));
        }
    }

    void fail_queued_commands() {
        std::deque<std::function<void(Connection*)>> batch;
        {
            std::lock_guard lock(commands_mutex_);
            batch.swap(commands_);
        }
        std::lock_guard io(io_mutex_);
        for (auto& work : batch) {
            try {
                work(nullptr);
            } catch (const Error&) {
                // Each command reports to its own caller; nothing more to do here.
            }
        }
    }

    // Reads every frame that is already here, without waiting.
    void pump_frames() {
        for (int frames = 0; connection_ && frames < 4096; ++frames) {
            amqp_frame_t frame;
            timeval no_wait{0, 0};
            const int status = amqp_simple_wait_frame_noblock(connection_->get(), &frame, &no_wait);
            if (status == AMQP_STATUS_TIMEOUT) break;
            connection_->check_status(status, "read from the broker");
            handle_frame(frame);
        }
        if (connection_) amqp_maybe_release_buffers(connection_->get());
    }

    // Content (header + body frames) being put together on one channel.
    struct Incoming {
        enum class Kind { delivery, returned } kind = Kind::delivery;
        InboundMessage message;
        std::uint64_t broker_tag = 0;
        std::uint64_t body_size = 0;
        bool have_header = false;
        std::string return_reason;
    };

    void handle_frame(const amqp_frame_t& frame) {
        const amqp_channel_t channel = frame.channel;
        if (frame.frame_type == AMQP_FRAME_METHOD) {
            handle_method(channel, frame.payload.method);
            return;
        }
        auto found = incoming_.find(channel);
        if (found == incoming_.end()) return;  // content for a channel we gave up: dropped with it
        Incoming& in = found->second;
        if (frame.frame_type == AMQP_FRAME_HEADER) {
            in.have_header = true;
            in.body_size = frame.payload.properties.body_size;
            fill(in.message, *static_cast<const amqp_basic_properties_t*>(frame.payload.properties.decoded));
            in.message.body.reserve(in.body_size);
        } else if (frame.frame_type == AMQP_FRAME_BODY) {
            const auto* data = static_cast<const std::byte*>(frame.payload.body_fragment.bytes);
            in.message.body.insert(in.message.body.end(), data, data + frame.payload.body_fragment.len);
        }
        if (in.have_header && in.message.body.size() >= in.body_size) {
            Incoming done = std::move(in);
            incoming_.erase(found);
            complete(channel, std::move(done));
        }
    }

    void handle_method(amqp_channel_t channel, const amqp_method_t& method) {
        switch (method.id) {
        case AMQP_BASIC_DELIVER_METHOD: {
            const auto* deliver = static_cast<const amqp_basic_deliver_t*>(method.decoded);
            Incoming in;
            in.broker_tag = deliver->delivery_tag;
            in.message.exchange = string_of(deliver->exchange);
            in.message.routing_key = string_of(deliver->routing_key);
            in.message.redelivered = deliver->redelivered != 0;
            incoming_[channel] = std::move(in);
            return;
        }
        case AMQP_BASIC_RETURN_METHOD: {
            const auto* returned = static_cast<const amqp_basic_return_t*>(method.decoded);
            Incoming in;
            in.kind = Incoming::Kind::returned;
            in.return_reason = reply_text(returned->reply_code, returned->reply_text);
            incoming_[channel] = std::move(in);
            return;
        }
        case AMQP_BASIC_ACK_METHOD: {
            const auto* ack = static_cast<const amqp_basic_ack_t*>(method.decoded);
            confirm(ack->delivery_tag, ack->multiple != 0, true);
            return;
        }
        case AMQP_BASIC_NACK_METHOD: {
            const auto* nack = static_cast<const amqp_basic_nack_t*>(method.decoded);
            confirm(nack->delivery_tag, nack->multiple != 0, false);
            return;
        }
        case AMQP_BASIC_CANCEL_METHOD: {  // the broker ended a consumer: its queue was deleted
            for (auto& state : subscriptions_)
                if (state->channel == channel) state->cancelled_by_broker = true;
            note_stopped_queues();
            return;
        }
        case AMQP_CHANNEL_CLOSE_METHOD: {
            const auto* close = static_cast<const amqp_channel_close_t*>(method.decoded);
            const std::string reason = reply_text(close->reply_code, close->reply_text);
            connection_->acknowledge_channel_close(channel);
            incoming_.erase(channel);
            channel_closed_by_broker(channel, reason);
            return;
        }
        case AMQP_CONNECTION_CLOSE_METHOD: {
            const auto* close = static_cast<const amqp_connection_close_t*>(method.decoded);
            const std::string reason = reply_text(close->reply_code, close->reply_text);
            connection_->acknowledge_connection_close();
            throw ConnectionLost("acemq: the broker closed the connection to " + address_.printable() + " (" + reason + ")");
        }
        case AMQP_CONNECTION_BLOCKED_METHOD: {
            const auto* blocked = static_cast<const amqp_connection_blocked_t*>(method.decoded);
            std::string reason = string_of(blocked->reason);
            {
                std::lock_guard lock(state_mutex_);
                blocked_ = BlockedState{true, reason};
            }
            emit({ConnectionEvent::Kind::blocked, reason, 0});
            return;
        }
        case AMQP_CONNECTION_UNBLOCKED_METHOD: {
            {
                std::lock_guard lock(state_mutex_);
                blocked_ = BlockedState{};
            }
            emit({ConnectionEvent::Kind::unblocked, {}, 0});
            return;
        }
        default:
            return;  // channel.flow and the like: nothing we act on
        }
    }

    void complete(amqp_channel_t channel, Incoming in) {
        if (in.kind == Incoming::Kind::returned) {
            // RabbitMQ sends basic.return before the confirm of the same message: file the
            // return with the oldest unconfirmed mandatory publish of that message id.
            for (auto& [sequence, pending] : unconfirmed_) {
                if (pending->returned || !pending->message.mandatory) continue;
                if (!in.message.message_id.empty() && pending->message.message_id != in.message.message_id) continue;
                pending->returned = true;
                pending->return_reason = in.return_reason;
                break;
            }
            return;
        }
        for (auto& state : subscriptions_) {
            if (state->channel != channel) continue;
            if (state->stopped) {
                // Sent before the broker saw our basic.cancel: straight back to the queue.
                connection_->check_status(amqp_basic_nack(connection_->get(), channel, in.broker_tag, 0, 1),
                                          "give back a delivery");
                return;
            }
            state->deliver(Delivery(std::move(in.message), *state->settler, tag_for(generation_, in.broker_tag)));
            return;
        }
    }

    void confirm(std::uint64_t sequence, bool multiple, bool ok) {
        auto last = multiple ? unconfirmed_.upper_bound(sequence) : unconfirmed_.find(sequence);
        auto first = multiple ? unconfirmed_.begin() : last;
        if (!multiple) {
            if (last == unconfirmed_.end()) return;
            ++last;
        }
        for (auto it = first; it != last; ++it) {
            PendingPublish& pending = *it->second;
            PublishResult result;
            result.confirmed = ok;
            if (ok) {
                result.routed = !pending.returned;
                result.return_reason = pending.return_reason;
            } else {
                result.return_reason = "the broker sent basic.nack";
                result.why = PublishResult::Unconfirmed::refused;
            }
            pending.answer.set(std::move(result));
        }
        give_back_slots(static_cast<std::size_t>(std::distance(first, last)));
        unconfirmed_.erase(first, last);
    }

    void write_publishes(Connection* connection, std::vector<std::shared_ptr<PendingPublish>>& chunk) {
        if (connection == nullptr) {
            for (auto& pending : chunk)
                pending->answer.set(
                    PublishResult{false, true, "the AMQP transport is closed", PublishResult::Unconfirmed::unsent});
            give_back_slots(chunk.size());
            return;
        }
        for (std::size_t i = 0; i < chunk.size(); ++i) {
            auto& pending = chunk[i];
            if (pending->abandoned.load()) {
                give_back_slots(1);
                continue;
            }
            const OutboundMessage& message = pending->message;
            TableView headers(message.headers);
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
            const std::uint64_t sequence = next_sequence_++;
            unconfirmed_.emplace(sequence, pending);
            const int status = amqp_basic_publish(
                connection->get(), publish_channel, bytes_of(message.exchange), bytes_of(message.routing_key),
                message.mandatory ? 1 : 0, 0, &properties,
                amqp_bytes_t{message.body.size(), const_cast<std::byte*>(message.body.data())});
            if (status < 0) {
                // Those not written yet are certainly not sent; the rest fail with the connection.
                for (std::size_t rest = i + 1; rest < chunk.size(); ++rest)
                    chunk[rest]->answer.set(PublishResult{false, true, "the connection was lost before its turn",
                                                          PublishResult::Unconfirmed::unsent});
                give_back_slots(chunk.size() - i - 1);
                connection->check_status(status, "publish to exchange " + in_quotes(message.exchange));
            }
        }
    }

    void fail_pending_publishes(const std::string& why) {
        for (auto& [sequence, pending] : unconfirmed_)
            pending->answer.set(PublishResult{false, true, why, PublishResult::Unconfirmed::lost});
        give_back_slots(unconfirmed_.size());
        unconfirmed_.clear();
    }

    // The broker closed one of our channels (a publish to a missing exchange, a bad ack, a
    // queue deleted under a consumer...). Reopen it so the rest keeps going.
    void channel_closed_by_broker(amqp_channel_t channel, const std::string& reason) {
        if (channel == publish_channel) {
            // No confirm will come for any publish in flight on it: whether each arrived is
            // unknown (the one that caused the close is among them, and the reason says why).
            for (auto& [sequence, pending] : unconfirmed_)
                pending->answer.set(PublishResult{false, true, reason, PublishResult::Unconfirmed::lost});
            give_back_slots(unconfirmed_.size());
            unconfirmed_.clear();
            open_publish_channel(*connection_);
            return;
        }
        if (channel == admin_channel || channel == pull_channel) {
            connection_->open_channel(channel);
            return;
        }
        for (auto& state : subscriptions_)
            if (state->channel == channel) release_channel(*state);
        resume_subscriptions();
    }

    // ---- connecting and recovering --------------------------------------------------------

    void connect_now() {
        Credentials::Resolved credentials;
        if (options_.credentials) {
            credentials = options_.credentials->resolve();
        } else {
            credentials.user = address_.user.value_or("guest");
            credentials.password = address_.password.value_or(address_.user ? "" : "guest");
        }
        auto connection = std::make_unique<Connection>(address_, credentials, options_);
        open_publish_channel(*connection);
        connection->open_channel(admin_channel);
        connection->open_channel(pull_channel);
        frame_max_.store(static_cast<std::size_t>(amqp_get_frame_max(connection->get())));
        connection_ = std::move(connection);
        ++generation_;
        next_free_channel_ = first_consumer_channel;
        free_channels_.clear();
        {
            std::lock_guard lock(state_mutex_);
            blocked_ = BlockedState{};
        }
    }

    void open_publish_channel(Connection& connection) {
        connection.open_channel(publish_channel);
        amqp_confirm_select(connection.get(), publish_channel);
        connection.check(amqp_get_rpc_reply(connection.get()), "turn on publisher confirms", publish_channel);
        next_sequence_ = 1;
    }

    // After a reconnect: the topology again, then every live subscription.
    void restore() {
        for (const auto& exchange : declared_exchanges_) declare_exchange(*connection_, exchange);
        for (const auto& queue : declared_queues_) declare_queue(*connection_, queue);
        for (const auto& binding : declared_bindings_) declare_binding(*connection_, binding);
        for (auto& state : subscriptions_) state->channel = 0;
        resume_subscriptions();
    }

    // Consumes again for every live subscription without a channel. One that fails (its
    // queue deleted while we were away, or a quorum queue still electing its leader after a
    // restart) is left for the next try, a second later; health reports it meanwhile.
    void resume_subscriptions() {
        for (auto& state : subscriptions_) {
            if (state->channel != 0 || state->stopped || state->cancelled_by_broker) continue;
            try {
                start_consuming(*connection_, *state);
            } catch (const TopologyError&) {
                // Retried later; the others go on.
            }
        }
        next_resume_ = Clock::now() + std::chrono::seconds(1);
        note_stopped_queues();
    }

    // What health reports as "stopped reading", kept where callers can read it.
    void note_stopped_queues() {
        std::vector<std::string> stopped;
        for (const auto& state : subscriptions_)
            if (!state->stopped && (state->cancelled_by_broker || state->channel == 0)) stopped.push_back(state->queue);
        std::lock_guard lock(state_mutex_);
        stopped_queues_ = std::move(stopped);
    }

    void drop_connection(const std::string& why, bool was_up) {
        connected_.store(false);
        {
            // A block belongs to the connection that got it: once that connection is gone,
            // publishes wait for the next one (and fail as lost, not as paused) and health
            // says down rather than "up, blocked". A new connection starts unblocked.
            std::lock_guard lock(state_mutex_);
            blocked_ = BlockedState{};
        }
        incoming_.clear();
        for (auto& state : subscriptions_) release_channel(*state);
        fail_pending_publishes("the connection was lost before the broker confirmed it (" + why + ")");
        if (connection_) connection_.reset();
        if (was_up) {
            next_attempt_ = Clock::now() + options_.first_recovery_delay;
            recovery_delay_ = std::min(options_.first_recovery_delay * 2, options_.max_recovery_delay);
            emit({ConnectionEvent::Kind::lost, why, 0});
        }
        wake();  // a publisher may have found the loss: the I/O thread recovers
    }

    void emit(const ConnectionEvent& event) {
        if (!options_.on_event) return;
        try {
            options_.on_event(event);
        } catch (const std::exception&) {
            // An observer's failure must not take the connection down with it.
        }
    }

    // ---- consuming ------------------------------------------------------------------------

    // Settlers live as long as the transport, because Deliveries point at them.
    Settler& new_settler(std::shared_ptr<const SubscriptionState> state) {
        settlers_.push_back(std::make_unique<Settler>(*this, std::move(state)));
        return *settlers_.back();
    }

    amqp_channel_t take_channel() {
        if (!free_channels_.empty()) {
            const amqp_channel_t channel = *free_channels_.begin();
            free_channels_.erase(free_channels_.begin());
            return channel;
        }
        return next_free_channel_++;
    }

    void start_consuming(Connection& connection, SubscriptionState& state) {
        const amqp_channel_t channel = take_channel();
        const std::string what = "consume from queue " + in_quotes(state.queue);
        try {
            connection.open_channel(channel);
            amqp_basic_qos(connection.get(), channel, 0, state.spec.prefetch, 0);
            connection.check(amqp_get_rpc_reply(connection.get()), what, channel);
            TableView arguments(state.spec.arguments);
            amqp_basic_consume(connection.get(), channel, bytes_of(state.queue), bytes_of(state.spec.tag), 0, 0, 0,
                               arguments.get());
            connection.check(amqp_get_rpc_reply(connection.get()), what, channel);
        } catch (const ChannelClosed& closed) {
            free_channels_.insert(channel);
            throw TopologyError(closed.what());
        }
        state.channel = channel;
    }

    void release_channel(SubscriptionState& state) {
        incoming_.erase(state.channel);
        if (state.channel != 0) free_channels_.insert(state.channel);
        state.channel = 0;
    }

public:
    // ---- topology (I/O thread) ------------------------------------------------------------

    void declare_exchange(Connection& connection, const ExchangeDeclaration& exchange) {
        TableView arguments(exchange.arguments);
        amqp_exchange_declare(connection.get(), admin_channel, bytes_of(exchange.name),
                              amqp_cstring_bytes(kind_name(exchange.kind)), 0, exchange.durable ? 1 : 0,
                              exchange.auto_delete ? 1 : 0, 0, arguments.get());
        check_admin(connection, "declare exchange " + in_quotes(exchange.name));
    }

    void declare_queue(Connection& connection, const QueueDeclaration& queue) {
        TableView arguments(queue.arguments);
        amqp_queue_declare(connection.get(), admin_channel, bytes_of(queue.name), 0, queue.durable ? 1 : 0,
                           queue.exclusive ? 1 : 0, queue.auto_delete ? 1 : 0, arguments.get());
        check_admin(connection, "declare queue " + in_quotes(queue.name));
    }

    void declare_binding(Connection& connection, const BindingDeclaration& binding) {
        TableView arguments(binding.arguments);
        amqp_queue_bind(connection.get(), admin_channel, bytes_of(binding.queue), bytes_of(binding.exchange),
                        bytes_of(binding.routing_key), arguments.get());
        check_admin(connection, "bind queue " + in_quotes(binding.queue) + " to exchange " + in_quotes(binding.exchange) +
                                    " on " + in_quotes(binding.routing_key));
    }

    // A refusal closes the admin channel: reopen it, and say what was refused.
    void check_admin(Connection& connection, const std::string& what) {
        try {
            connection.check_reopening(amqp_get_rpc_reply(connection.get()), what, admin_channel);
        } catch (const ChannelClosed& closed) {
            throw TopologyError(closed.what());
        }
    }

    void declare(Connection& connection, const Topology& topology) {
        for (const auto& exchange : topology.exchanges()) {
            declare_exchange(connection, exchange);
            remember(declared_exchanges_, exchange, [&](const auto& e) { return e.name == exchange.name; });
        }
        for (const auto& queue : topology.queues()) {
            declare_queue(connection, queue);
            remember(declared_queues_, queue, [&](const auto& q) { return q.name == queue.name; });
        }
        for (const auto& binding : topology.bindings()) {
            declare_binding(connection, binding);
            remember(declared_bindings_, binding, [&](const auto& b) { return b == binding; });
        }
    }

    template <class T, class Same>
    static void remember(std::vector<T>& list, const T& item, Same same) {
        const auto found = std::find_if(list.begin(), list.end(), same);
        if (found == list.end()) list.push_back(item);
        else *found = item;
    }

    // message count of a queue, or nullopt when it does not exist; creates nothing.
    std::optional<std::uint64_t> passive_declare(Connection& connection, const std::string& queue) {
        const amqp_queue_declare_ok_t* ok =
            amqp_queue_declare(connection.get(), admin_channel, bytes_of(queue), 1, 0, 0, 0, amqp_empty_table);
        try {
            connection.check_reopening(amqp_get_rpc_reply(connection.get()), "ask about queue " + in_quotes(queue),
                                       admin_channel);
        } catch (const ChannelClosed& closed) {
            if (closed.code() == AMQP_NOT_FOUND) return std::nullopt;
            throw;
        }
        return ok->message_count;
    }

    void delete_queue(Connection& connection, const std::string& queue) {
        amqp_queue_delete(connection.get(), admin_channel, bytes_of(queue), 0, 0);
        check_admin(connection, "delete queue " + in_quotes(queue));
        std::erase_if(declared_queues_, [&](const auto& q) { return q.name == queue; });
        std::erase_if(declared_bindings_, [&](const auto& b) { return b.queue == queue; });
    }

private:
    // ---- window of unconfirmed publishes (callers) -------------------------------------------

    // Up to `wanted` slots, waiting up to confirm_timeout for the first; 0 when none came.
    std::size_t take_slots(std::size_t wanted) {
        std::unique_lock lock(window_mutex_);
        const bool free = window_cv_.wait_for(lock, options_.confirm_timeout,
                                              [&] { return in_flight_ < options_.max_outstanding_publishes; });
        if (!free) return 0;
        const std::size_t granted = std::min(wanted, options_.max_outstanding_publishes - in_flight_);
        in_flight_ += granted;
        return granted;
    }

    void give_back_slots(std::size_t count) {
        if (count == 0) return;
        {
            std::lock_guard lock(window_mutex_);
            in_flight_ -= std::min(count, in_flight_);
        }
        window_cv_.notify_all();
    }

    static void fill(InboundMessage& message, const amqp_basic_properties_t& properties) {
        if (properties._flags & AMQP_BASIC_CONTENT_TYPE_FLAG) message.content_type = string_of(properties.content_type);
        if (properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) message.message_id = string_of(properties.message_id);
        if (properties._flags & AMQP_BASIC_REPLY_TO_FLAG) message.reply_to = string_of(properties.reply_to);
        if (properties._flags & AMQP_BASIC_HEADERS_FLAG) {
            try {
                message.headers = table_of(properties.headers);
            } catch (const DecodeError& error) {
                // Handed on without headers for the engine to park: dropping the delivery
                // here would lose it, and throwing would cost the connection.
                message.headers.clear();
                message.decode_failure = error.what();
            }
        }
    }

    Address address_;
    Options options_;
    int wake_fd_ = -1;
    std::thread io_thread_;
    std::thread::id io_thread_id_;

    std::mutex commands_mutex_;
    std::deque<std::function<void(Connection*)>> commands_;
    bool shut_ = false;

    mutable std::mutex state_mutex_;
    BlockedState blocked_;
    std::vector<std::string> stopped_queues_;
    std::atomic<bool> connected_{false};

    std::mutex window_mutex_;
    std::condition_variable window_cv_;
    std::size_t in_flight_ = 0;

    // Held by whoever uses the connection and what follows: the I/O thread, except while it
    // sleeps, or a caller writing a publish or a settlement itself.
    std::mutex io_mutex_;
    std::unique_ptr<Connection> connection_;
    std::uint64_t generation_ = 0;
    Clock::time_point next_resume_{};
    Clock::time_point next_attempt_{};
    std::chrono::milliseconds recovery_delay_{0};
    std::uint64_t next_sequence_ = 1;
    std::atomic<std::size_t> frame_max_{0};  // the connection's, as negotiated; read by callers
    std::map<std::uint64_t, std::shared_ptr<PendingPublish>> unconfirmed_;
    std::map<amqp_channel_t, Incoming> incoming_;
    std::vector<std::shared_ptr<SubscriptionState>> subscriptions_;
    std::deque<std::unique_ptr<Settler>> settlers_;  // live as long as the transport: Deliveries point at them
    Settler pull_settler_{*this, pull_channel};
    amqp_channel_t next_free_channel_ = first_consumer_channel;
    std::set<amqp_channel_t> free_channels_;
    std::vector<ExchangeDeclaration> declared_exchanges_;
    std::vector<QueueDeclaration> declared_queues_;
    std::vector<BindingDeclaration> declared_bindings_;
};

namespace {

class AmqpSubscription final : public Subscription {
public:
    AmqpSubscription(std::shared_ptr<AmqpTransport::Impl> impl, std::shared_ptr<AmqpTransport::Impl::SubscriptionState> state)
        : impl_(std::move(impl)), state_(std::move(state)) {}
    ~AmqpSubscription() override { close(); }

    void stop() override {
        std::lock_guard lock(mutex_);
        if (stopped_) return;
        stopped_ = true;
        impl_->stop(state_);
    }

    void close() override {
        std::lock_guard lock(mutex_);
        if (closed_) return;
        closed_ = stopped_ = true;
        impl_->close_subscription(state_);
    }

private:
    std::mutex mutex_;
    std::shared_ptr<AmqpTransport::Impl> impl_;
    std::shared_ptr<AmqpTransport::Impl::SubscriptionState> state_;
    bool stopped_ = false;
    bool closed_ = false;
};

}  // namespace

AmqpTransport::AmqpTransport(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

AmqpTransport::~AmqpTransport() { close(); }

void AmqpTransport::declare(const Topology& topology) {
    topology.validate();
    impl_->call<bool>("declare a topology", [this, &topology](Connection& connection) {
        impl_->declare(connection, topology);
        return true;
    });
}

PublishResult AmqpTransport::publish(OutboundMessage message) {
    std::vector<OutboundMessage> one;
    one.push_back(std::move(message));
    return std::move(impl_->publish(std::move(one)).front());
}

std::vector<PublishResult> AmqpTransport::publish_batch(std::vector<OutboundMessage> messages) {
    return impl_->publish(std::move(messages));
}

std::unique_ptr<Subscription> AmqpTransport::consume(std::string_view queue, const ConsumeSpec& spec, DeliverFn deliver) {
    return std::make_unique<AmqpSubscription>(impl_, impl_->subscribe(queue, spec, std::move(deliver)));
}

std::optional<Delivery> AmqpTransport::pull(std::string_view queue) {
    return impl_->call<std::optional<Delivery>>(
        "pull from queue " + in_quotes(queue),
        [this, name = std::string(queue)](Connection& connection) { return impl_->pull(connection, name); });
}

std::uint64_t AmqpTransport::queue_depth(std::string_view queue) {
    const auto depth = impl_->call<std::optional<std::uint64_t>>(
        "ask the depth of queue " + in_quotes(queue),
        [this, name = std::string(queue)](Connection& connection) { return impl_->passive_declare(connection, name); });
    if (!depth)
        throw Error("acemq: cannot ask the depth of queue " + in_quotes(queue) + " on " + impl_->address().printable() +
                    ": NOT_FOUND - no such queue; declare it first");
    return *depth;
}

bool AmqpTransport::queue_exists(std::string_view queue) {
    return impl_
        ->call<std::optional<std::uint64_t>>(
            "ask whether queue " + in_quotes(queue) + " exists",
            [this, name = std::string(queue)](Connection& connection) { return impl_->passive_declare(connection, name); })
        .has_value();
}

void AmqpTransport::delete_queue(std::string_view queue) {
    impl_->call<bool>("delete queue " + in_quotes(queue), [this, name = std::string(queue)](Connection& connection) {
        impl_->delete_queue(connection, name);
        return true;
    });
}

void AmqpTransport::close() { impl_->shut_down(); }

BlockedState AmqpTransport::blocked() const { return impl_->blocked(); }
bool AmqpTransport::connected() const { return impl_->connected(); }
std::vector<std::string> AmqpTransport::stopped_queues() const { return impl_->stopped_queues(); }

Health AmqpTransport::check_health(std::chrono::milliseconds timeout) {
    Health report;
    // Down until the broker has answered: the library's Health starts out up (right for
    // transports with no broker to ask), so every early return below must not inherit it.
    report.status = Health::Status::down;
    // Down first: a connection that is gone is down whatever it was told before it went.
    if (!connected()) {
        report.detail = "the connection to " + impl_->address().printable() + " is down";
        return report;
    }
    if (const BlockedState state = blocked(); state.blocked) {
        report.status = Health::Status::up;
        report.blocked = true;
        report.detail = "the broker has blocked this connection; publishing is paused" +
                        (state.reason.empty() ? std::string() : ": " + state.reason);
        return report;
    }
    const auto started = std::chrono::steady_clock::now();
    // A queue that nobody has: asking about it creates nothing.
    const std::string probe = "acemq-health-" + new_uuid();
    try {
        impl_->call<std::optional<std::uint64_t>>(
            "check the connection's health",
            [this, &probe](Connection& connection) { return impl_->passive_declare(connection, probe); }, timeout);
    } catch (const Error& error) {
        report.detail = std::string("the broker did not answer: ") + error.what();
        return report;
    }
    report.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    const std::vector<std::string> cancelled = stopped_queues();
    if (!cancelled.empty()) {
        report.status = Health::Status::degraded;
        report.detail = "these consumers have stopped reading: ";
        for (std::size_t i = 0; i < cancelled.size(); ++i) report.detail += (i == 0 ? "" : ", ") + cancelled[i];
        return report;
    }
    report.status = Health::Status::up;
    return report;
}

std::shared_ptr<AmqpTransport> open(std::string_view url, Options options) {
    Address address = parse_address(url);
    if (options.tls && !address.tls)
        throw InvalidArgument("acemq: TLS settings were given for " + address.printable() +
                              ", which is not encrypted: use an amqps:// URL, or drop the TLS settings");
    if (options.tls && options.tls->certificate() && options.tls->certificate()->empty())
        throw InvalidArgument("acemq: the TLS client certificate path is empty");
    if (options.max_outstanding_publishes == 0)
        throw InvalidArgument("acemq: max_outstanding_publishes must be at least 1");
    if (options.credentials && address.user)
        throw InvalidArgument("acemq: credentials were given both in the URL and in Options for " +
                              address.printable() + "; give them in one place");
    auto impl = std::make_shared<AmqpTransport::Impl>(std::move(address), std::move(options));
    impl->start();
    return std::shared_ptr<AmqpTransport>(new AmqpTransport(std::move(impl)));
}

}  // namespace acemq::amqp
