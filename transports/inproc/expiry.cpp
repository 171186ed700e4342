// Broker::Impl: TTL. Only a queue's head expires, as in RabbitMQ; one timer per queue is
// kept armed for the head's deadline, on the broker's Clock, so that a test's ManualClock
// moves expiry too.
#include "inproc/broker_impl.hpp"

namespace acemq::inproc {

using detail::Queue;

void Broker::Impl::on_timer(const std::weak_ptr<Queue>& target, std::uint64_t generation) {
    Guard guard(*this, "expire messages");
    const std::shared_ptr<Queue> queue = target.lock();
    if (!queue || queue->deleted() || !queue->expiry_timer().is_current(generation)) return;  // superseded
    queue->expiry_timer().fired();
    expire_due(*queue);
    sync_timer(*queue);
}

void Broker::Impl::expire_due(Queue& queue) {
    if (queue.empty()) return;
    const Clock::time_point now = clock_->now();
    for (auto deadline = queue.head_deadline(); deadline && *deadline <= now; deadline = queue.head_deadline())
        dead_letter(queue, queue.take_head(), "expired");
}

// Keeps one timer armed for the head's expiry, when the queue has a TTL and a head.
void Broker::Impl::sync_timer(Queue& queue) {
    if (!queue.policy().ttl) return;
    const std::optional<Clock::time_point> deadline = queue.deleted() ? std::nullopt : queue.head_deadline();
    if (!deadline) {
        retire_timer(queue);
        return;
    }
    detail::ExpiryTimer& timer = queue.expiry_timer();
    if (timer.fires_by(*deadline)) return;
    retire_timer(queue);
    const std::uint64_t generation = timer.next_generation();
    std::weak_ptr<Broker> broker = owner_.weak_from_this();
    std::weak_ptr<Queue> target = queue.weak_from_this();
    const Clock::TimerId id =
        clock_->call_at(*deadline, [broker = std::move(broker), target = std::move(target), generation] {
            // The broker may be gone, or going: then there is nothing left to expire.
            if (const std::shared_ptr<Broker> alive = broker.lock()) alive->impl_->on_timer(target, generation);
        });
    timer.armed(id, *deadline);
}

void Broker::Impl::retire_timer(Queue& queue) {
    if (const Clock::TimerId retired = queue.expiry_timer().retire(); retired != 0) retired_timers_.push_back(retired);
}

}  // namespace acemq::inproc
