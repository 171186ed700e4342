// The state of one embedded broker and the operations that span its parts. The parts
// (exchange.hpp, queue.hpp, consumer.hpp) each keep their own records; Broker::Impl owns
// them all, looks them up by name or id, and moves messages between them. Its operations
// are spread over files named for what they do:
//   broker.cpp    the public Broker, connections, the lock (Guard)
//   topology.cpp  declaring, binding, inspecting and deleting
//   routing.cpp   publishing, routing and dead-lettering
//   dispatch.cpp  consuming, pulling, handing out and settling deliveries
//   expiry.cpp    TTL: expiring a queue's head and keeping its timer armed
//
// Threads: name() and clock() never change; every other public member takes the broker's
// lock (Guard) and refuses a call from inside a DeliverFn; the private ones expect it held.
// Internal to the inproc broker.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <acemq/inproc.hpp>
#include "inproc/consumer.hpp"
#include "inproc/exchange.hpp"
#include "inproc/queue.hpp"
#include "inproc/topic_routes.hpp"

namespace acemq::inproc {

class Broker::Impl final : public DeliverySettler {
public:
    Impl(Broker& owner, std::string name, std::shared_ptr<Clock> clock);
    ~Impl();  // cancels the expiry timers still armed

    const std::string& name() const noexcept { return name_; }
    const std::shared_ptr<Clock>& clock() const noexcept { return clock_; }

    ConnectionId open_connection();
    void close_connection(ConnectionId connection);

    void declare(ConnectionId connection, const Topology& topology);
    void declare_exchange(const ExchangeDeclaration& asked);
    void declare_queue(ConnectionId connection, const QueueDeclaration& asked);
    void bind(ConnectionId connection, const BindingDeclaration& asked);
    std::uint64_t queue_depth(ConnectionId connection, std::string_view queue_name);
    bool queue_exists(ConnectionId connection, std::string_view queue_name);
    void delete_queue(ConnectionId connection, std::string_view queue_name);

    PublishResult publish(OutboundMessage message);

    std::unique_ptr<Subscription> consume(ConnectionId connection, std::string_view queue_name, const ConsumeSpec& spec,
                                          DeliverFn deliver);
    std::optional<Delivery> pull(ConnectionId connection, std::string_view queue_name);
    void stop(std::uint64_t consumer);
    void close_consumer(std::uint64_t consumer);
    void ack(std::uint64_t tag) override;
    void nack(std::uint64_t tag, bool requeue) override;

    // What a queue's timer runs: expires its due head, unless the queue went or the timer
    // was superseded since it was armed (`generation`).
    void on_timer(const std::weak_ptr<detail::Queue>& target, std::uint64_t generation);

private:
    class Guard;
    enum class Settlement { ack, requeue, reject };

    // topology.cpp
    void require_open(ConnectionId connection, const std::string& what) const;
    void require_access(const detail::Queue& queue, ConnectionId connection, std::string_view action) const;
    const std::shared_ptr<detail::Queue>& existing_queue(ConnectionId connection, std::string_view name,
                                                         std::string_view action);
    void remove_queue(std::shared_ptr<detail::Queue> queue);

    // routing.cpp
    void route(const detail::Exchange& exchange, std::string_view key, std::vector<detail::Queue*>& into);
    void enqueue(detail::Queue& queue, detail::StoredMessage&& stored);
    void dead_letter(detail::Queue& from, detail::StoredMessage&& stored, std::string_view reason);

    // dispatch.cpp
    void refresh(detail::Queue& queue);
    void dispatch(detail::Queue& queue);
    void settle(std::uint64_t tag, Settlement settlement);
    void stop_consumer(detail::Consumer& consumer);
    void close_consumer_locked(std::uint64_t id);

    // expiry.cpp
    void expire_due(detail::Queue& queue);
    void sync_timer(detail::Queue& queue);
    void retire_timer(detail::Queue& queue);

    Broker& owner_;
    const std::string name_;
    const std::shared_ptr<Clock> clock_;

    // Guards everything below.
    std::mutex mutex_;
    detail::StringMap<std::unique_ptr<detail::Exchange>> exchanges_;
    detail::StringMap<std::shared_ptr<detail::Queue>> queues_;
    std::unordered_map<std::uint64_t, std::unique_ptr<detail::Consumer>> consumers_;
    std::unordered_map<ConnectionId, std::uint64_t> connections_;  // → the consumer id of its pulls
    std::uint64_t next_id_ = 1;                                    // connections and consumers alike
    std::uint64_t route_epoch_ = 0;                                // the mark of the latest routing
    std::vector<detail::Queue*> routed_;                           // publish's routing result, kept to reuse its memory
    std::vector<Clock::TimerId> retired_timers_;                   // to cancel once the lock is let go (Guard)
};

// Holds the broker lock for one operation; on the way out, after unlocking, cancels the
// expiry timers the operation retired. Cancelling under the lock could deadlock: a clock's
// cancel waits for a firing timer, whose action waits for this lock.
class Broker::Impl::Guard {
public:
    Guard(Impl& impl, std::string_view action);
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard();

private:
    Impl& impl_;
    std::unique_lock<std::mutex> lock_;
};

}  // namespace acemq::inproc
