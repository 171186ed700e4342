// Broker::Impl: stream queues, as RabbitMQ serves them over AMQP 0-9-1. A stream's ready
// messages are its log (queue.hpp): each consumer reads it from its own offset, chosen by
// its x-stream-offset argument, and what it is handed stays in the log; retention alone
// takes the oldest messages out.
#include <algorithm>
#include <limits>

#include <acemq/error.hpp>
#include "inproc/broker_impl.hpp"
#include "inproc/quoted.hpp"

namespace acemq::inproc {

using detail::Consumer;
using detail::Queue;
using detail::StoredMessage;

namespace {

// The first offset of `queue` whose message was appended at `since` or later (appends are in
// time order); its next offset when none was.
std::int64_t appended_since(const Queue& queue, Clock::time_point since) {
    std::int64_t low = queue.first_offset(), high = queue.next_offset();
    while (low < high) {
        const std::int64_t middle = low + (high - low) / 2;
        if (queue.at_offset(middle).enqueued < since)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

}  // namespace

std::int64_t Broker::Impl::stream_start(const Queue& queue, const FieldTable& arguments) const {
    const std::int64_t first = queue.first_offset(), next = queue.next_offset();
    const auto found = arguments.find(detail::stream_offset_header);
    if (found == arguments.end()) return next;
    const FieldValue& value = found->second;
    if (const auto* text = std::get_if<std::string>(&value.get())) {
        if (*text == "first") return first;
        // RabbitMQ's "last" is the last chunk written; here each message is a chunk of its own.
        if (*text == "last") return std::max(first, next - 1);
        if (*text == "next") return next;
        if (const auto interval = detail::parse_max_age(*text)) return appended_since(queue, clock_->now() - *interval);
    } else if (const auto* at = std::get_if<FieldTimestamp>(&value.get())) {
        // Compared in milliseconds from now, which no timestamp overflows: a time to come
        // starts at the next message, one before any message at the first.
        const auto now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
        const std::int64_t ahead_ms = at->time_since_epoch().count() < std::numeric_limits<std::int64_t>::max() / 1000
                                          ? at->time_since_epoch().count() * 1000 - now.time_since_epoch().count()
                                          : std::numeric_limits<std::int64_t>::max();
        if (ahead_ms > 0) return next;
        constexpr std::int64_t century_ms = std::int64_t{100} * 365 * 86400 * 1000;
        if (ahead_ms < -century_ms) return first;
        return appended_since(queue, clock_->now() + std::chrono::milliseconds(ahead_ms));
    } else if (value.holds<std::int32_t>() || value.holds<std::int64_t>()) {
        // Past the end, the reader waits for the log to reach the offset, as RabbitMQ 3.10's
        // does (rabbit_stream_queue starts it there and drops what was written below it).
        return std::max(*value.as_integer(), first);
    } else if (const auto* offset = std::get_if<std::uint64_t>(&value.get())) {
        constexpr auto largest = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        return std::max(first, static_cast<std::int64_t>(std::min(*offset, largest)));
    }
    throw InvalidArgument("acemq: cannot consume from stream " + detail::in_quotes(queue.name()) +
                          ": PRECONDITION_FAILED - invalid consumer argument " +
                          std::string(detail::stream_offset_header) + " " + value.to_string() +
                          ": it must be \"first\", \"last\", \"next\", an offset (an integer), a timestamp, or an "
                          "interval back from now such as \"1h\" (a whole number and one of Y, M, D, h, m, s)");
}

void Broker::Impl::dispatch_stream(Queue& queue) {
    retain(queue);
    // A copy: a consumer whose DeliverFn throws leaves the queue's list.
    const std::vector<Consumer*> consumers = queue.consumers();
    for (Consumer* consumer : consumers) {
        while (consumer->has_room()) {
            // Retention may have taken what it was to read next: it goes on from the oldest.
            const std::int64_t offset = std::max(consumer->stream_position(), queue.first_offset());
            if (offset >= queue.next_offset()) break;
            consumer->set_stream_position(offset + 1);
            StoredMessage stored = queue.at_offset(offset);
            InboundMessage shared = stored.message;
            const std::uint64_t tag = consumer->hand_out(consumer->queue(), std::move(stored));
            delivered_.fetch_add(1, std::memory_order_relaxed);
            if (!consumer->deliver(Delivery(std::move(shared), *this, tag))) {
                stop_consumer(*consumer);
                break;
            }
        }
    }
}

void Broker::Impl::retain(Queue& queue) {
    const detail::QueuePolicy& policy = queue.policy();
    if (!policy.max_age && !policy.max_length_bytes) return;
    const Clock::time_point now = clock_->now();
    std::vector<std::uint64_t> rows;
    // The newest message stays whatever its age or size, as RabbitMQ never deletes the
    // segment it is writing.
    while (queue.depth() > 1) {
        const bool too_old = policy.max_age && now - queue.ready_at(0).enqueued > *policy.max_age;
        const bool too_large = policy.max_length_bytes && queue.log_bytes() > *policy.max_length_bytes;
        if (!too_old && !too_large) break;
        if (const StoredMessage oldest = queue.drop_oldest(); oldest.row != 0) rows.push_back(oldest.row);
    }
    if (queue.stored_id() != 0 && !rows.empty())
        record(detail::journal::TrimStream{
            .queue = queue.stored_id(), .first_offset = queue.first_offset(), .rows = std::move(rows)});
}

}  // namespace acemq::inproc
