// A transport's subscriptions: each consumes on a channel of its own, gets its deliveries
// handed to its DeliverFn, and is consumed again on a new connection. Also the settlers
// that ack and nack what was delivered. I/O side only (the I/O thread, or a caller holding
// the I/O lock), except where said; internal.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <acemq/transport.hpp>
#include "amqp/channels.hpp"
#include "amqp/incoming.hpp"

namespace acemq::amqp {

class Connection;

// What a settler needs of its transport: a way to write on the connection.
class SettlementLink {
public:
    // Runs `write` with the connection and its generation: at once when the connection is
    // free, else on the I/O thread; not at all when the transport closed first.
    virtual void write_soon(std::function<void(Connection&, std::uint64_t generation)> write) = 0;

protected:
    ~SettlementLink() = default;
};

class Settler;

struct SubscriptionState {
    std::string queue;
    ConsumeSpec spec;
    DeliverFn deliver;
    Settler* settler = nullptr;
    amqp_channel_t channel = 0;  // 0 while not consuming (lost, or stopped)
    bool stopped = false;
    bool cancelled_by_broker = false;
};

// Settles on a fixed channel (the pull channel), or on whichever channel its subscription
// has now. Thread-safe: Deliveries settle from any thread.
class Settler final : public DeliverySettler {
public:
    Settler(SettlementLink& link, amqp_channel_t channel) : link_(link), fixed_channel_(channel) {}
    Settler(SettlementLink& link, std::shared_ptr<const SubscriptionState> subscription)
        : link_(link), fixed_channel_(0), subscription_(std::move(subscription)) {}
    void ack(std::uint64_t delivery_tag) override { settle(delivery_tag, true, false); }
    void requeue(std::uint64_t delivery_tag) override { settle(delivery_tag, false, true); }
    void reject(std::uint64_t delivery_tag) override { settle(delivery_tag, false, false); }

private:
    void settle(std::uint64_t delivery_tag, bool ack, bool requeue);

    SettlementLink& link_;
    amqp_channel_t fixed_channel_;
    std::shared_ptr<const SubscriptionState> subscription_;  // read under the I/O lock
};

class Subscriptions {
public:
    // `incoming` is the connection's content being put together: a channel given up drops
    // its share.
    Subscriptions(SettlementLink& link, IncomingContent& incoming) : link_(link), incoming_(incoming) {}

    // Consumes for `state` and keeps it; TopologyError when the broker refuses.
    void add(Connection& connection, std::shared_ptr<SubscriptionState> state);
    // Cancels its consumer (when there is a connection): deliveries that still arrive go
    // straight back to the queue.
    void stop(Connection* connection, SubscriptionState& state);
    // Gives its channel up and forgets it; its settler stays (Deliveries point at it).
    void close(Connection* connection, const std::shared_ptr<SubscriptionState>& state);

    bool empty() const noexcept { return states_.empty(); }

    // Hands `delivery` to the subscription on its channel (a stopped one gives it back).
    void deliver(Connection& connection, Incoming delivery, std::uint64_t generation);
    // basic.cancel from the broker: the queue on that channel was deleted.
    void cancelled_by_broker(amqp_channel_t channel);
    // The broker closed a consumer channel: its subscription waits for resume().
    void channel_closed(amqp_channel_t channel);

    // A new connection: every channel is unused and no subscription consumes.
    void on_new_connection();
    // The connection is going or gone: no subscription consumes.
    void release_all();
    // Consumes again for every live subscription without a channel. One that fails (its
    // queue deleted while we were away, or a quorum queue still electing its leader after a
    // restart) is left for the next resume; stopped_queues() reports it meanwhile.
    void resume(Connection& connection);
    // Queues whose live subscriptions deliver nothing now (cancelled, or not consuming).
    std::vector<std::string> stopped_queues() const;

private:
    void start_consuming(Connection& connection, SubscriptionState& state);
    void release(SubscriptionState& state);

    SettlementLink& link_;
    IncomingContent& incoming_;
    ConsumerChannels channels_;
    std::vector<std::shared_ptr<SubscriptionState>> states_;
    std::deque<std::unique_ptr<Settler>> settlers_;  // live as long as the transport: Deliveries point at them
};

}  // namespace acemq::amqp
