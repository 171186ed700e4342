#include "inproc/queue.hpp"

#include <algorithm>

#include "inproc/consumer.hpp"

namespace acemq::inproc::detail {

Queue::Queue(QueueDeclaration declaration, Broker::ConnectionId owner)
    : declaration_(std::move(declaration)), owner_(owner), policy_(read_policy(declaration_)) {}

void Queue::make_ready(StoredMessage&& message) {
    if (is_stream()) {
        message.edit([this](InboundParts& parts) {
            parts.headers.insert_or_assign(FieldName(stream_offset_header), FieldValue(next_offset()));
        });
        log_bytes_ += message.message.body().size();
    }
    ready_.push_back(std::move(message));
}

StoredMessage Queue::drop_oldest() {
    StoredMessage oldest = ready_.pop_front();
    ++first_offset_;
    log_bytes_ -= oldest.message.body().size();
    return oldest;
}

void Queue::append(StoredMessage&& message) {
    if (waiting_.empty())
        make_ready(std::move(message));
    else
        waiting_.push_back(Waiting{std::move(message), waiting_.back().commit, Waiting::follows});
}

void Queue::collect_redelivered_rows(std::vector<std::uint64_t>& into) const {
    for (std::size_t i = 0; i < ready_.size(); ++i)
        if (const StoredMessage& stored = ready_[i]; stored.row != 0 && stored.message.redelivered())
            into.push_back(stored.row);
}

std::vector<StoredMessage> Queue::take_ready() {
    std::vector<StoredMessage> taken;
    taken.reserve(ready_.size());
    while (!ready_.empty()) taken.push_back(ready_.pop_front());
    return taken;
}

bool Queue::hold(StoredMessage&& message, std::uint64_t commit, Awaits awaits) {
    const bool first = waiting_.empty();
    waiting_.push_back(
        Waiting{std::move(message), commit, awaits == Awaits::published ? Waiting::published : Waiting::moved});
    return first;
}

void Queue::committed(std::uint64_t commit, bool ok) {
    if (!ok)
        std::erase_if(waiting_,
                      [&](const Waiting& entry) { return entry.kind == Waiting::published && entry.commit <= commit; });
    while (!waiting_.empty() && waiting_.front().commit <= commit &&
           (ok || waiting_.front().kind == Waiting::follows)) {
        make_ready(std::move(waiting_.front().message));
        waiting_.pop_front();
    }
}

void Queue::requeue(StoredMessage&& message) {
    message.mark_redelivered();
    ready_.push_front(std::move(message));
}

std::optional<Clock::time_point> Queue::head_deadline() noexcept {
    if (!policy_.ttl || ready_.empty()) return std::nullopt;
    return ready_.front().enqueued + *policy_.ttl;
}

void Queue::add_consumer(Consumer& consumer) {
    consumers_.push_back(&consumer);
    had_consumer_ = true;
}

bool Queue::remove_consumer(Consumer& consumer) {
    std::erase(consumers_, &consumer);
    next_consumer_ = 0;
    return declaration_.auto_delete && had_consumer_ && consumers_.empty() && !deleted_;
}

Consumer* Queue::next_with_room() {
    const std::size_t count = consumers_.size();
    for (std::size_t step = 0; step < count; ++step) {
        const std::size_t at = (next_consumer_ + step) % count;
        if (consumers_[at]->has_room()) {
            next_consumer_ = (at + 1) % count;
            return consumers_[at];
        }
    }
    return nullptr;
}

void Queue::mark_deleted() {
    deleted_ = true;
    for (Consumer* consumer : consumers_) consumer->deactivate();
    consumers_.clear();
    ready_.clear();
    waiting_.clear();
}

bool Queue::first_route(std::uint64_t mark) noexcept {
    if (route_mark_ == mark) return false;
    route_mark_ = mark;
    return true;
}

}  // namespace acemq::inproc::detail
