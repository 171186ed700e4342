// Broker::Impl: consumers and what they are handed. Subscribing and pulling, pushing
// ready messages round-robin to consumers with room under their prefetch, settling
// (ack, requeue to the head, reject into dead-lettering), and closing a subscription,
// whose unsettled deliveries go back to their queues.
#include <algorithm>

#include <acemq/error.hpp>
#include "inproc/broker_impl.hpp"
#include "inproc/quoted.hpp"

namespace acemq::inproc {

using detail::Consumer;
using detail::in_quotes;
using detail::Queue;
using detail::StoredMessage;

class Broker::ConsumerSubscription final : public Subscription {
public:
    ConsumerSubscription(std::shared_ptr<Broker> broker, std::uint64_t consumer)
        : broker_(std::move(broker)), consumer_(consumer) {}

    ~ConsumerSubscription() override {
        try {
            close();
        } catch (const Error&) {
            // Destroyed inside a DeliverFn, where the broker refuses calls: the consumer
            // stays until its connection closes, which hands its deliveries back.
        }
    }

    void stop() override { broker_->impl_->stop(consumer_); }
    void close() override { broker_->impl_->close_consumer(consumer_); }

private:
    std::shared_ptr<Broker> broker_;  // deliveries settle through it, so it must outlive them here
    std::uint64_t consumer_;
};

std::unique_ptr<Subscription> Broker::Impl::consume(ConnectionId connection, std::string_view queue_name,
                                                    const ConsumeSpec& spec, DeliverFn deliver) {
    Guard guard(*this, "consume");
    const std::shared_ptr<Queue> queue = existing_queue(connection, queue_name, "consume from");
    if (!deliver)
        throw InvalidArgument("acemq: cannot consume from queue " + in_quotes(queue_name) +
                              " without a DeliverFn; pass the function that queues deliveries");
    if (!spec.tag.empty())
        for (const auto& [id, other] : consumers_)
            if (other->connection() == connection && other->tag() == spec.tag)
                throw InvalidArgument("acemq: cannot consume from queue " + in_quotes(queue_name) +
                                      ": NOT_ALLOWED - consumer tag " + in_quotes(spec.tag) +
                                      " is in use on this connection; pick another or leave it empty");
    std::int64_t stream_position = 0;
    if (queue->is_stream()) {
        // RabbitMQ's rule: a stream's consumer is credited by its prefetch, so it needs one.
        if (spec.prefetch == 0)
            throw Error("acemq: cannot consume from stream " + in_quotes(queue_name) +
                        ": PRECONDITION_FAILED - consumer prefetch count is not set for stream " +
                        in_quotes(queue_name) + "; give the consumer a prefetch above 0");
        retain(*queue);
        stream_position = stream_start(*queue, spec.arguments);
    }
    const std::uint64_t id = next_id_++;
    auto consumer = std::make_unique<Consumer>(id, connection, queue, spec.tag, spec.prefetch, std::move(deliver));
    consumer->set_stream_position(stream_position);
    auto subscription = std::make_unique<ConsumerSubscription>(owner_.shared_from_this(), id);
    queue->add_consumer(*consumer);
    consumers_.emplace(id, std::move(consumer));
    refresh(*queue);
    return subscription;
}

std::optional<Delivery> Broker::Impl::pull(ConnectionId connection, std::string_view queue_name) {
    Guard guard(*this, "pull");
    const std::shared_ptr<Queue> queue = existing_queue(connection, queue_name, "pull from");
    if (queue->is_stream())
        throw Error("acemq: cannot pull from stream " + in_quotes(queue_name) +
                    ": NOT_IMPLEMENTED - basic.get not supported by stream queues; consume it with a prefetch "
                    "and an x-stream-offset argument instead");
    if (queue->policy().ttl) expire_due(*queue);
    if (queue->empty()) {
        sync_timer(*queue);
        return std::nullopt;
    }
    Consumer& pulls = *consumers_.at(connections_.at(connection).pulls);
    StoredMessage stored = queue->take_head();
    sync_timer(*queue);
    InboundMessage shared = stored.message;
    const std::uint64_t tag = pulls.hand_out(queue, std::move(stored));
    delivered_.fetch_add(1, std::memory_order_relaxed);
    return Delivery(std::move(shared), *this, tag);
}

void Broker::Impl::stop(std::uint64_t consumer) {
    Guard guard(*this, "stop a subscription");
    if (auto found = consumers_.find(consumer); found != consumers_.end()) stop_consumer(*found->second);
}

void Broker::Impl::close_consumer(std::uint64_t consumer) {
    Guard guard(*this, "close a subscription");
    close_consumer_locked(consumer);
}

void Broker::Impl::ack(std::uint64_t tag) { settle(tag, Settlement::ack); }
void Broker::Impl::requeue(std::uint64_t tag) { settle(tag, Settlement::requeue); }
void Broker::Impl::reject(std::uint64_t tag) { settle(tag, Settlement::reject); }

// After messages came back to a queue or a consumer got room: expire, deliver, re-arm.
void Broker::Impl::refresh(Queue& queue) {
    if (queue.deleted()) return;
    if (queue.policy().ttl) expire_due(queue);
    dispatch(queue);
    sync_timer(queue);
}

void Broker::Impl::dispatch(Queue& queue) {
    if (queue.is_stream()) {
        dispatch_stream(queue);
        return;
    }
    while (!queue.empty() && queue.has_consumers()) {
        Consumer* chosen = queue.next_with_room();
        if (chosen == nullptr) return;
        StoredMessage stored = queue.take_head();
        InboundMessage shared = stored.message;
        const std::uint64_t tag = chosen->hand_out(chosen->queue(), std::move(stored));
        delivered_.fetch_add(1, std::memory_order_relaxed);
        // A DeliverFn that throws is stopped, and this may be some other thread's publish:
        // the error stays here, and the delivery comes back when its subscription closes.
        if (!chosen->deliver(Delivery(std::move(shared), *this, tag))) stop_consumer(*chosen);
    }
}

void Broker::Impl::settle(std::uint64_t tag, Settlement settlement) {
    Guard guard(*this, settlement == Settlement::ack ? "ack" : "nack");
    const auto found = consumers_.find(Consumer::id_of(tag));
    std::optional<detail::Unsettled> settled;
    if (found != consumers_.end()) settled = found->second->settle(tag);
    if (!settled)
        throw UsageError("acemq: cannot " + std::string(settlement == Settlement::ack ? "ack" : "nack") + " delivery " +
                         std::to_string(tag) + " on " + detail::broker_in_errors(name_) +
                         ": PRECONDITION_FAILED - unknown delivery tag; its subscription or transport was closed, "
                         "which handed it back to its queue. Settle deliveries before closing what they came from");
    Consumer& consumer = *found->second;
    Queue& queue = *settled->queue;
    if (settlement == Settlement::ack) acked_.fetch_add(1, std::memory_order_relaxed);
    // A stream's reads take nothing from it: every settlement, ack, requeue or reject, only
    // gives the consumer room again, as in RabbitMQ (no requeue, no dead-lettering).
    if (queue.is_stream()) {
        if (consumer.queue()) refresh(*consumer.queue());
        return;
    }
    if (settlement == Settlement::ack && settled->stored.row != 0 && queue.stored_id() != 0 && !queue.deleted()) {
        const std::uint64_t deleted = record(detail::journal::DeleteMessage{settled->stored.row});
        if (const auto connection = connections_.find(consumer.connection());
            connection != connections_.end() && connection->second.acks_wait)
            guard.wait_for_commit(deleted);
    }
    if (settlement == Settlement::requeue && !queue.deleted())
        queue.requeue(std::move(settled->stored));
    else if (settlement == Settlement::reject && !queue.deleted())
        dead_letter(queue, std::move(settled->stored), "rejected");
    if (settled->queue != consumer.queue()) refresh(queue);  // a pull: its queue may have got it back
    if (consumer.queue()) refresh(*consumer.queue());        // the consumer has room again
}

void Broker::Impl::stop_consumer(Consumer& consumer) {
    if (!consumer.active()) return;
    consumer.deactivate();
    if (consumer.queue()->remove_consumer(consumer)) remove_queue(consumer.queue());
}

void Broker::Impl::close_consumer_locked(std::uint64_t id) {
    const auto found = consumers_.find(id);
    if (found == consumers_.end()) return;
    const std::unique_ptr<Consumer> consumer = std::move(found->second);
    consumers_.erase(found);
    stop_consumer(*consumer);
    // Back to the head of their queues, last first, so they stand in the order they were
    // handed out.
    std::vector<detail::Unsettled> unsettled = consumer->take_unsettled();
    std::vector<std::shared_ptr<Queue>> touched;
    for (auto entry = unsettled.rbegin(); entry != unsettled.rend(); ++entry) {
        if (entry->queue->deleted() || entry->queue->is_stream()) continue;
        entry->queue->requeue(std::move(entry->stored));
        if (std::find(touched.begin(), touched.end(), entry->queue) == touched.end()) touched.push_back(entry->queue);
    }
    for (const auto& queue : touched) refresh(*queue);
}

}  // namespace acemq::inproc
