// Broker::Impl: publishing, routing a message to its queues, and dead-lettering (a
// message republished through its queue's dead-letter exchange).
#include <condition_variable>
#include <mutex>

#include <acemq/error.hpp>
#include "inproc/broker_impl.hpp"
#include "inproc/dead_letter.hpp"
#include "inproc/quoted.hpp"

namespace acemq::inproc {

using detail::Exchange;
using detail::Queue;
using detail::StoredMessage;

namespace {

PublishResult confirmed() { return PublishResult{.confirmed = true}; }

PublishResult not_routed(bool mandatory) {
    if (mandatory) return PublishResult{.confirmed = true, .routed = false, .return_reason = "312 NO_ROUTE"};
    return confirmed();  // RabbitMQ drops it and confirms: no return without mandatory
}

}  // namespace

std::variant<StoredMessage, PublishResult> Broker::Impl::stored_of(OutboundMessage&& message) {
    const bool persistent = message.persistent;
    try {
        return StoredMessage{.message = released_->make(std::move(message)), .persistent = persistent};
    } catch (const InvalidArgument& error) {
        // Refused, as RabbitMQ refuses a message past its limits; a batch goes on with the next.
        return PublishResult{.return_reason = error.what(), .why = PublishResult::Unconfirmed::refused};
    }
}

PublishResult Broker::Impl::publish(OutboundMessage message) {
    released_->free_released();
    if (detail::Journal::on_writer_thread())
        throw UsageError("acemq: cannot publish to " + detail::broker_in_errors(name_) +
                         " and wait from a ConfirmFn, on the writer thread that makes the commit; publish with "
                         "a ConfirmFn there, or hand the work to another thread");
    std::mutex mutex;
    std::condition_variable done;
    std::optional<PublishResult> result;
    // Its commit is this thread's to make in wait() when the file is idle: woken for it, the
    // writer would race this thread to the file and, winning, cost the publish two hand-offs.
    std::optional<detail::JournalBurst> burst;
    if (journal_) burst.emplace(*journal_);
    {
        Guard guard(*this, "publish");
        Published published = publish_locked(std::move(message));
        if (published.commit == 0) return std::move(published.result);
        // Under the lock, as the journal needs: the writer takes it before it confirms.
        journal_->confirm_after(published.commit, std::move(published.result), [&](PublishResult confirmed) {
            std::lock_guard waiting(mutex);
            result = std::move(confirmed);
            done.notify_one();
        });
        // Once the lock is let go: when the file is idle this thread commits it, and the
        // confirm has run by then.
        guard.wait_for_commit(published.commit);
    }
    std::unique_lock lock(mutex);
    done.wait(lock, [&] { return result.has_value(); });
    return std::move(*result);
}

void Broker::Impl::publish(OutboundMessage message, ConfirmFn confirmed) {
    released_->free_released();
    Published published;
    {
        Guard guard(*this, "publish");
        published = publish_locked(std::move(message));
        if (published.commit != 0) {
            journal_->confirm_after(published.commit, std::move(published.result), std::move(confirmed));
            return;
        }
    }
    confirmed(std::move(published.result));
}

void Broker::Impl::publish_batch(std::vector<OutboundMessage> messages, BatchConfirmFn confirmed) {
    // Long enough that a consumer's settlement rarely finds the lock taken by each message in
    // turn (on engine_bench's consumer row the lock was most of the futex calls left), short
    // enough that it never waits behind a whole batch.
    constexpr std::size_t per_hold = 64;
    // Only a commit's confirm runs after this returns; it is the one that needs a copy.
    std::shared_ptr<const BatchConfirmFn> after_commit;
    std::vector<std::pair<std::size_t, PublishResult>> decided;
    decided.reserve(std::min(per_hold, messages.size()));
    for (std::size_t begin = 0; begin < messages.size(); begin += per_hold) {
        released_->free_released();
        const std::size_t end = std::min(messages.size(), begin + per_hold);
        {
            Guard guard(*this, "publish");
            for (std::size_t i = begin; i < end; ++i) {
                Published published = publish_locked(std::move(messages[i]));
                if (published.commit == 0) {
                    decided.emplace_back(i, std::move(published.result));
                    continue;
                }
                if (!after_commit) after_commit = std::make_shared<const BatchConfirmFn>(confirmed);
                journal_->confirm_after(
                    published.commit, std::move(published.result),
                    [after_commit, i](PublishResult result) { (*after_commit)(i, std::move(result)); });
            }
        }
        // Outside the lock, as publish() calls its ConfirmFn.
        for (auto& [index, result] : decided) confirmed(index, std::move(result));
        decided.clear();
    }
}

Broker::Impl::Published Broker::Impl::publish_locked(OutboundMessage&& message) {
    published_.fetch_add(1, std::memory_order_relaxed);
    if (message.exchange.empty()) {  // the default exchange: the hot path, one lookup
        const auto found = queues_.find(message.routing_key);
        if (found == queues_.end()) return {not_routed(message.mandatory)};
        auto made = stored_of(std::move(message));
        if (auto* refused = std::get_if<PublishResult>(&made)) return {std::move(*refused)};
        StoredMessage& stored = std::get<StoredMessage>(made);
        if (writes(*found->second, stored))
            return {confirmed(), hold(*found->second, std::move(stored), Queue::Awaits::published)};
        enqueue(*found->second, std::move(stored));
        return {confirmed()};
    }
    const auto exchange = exchanges_.find(message.exchange);
    // RabbitMQ closes the channel with 404 and confirms nothing, so the publisher reports a
    // PublishError carrying the broker's sentence; the embedded broker says the same (a
    // refusal: here it is certain that nothing arrived), and its connection goes on.
    if (exchange == exchanges_.end())
        return {PublishResult{.return_reason = "404 NOT_FOUND - no exchange '" + message.exchange + "' on " +
                                               detail::broker_in_errors(name_) + "; declare the exchange first",
                              .why = PublishResult::Unconfirmed::refused}};
    routed_.clear();
    route(*exchange->second, message.routing_key, routed_);
    if (routed_.empty()) return {not_routed(message.mandatory)};
    auto made = stored_of(std::move(message));
    if (auto* refused = std::get_if<PublishResult>(&made)) return {std::move(*refused)};
    StoredMessage& stored = std::get<StoredMessage>(made);
    std::uint64_t commit = 0;
    for (Queue* queue : routed_)
        if (writes(*queue, stored)) commit = hold(*queue, StoredMessage(stored), Queue::Awaits::published);
    // Enqueueing cannot route again into routed_: dead-lettering routes into its own list.
    // When one copy waits for its commit, every copy does, so a failed commit refuses the
    // publish with nothing of it delivered.
    for (std::size_t i = 0; i < routed_.size(); ++i) {
        Queue& queue = *routed_[i];
        if (commit != 0 && writes(queue, stored)) continue;
        StoredMessage copy = i + 1 < routed_.size() ? StoredMessage(stored) : std::move(stored);
        if (commit == 0)
            enqueue(queue, std::move(copy));
        else
            await_commit(queue, std::move(copy), commit, Queue::Awaits::published);
    }
    return {confirmed(), commit};
}

void Broker::Impl::route(const Exchange& exchange, std::string_view key, std::vector<Queue*>& into) {
    exchange.route(key, ++route_epoch_, into);
}

void Broker::Impl::enqueue(Queue& queue, StoredMessage&& stored) {
    if (queue.deleted()) return;
    const bool expires = queue.policy().ttl.has_value();
    stored.enqueued = clock_->now();
    queue.append(std::move(stored));
    if (queue.has_consumers() || queue.is_stream()) dispatch(queue);  // a stream's retention runs there
    // After dispatch: a message with TTL 0 still goes to a consumer that has room.
    if (expires) {
        expire_due(queue);
        sync_timer(queue);
    }
}

// Republishes through the queue's dead-letter exchange, or drops without one. On a durable
// broker the message's row in `from` is deleted after its rows in the targets are written,
// so a crash between the two leaves it in both, never in neither.
void Broker::Impl::dead_letter(Queue& from, StoredMessage&& stored, std::string_view reason) {
    const std::uint64_t row = from.stored_id() != 0 ? stored.row : 0;
    stored.row = 0;
    route_dead_letter(from, std::move(stored), reason);
    if (row != 0) record(detail::journal::DeleteMessage{row});
}

void Broker::Impl::route_dead_letter(Queue& from, StoredMessage&& stored, std::string_view reason) {
    const detail::QueuePolicy& policy = from.policy();
    if (!policy.dead_letter_exchange) return;
    stored.edit([&](InboundParts& parts) {
        detail::record_death(parts, from.name(), reason);
        parts.exchange = *policy.dead_letter_exchange;
        if (policy.dead_letter_routing_key) parts.routing_key = *policy.dead_letter_routing_key;
        parts.redelivered = false;
    });
    const InboundMessage& message = stored.message;
    std::vector<Queue*> targets;
    if (message.exchange().empty()) {
        if (const auto found = queues_.find(message.routing_key()); found != queues_.end())
            targets.push_back(found->second.get());
    } else if (const auto exchange = exchanges_.find(message.exchange()); exchange != exchanges_.end()) {
        route(*exchange->second, message.routing_key(), targets);
    }  // a dead-letter exchange that does not exist drops the message, as in RabbitMQ
    if (reason != "rejected")
        std::erase_if(targets, [&](Queue* target) { return detail::dead_letter_cycle(message, target->name()); });
    for (std::size_t i = 0; i < targets.size(); ++i) {
        StoredMessage copy = i + 1 < targets.size() ? StoredMessage(stored) : std::move(stored);
        if (writes(*targets[i], copy))
            hold(*targets[i], std::move(copy), Queue::Awaits::moved);
        else
            enqueue(*targets[i], std::move(copy));
    }
}

}  // namespace acemq::inproc
