// The face of the AMQP transport: AmqpTransport's members, its subscriptions, open() and
// state(). The work is done by AmqpTransport::Impl
// (transport_impl.hpp) and the parts it owns.

#include <acemq/amqp.hpp>
#include <acemq/error.hpp>
#include <acemq/uuid.hpp>
#include "amqp/transport_impl.hpp"
#include "amqp/wire.hpp"

namespace acemq::amqp {

namespace {

class AmqpSubscription final : public Subscription {
public:
    AmqpSubscription(std::shared_ptr<AmqpTransport::Impl> impl, std::shared_ptr<SubscriptionState> state)
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
    std::mutex mutex_;  // guards stopped_ and closed_, held until the I/O thread has done it
    std::shared_ptr<AmqpTransport::Impl> impl_;
    std::shared_ptr<SubscriptionState> state_;
    bool stopped_ = false;
    bool closed_ = false;
};

}  // namespace

AmqpTransport::AmqpTransport(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

AmqpTransport::~AmqpTransport() { close(); }

void AmqpTransport::declare(const Topology& topology) {
    topology.validate();
    impl_->call<bool>("declare a topology", [this, &topology](Connection& connection) {
        impl_->topology().declare(connection, topology);
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

std::unique_ptr<Subscription> AmqpTransport::consume(std::string_view queue, const ConsumeSpec& spec,
                                                     DeliverFn deliver) {
    return std::make_unique<AmqpSubscription>(impl_, impl_->subscribe(queue, spec, std::move(deliver)));
}

std::optional<Delivery> AmqpTransport::pull(std::string_view queue) {
    return impl_->call<std::optional<Delivery>>(
        "pull from queue " + in_quotes(queue),
        [this, name = std::string(queue)](Connection& connection) { return impl_->pull(connection, name); });
}

std::uint64_t AmqpTransport::queue_depth(std::string_view queue) {
    const auto depth = impl_->call<std::optional<std::uint64_t>>(
        "ask the depth of queue " + in_quotes(queue), [this, name = std::string(queue)](Connection& connection) {
            return impl_->topology().message_count(connection, name);
        });
    if (!depth)
        throw Error("acemq: cannot ask the depth of queue " + in_quotes(queue) + " on " + impl_->address().printable() +
                    ": NOT_FOUND - no such queue; declare it first");
    return *depth;
}

bool AmqpTransport::queue_exists(std::string_view queue) {
    return impl_
        ->call<std::optional<std::uint64_t>>("ask whether queue " + in_quotes(queue) + " exists",
                                             [this, name = std::string(queue)](Connection& connection) {
                                                 return impl_->topology().message_count(connection, name);
                                             })
        .has_value();
}

void AmqpTransport::delete_queue(std::string_view queue) {
    impl_->call<bool>("delete queue " + in_quotes(queue), [this, name = std::string(queue)](Connection& connection) {
        impl_->topology().delete_queue(connection, name);
        return true;
    });
}

void AmqpTransport::close() { impl_->shut_down(); }

ConnectionState AmqpTransport::state() const {
    BlockedState blocked = impl_->blocked();
    return ConnectionState{.connected = impl_->connected(),
                           .blocked = blocked.blocked,
                           .blocked_reason = std::move(blocked.reason),
                           .stopped_queues = impl_->stopped_queues()};
}

ConnectionState state(const Transport& transport) {
    const auto* amqp = dynamic_cast<const AmqpTransport*>(&transport);
    if (amqp == nullptr)
        throw InvalidArgument("acemq: amqp::state asks about a transport amqp::open made; this one is \"" +
                              transport.describe().name + "\"");
    return amqp->state();
}

Health AmqpTransport::check_health(std::chrono::milliseconds timeout) {
    Health report;
    // Down until the broker has answered: the library's Health starts out up (right for
    // transports with no broker to ask), so every early return below must not inherit it.
    report.status = Health::Status::down;
    // Down first: a connection that is gone is down whatever it was told before it went.
    if (impl_->shut()) {
        report.detail = "the connection has been closed";
        return report;
    }
    if (!impl_->connected()) {
        report.detail = "the connection to " + impl_->address().printable() + " is down";
        return report;
    }
    if (const BlockedState state = impl_->blocked(); state.blocked) {
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
            [this, &probe](Connection& connection) { return impl_->topology().message_count(connection, probe); },
            timeout);
    } catch (const Error& error) {
        report.detail = std::string("the broker did not answer: ") + error.what();
        return report;
    }
    report.round_trip =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    const std::vector<std::string> cancelled = impl_->stopped_queues();
    if (!cancelled.empty()) {
        report.status = Health::Status::degraded;
        report.stopped_reading = cancelled;
        report.detail = "these consumers have stopped reading: ";
        for (std::size_t i = 0; i < cancelled.size(); ++i) report.detail += (i == 0 ? "" : ", ") + cancelled[i];
        return report;
    }
    report.status = Health::Status::up;
    return report;
}

void AmqpTransport::measure_connection(std::shared_ptr<Metrics> metrics) { impl_->events().measure(metrics); }

TransportInfo AmqpTransport::describe() const {
    const Address& address = impl_->address();
    TransportInfo info{.name = "amqp",
                       .messaging_system = "rabbitmq",
                       .address = address.printable(),
                       .capabilities = {"confirms", "quorum-queues", "blocked-connections"},
                       .max_properties_bytes = property_room(impl_->frame_max())};
    if (address.tls) info.capabilities.push_back("tls");
    return info;
}

std::shared_ptr<Transport> open(std::string_view url, Options options) {
    Address address = parse_address(url);
    if (options.tls && !address.tls)
        throw InvalidArgument("acemq: TLS settings were given for " + address.printable() +
                              ", which is not encrypted: use an amqps:// URL, or drop the TLS settings");
    if (options.tls && options.tls->certificate() && options.tls->certificate()->empty())
        throw InvalidArgument("acemq: the TLS client certificate path is empty");
    session::Settings session = session::settle(options.session,
                                                {.connect_timeout = std::chrono::seconds(30),
                                                 .heartbeat = std::chrono::seconds(30),
                                                 .first_recovery_delay = std::chrono::seconds(1),
                                                 .max_recovery_delay = std::chrono::seconds(30)},
                                                "amqp::Options");
    // AMQP negotiates heartbeats in whole seconds: a remainder would be dropped unseen.
    if (session.heartbeat.count() < 0 || session.heartbeat % std::chrono::seconds(1) != std::chrono::milliseconds(0))
        throw InvalidArgument(
            "acemq: amqp::Options session.heartbeat is " + std::to_string(session.heartbeat.count()) +
            " ms; AMQP negotiates heartbeats in whole seconds: give a multiple of 1000 ms (0 for none)");
    if (options.credentials && address.user)
        throw InvalidArgument("acemq: credentials were given both in the URL and in Options for " +
                              address.printable() + "; give them in one place");
    auto impl = std::make_shared<AmqpTransport::Impl>(std::move(address), std::move(options), std::move(session));
    impl->start();
    return std::make_shared<AmqpTransport>(std::move(impl));
}

}  // namespace acemq::amqp
