#include "amqp/transport_impl.hpp"

#include <acemq/uuid.hpp>
#include "amqp/wire.hpp"
#include "session/delivery_tags.hpp"

namespace acemq::amqp {

AmqpTransport::Impl::Impl(Address address, Options options, session::Settings session)
    : address_(std::move(address)), options_(std::move(options)), session_(std::move(session)),
      events_("amqp", "amqp transport to " + address_.printable(), session_.on_event),
      window_(session_.max_outstanding_publishes, session_.confirm_timeout),
      backoff_(session_.first_recovery_delay, session_.max_recovery_delay) {}

AmqpTransport::Impl::~Impl() { shut_down(); }

void AmqpTransport::Impl::start() {
    connect_now();  // the first connect is the caller's: its failure is an exception
    connected_.store(true);
    io_thread_ = std::thread([this] { run(); });
    io_thread_id_ = io_thread_.get_id();
}

void AmqpTransport::Impl::shut_down() {
    if (!commands_.shut()) return;
    commands_.wake();
    if (io_thread_.joinable()) io_thread_.join();
    // Whatever was posted after the I/O thread's last look.
    fail_queued_commands();
    std::lock_guard io(io_mutex_);
    connection_.reset();
    connected_.store(false);
}

BlockedState AmqpTransport::Impl::blocked() const {
    std::lock_guard lock(state_mutex_);
    return blocked_;
}

std::vector<std::string> AmqpTransport::Impl::stopped_queues() const {
    std::lock_guard lock(state_mutex_);
    return stopped_queues_;
}

void AmqpTransport::Impl::write_soon(std::function<void(Connection&, std::uint64_t generation)> write) {
    {
        std::unique_lock io(io_mutex_, std::try_to_lock);
        if (io.owns_lock() && connection_) {
            try {
                write(*connection_, generation_);
            } catch (const std::exception& lost) {
                drop_connection(lost.what(), true);
            }
            return;
        }
    }
    post([this, write = std::move(write)](Connection* connection) {
        if (connection != nullptr) write(*connection, generation_);
    });
}

std::shared_ptr<SubscriptionState> AmqpTransport::Impl::subscribe(std::string_view queue, const ConsumeSpec& spec,
                                                                  DeliverFn deliver) {
    auto state = std::make_shared<SubscriptionState>();
    state->queue = std::string(queue);
    state->spec = spec;
    if (state->spec.prefetch == 0) state->spec.prefetch = 20;
    if (state->spec.tag.empty()) state->spec.tag = "acemq-" + state->queue + "-" + new_uuid().substr(0, 8);
    state->deliver = std::move(deliver);
    call<bool>("consume from queue " + in_quotes(queue), [this, state](Connection& connection) {
        subscriptions_.add(connection, state);
        return true;
    });
    return state;
}

void AmqpTransport::Impl::stop(const std::shared_ptr<SubscriptionState>& state) {
    if (std::this_thread::get_id() == io_thread_id_)
        throw UsageError("acemq: cannot stop a subscription from its own delivery callback");
    try {
        on_io_thread<bool>(
            "stop consuming from queue " + in_quotes(state->queue),
            [this, state](Connection* connection) {
                subscriptions_.stop(connection, *state);
                return true;
            },
            session_.call_timeout);
    } catch (const ConnectionLost&) {
        // The connection went during the cancel: the broker's consumer went with it and its
        // unsettled deliveries went back to the queue, so the subscription is stopped (marked
        // so before the cancel, which keeps recovery from resuming it). Throwing here reached
        // ~Consumer, which cannot throw: the process ended in std::terminate.
    }
}

void AmqpTransport::Impl::close_subscription(const std::shared_ptr<SubscriptionState>& state) {
    on_io_thread<bool>(
        "close the subscription to queue " + in_quotes(state->queue),
        [this, state](Connection* connection) {
            // Closed with its consumer in place, not cancelled first: RabbitMQ puts a closing
            // channel's unacked messages back before it answers the close only for the queues
            // the channel still consumes from; for a cancelled consumer's queue that happens
            // when the channel's process has ended, a moment after close() returned, and a
            // pull right after found them missing (amqp-settlements under ASan).
            state->stopped = true;
            subscriptions_.close(connection, state);
            note_stopped_queues();
            return true;
        },
        session_.call_timeout);
}

std::optional<Delivery> AmqpTransport::Impl::pull(Connection& connection, const std::string& queue) {
    std::optional<Connection::Pulled> pulled = connection.get(pull_channel, queue);
    if (!pulled) return std::nullopt;
    return Delivery(std::move(pulled->message), pull_settler_, session::tag_for(generation_, pulled->delivery_tag));
}

}  // namespace acemq::amqp
