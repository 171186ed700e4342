// The embedded broker: RabbitMQ's routing and queue semantics, where the AceMQ contract
// depends on them, inside one process and with no threads of its own. It exists so the
// engine's whole behaviour (retry rungs that really come back, dead-letter queues,
// redelivery, prefetch) runs in a unit test or an edge box without RabbitMQ; a test that
// passes here and fails on RabbitMQ is a bug here ("not kinder than RabbitMQ").
//
// What it does, as RabbitMQ does:
//  - exchanges: direct, topic (`*` one word, `#` zero or more), fanout, and the default
//    exchange "" (routes to the queue named by the routing key; cannot be bound). Headers
//    exchanges are refused at declare with a TopologyError.
//  - redeclaration with other flags or arguments: TopologyError "PRECONDITION_FAILED - ..."
//    naming every difference; an identical redeclaration is a no-op.
//  - queues: FIFO, round-robin over consumers, a prefetch per consumer, requeue to the head
//    marked redelivered, exclusive queues owned by one connection, auto-delete queues that
//    go when their last consumer does.
//  - x-message-ttl with x-dead-letter-exchange / -routing-key: an expired or rejected
//    message is republished through the dead-letter exchange with an `x-death` header
//    (newest first; count, reason, queue, exchange, routing-keys, time as a timestamp) and
//    x-first-death-* / x-last-death-*. A message that would expire back into a queue it
//    already died in, with no rejection on the way, is dropped (RabbitMQ's cycle rule). A
//    dead-letter exchange that does not exist drops the message.
//    Expiry is driven by the broker's Clock, so a ManualClock runs a five-minute rung in
//    microseconds. Like RabbitMQ, only the head of a queue expires: a message requeued
//    behind an older one waits its turn. Handed-out messages never expire; requeued ones
//    keep their first enqueue time.
//  - mandatory publishes that reach no queue come back routed=false, "312 NO_ROUTE";
//    others that reach no queue are dropped. A publish to an exchange that does not exist
//    comes back unconfirmed (refused), "404 NOT_FOUND - no exchange '...'", where RabbitMQ
//    closes the channel. Every other publish is confirmed.
// What it does not: persistence, x-max-length / x-expires / x-overflow / priorities
// (recorded as arguments, never enforced), per-message expiration, streams, alternate
// exchanges, exchange-to-exchange bindings, the predeclared amq.* exchanges, consumer
// arguments (ConsumeSpec::arguments is ignored), server-named queues.
//
// Threads: every member is safe to call from any thread; one mutex guards the broker.
// Deliveries are pushed by calling the consumer's DeliverFn on the thread whose publish,
// settlement, subscription or timer made them possible, with that lock held: a DeliverFn
// must queue the delivery and return, and must not block (a buffer as large as the
// prefetch never fills). A DeliverFn that calls back into any inproc broker gets an
// acemq::Error instead of a deadlock; a DeliverFn that throws is stopped (no further
// deliveries) and its delivery returns to the queue when its subscription closes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <acemq/clock.hpp>
#include <acemq/topology.hpp>
#include <acemq/transport.hpp>

namespace acemq::inproc {

class Broker;

// The live broker named `name`, or a new one when none is alive: every transport that
// names it shares it, and it lives while any of them (or any holder of the pointer) does.
// `clock` drives message expiry; nullptr means acemq::system_clock() for a new broker and
// "whatever it has" for an existing one. Throws InvalidArgument when the broker exists
// with a different clock. A test makes the broker with a ManualClock first and keeps the
// pointer; open_transport("inproc://name") then finds it.
std::shared_ptr<Broker> broker(std::string_view name, std::shared_ptr<Clock> clock = nullptr);

class Broker : public std::enable_shared_from_this<Broker> {
    struct Key {
        explicit Key() = default;
    };

public:
    // A connection owns the exclusive queues it declares, the messages it pulled and its
    // subscriptions; closing it hands back what it had unsettled and deletes those queues.
    using ConnectionId = std::uint64_t;

    Broker(Key, std::string name, std::shared_ptr<Clock> clock);  // made by broker() only
    ~Broker();
    Broker(const Broker&) = delete;
    Broker& operator=(const Broker&) = delete;

    const std::string& name() const noexcept;
    const std::shared_ptr<Clock>& clock() const noexcept;

    ConnectionId open_connection();
    // Closes the connection's subscriptions (their unsettled deliveries go back to their
    // queues, redelivered), returns its unsettled pulls, deletes its exclusive queues.
    // Idempotent. The members taking a ConnectionId refuse a closed one with acemq::Error.
    void close_connection(ConnectionId connection);

    // The members below mirror Transport (see transport.hpp for their contract); errors
    // are acemq::Error (TopologyError for declarations) and name RabbitMQ's reply code.
    // Deliveries are settled through this broker: settle them before the last owner of
    // the broker lets go of it.
    void declare(ConnectionId connection, const Topology& topology);
    void declare_exchange(const ExchangeDeclaration& exchange);
    void declare_queue(ConnectionId connection, const QueueDeclaration& queue);
    void bind(ConnectionId connection, const BindingDeclaration& binding);

    PublishResult publish(OutboundMessage message);

    // prefetch 0: no limit. A non-empty tag must be unique on the connection.
    std::unique_ptr<Subscription> consume(ConnectionId connection, std::string_view queue, const ConsumeSpec& spec,
                                          DeliverFn deliver);
    std::optional<Delivery> pull(ConnectionId connection, std::string_view queue);

    // Each throws acemq::Error (NOT_FOUND) for a queue that does not exist, except
    // queue_exists and delete_queue; all throw RESOURCE_LOCKED for another connection's
    // exclusive queue.
    std::uint64_t queue_depth(ConnectionId connection, std::string_view queue);
    bool queue_exists(ConnectionId connection, std::string_view queue);
    // Drops its messages and cancels its consumers; their unsettled deliveries can still
    // be settled, and go nowhere.
    void delete_queue(ConnectionId connection, std::string_view queue);

private:
    class Impl;
    class ConsumerSubscription;
    friend std::shared_ptr<Broker> broker(std::string_view, std::shared_ptr<Clock>);

    std::unique_ptr<Impl> impl_;
};

}  // namespace acemq::inproc
