// A transport's subscriptions: each consumes on a channel of its own, gets its deliveries
// handed to its DeliverFn, and is consumed again on a new connection. Also the settlers
// that ack and nack what was delivered. I/O side only (the I/O thread, or a caller holding
// the I/O lock), except where said; internal.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <acemq/transport.hpp>
#include "amqp/channels.hpp"
#include "amqp/incoming.hpp"
#include "amqp/open_deliveries.hpp"
#include "session/delivery_tags.hpp"

namespace acemq::amqp {

class Connection;

// What a settler needs of its transport: a way to write on the connection.
class SettlementLink {
public:
    // Runs `write` with the connection and its generation: at once when the connection is
    // free, else on the I/O thread; not at all when the transport closed first.
    virtual void write_soon(std::function<void(Connection&, std::uint64_t generation)> write) = 0;
    // Wakes the I/O thread: a subscription's settler has settlements waiting.
    virtual void wake() = 0;

protected:
    ~SettlementLink() = default;
};

// Settles a subscription's deliveries. Each settlement waits here until the I/O thread
// wakes and writes all that wait on the subscription's channel at once, in as few frames as
// OpenDeliveries makes of them: with `multiple`, one basic.ack stands for many. No timer
// holds a settlement back: a lone one wakes the thread at once. Thread-safe: Deliveries
// settle from any thread.
class ConsumerSettler final : public DeliverySettler {
public:
    explicit ConsumerSettler(SettlementLink& link) : link_(link) {}
    void ack(std::uint64_t delivery_tag) override { add(delivery_tag, Outcome::ack); }
    void requeue(std::uint64_t delivery_tag) override { add(delivery_tag, Outcome::requeue); }
    void reject(std::uint64_t delivery_tag) override { add(delivery_tag, Outcome::reject); }

    // Everything waiting, leaving nothing, as the broker's tags of the channel life
    // `generation`; a settlement of another life is left out (the broker gave that message
    // back when its channel went, and its tag may name another message now).
    std::vector<Settlement> take(std::uint64_t generation);
    // The subscription is closed: its channel's unsettled deliveries went back to the queue,
    // and what is settled from now on is dropped.
    void close();

private:
    void add(std::uint64_t delivery_tag, Outcome outcome);

    SettlementLink& link_;
    std::mutex mutex_;                 // guards waiting_ and closed_
    std::vector<Settlement> waiting_;  // each with the Delivery's tag, generation included
    bool closed_ = false;
};

struct SubscriptionState {
    std::string queue;
    ConsumeSpec spec;
    DeliverFn deliver;
    ConsumerSettler* settler = nullptr;
    amqp_channel_t channel = 0;  // 0 while not consuming (lost, or stopped)
    // Of the channel's life (each consume starts one): its Deliveries' tags carry it.
    std::uint64_t generation = 0;
    OpenDeliveries open;  // of the channel's life
    bool stopped = false;
    bool cancelled_by_broker = false;
};

// Settles on a fixed channel (the pull channel), one frame a settlement. Thread-safe.
class Settler final : public DeliverySettler {
public:
    Settler(SettlementLink& link, amqp_channel_t channel) : link_(link), channel_(channel) {}
    void ack(std::uint64_t delivery_tag) override { settle(delivery_tag, Outcome::ack); }
    void requeue(std::uint64_t delivery_tag) override { settle(delivery_tag, Outcome::requeue); }
    void reject(std::uint64_t delivery_tag) override { settle(delivery_tag, Outcome::reject); }

private:
    void settle(std::uint64_t delivery_tag, Outcome outcome);

    SettlementLink& link_;
    amqp_channel_t channel_;
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
    void deliver(Connection& connection, Incoming delivery);
    // Writes the settlements waiting on every subscription's channel.
    void settle_waiting(Connection& connection);
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
    void settle_waiting(Connection& connection, SubscriptionState& state);

    SettlementLink& link_;
    IncomingContent& incoming_;
    ConsumerChannels channels_;
    session::Generations generations_;  // of the channels' lives
    std::vector<std::shared_ptr<SubscriptionState>> states_;
    // Live as long as the transport: Deliveries point at them.
    std::deque<std::unique_ptr<ConsumerSettler>> settlers_;
};

}  // namespace acemq::amqp
