#include "inproc/consumer.hpp"

#include "inproc/queue.hpp"
#include "inproc/reentry.hpp"

namespace acemq::inproc::detail {

namespace {

constexpr unsigned sequence_bits = 40;
constexpr std::uint64_t sequence_mask = (std::uint64_t{1} << sequence_bits) - 1;

}  // namespace

Consumer::Consumer(std::uint64_t id, Broker::ConnectionId connection, std::shared_ptr<Queue> queue, std::string tag,
                   std::uint16_t prefetch, DeliverFn deliver)
    : id_(id), connection_(connection), queue_(std::move(queue)), tag_(std::move(tag)), prefetch_(prefetch),
      deliver_(std::move(deliver)), active_(true) {}

Consumer::Consumer(std::uint64_t id, Broker::ConnectionId connection) : id_(id), connection_(connection) {}

std::uint64_t Consumer::id_of(std::uint64_t delivery_tag) noexcept { return delivery_tag >> sequence_bits; }

std::uint64_t Consumer::hand_out(std::shared_ptr<Queue> from, StoredMessage&& stored) {
    const std::uint64_t sequence = next_sequence_++;
    handed_out_.push_back(
        Entry{.sequence = sequence, .delivery = {.queue = std::move(from), .stored = std::move(stored)}});
    ++outstanding_;
    return id_ << sequence_bits | sequence;
}

bool Consumer::deliver(Delivery&& delivery) noexcept {
    const DeliveringScope delivering;
    try {
        deliver_(std::move(delivery));
        return true;
    } catch (...) {
        return false;
    }
}

std::optional<Unsettled> Consumer::settle(std::uint64_t delivery_tag) {
    Entry* entry = id_of(delivery_tag) == id_ ? find(delivery_tag & sequence_mask) : nullptr;
    if (entry == nullptr || entry->settled) return std::nullopt;
    entry->settled = true;
    --outstanding_;
    Unsettled settled = std::move(entry->delivery);
    trim();
    return settled;
}

std::vector<Unsettled> Consumer::take_unsettled() {
    std::vector<Unsettled> unsettled;
    while (!handed_out_.empty()) {
        Entry entry = handed_out_.pop_front();
        if (!entry.settled) unsettled.push_back(std::move(entry.delivery));
    }
    outstanding_ = 0;
    return unsettled;
}

void Consumer::collect_unsettled_rows(std::vector<std::uint64_t>& into) const {
    for (std::size_t i = 0; i < handed_out_.size(); ++i)
        if (const Entry& entry = handed_out_[i];
            !entry.settled && entry.delivery.stored.row != 0 && !entry.delivery.queue->is_stream())
            into.push_back(entry.delivery.stored.row);
}

Consumer::Entry* Consumer::find(std::uint64_t sequence) {
    std::size_t low = 0, high = handed_out_.size();
    while (low < high) {
        const std::size_t middle = (low + high) / 2;
        if (handed_out_[middle].sequence < sequence)
            low = middle + 1;
        else
            high = middle;
    }
    return low < handed_out_.size() && handed_out_[low].sequence == sequence ? &handed_out_[low] : nullptr;
}

// Drops settled entries from the front, and rebuilds the ring when an old unsettled entry
// holds so many settled ones behind it that they would pile up.
void Consumer::trim() {
    while (!handed_out_.empty() && handed_out_.front().settled) handed_out_.pop_front();
    if (handed_out_.size() <= 2 * outstanding_ + 64) return;
    Ring<Entry> kept;
    while (!handed_out_.empty()) {
        Entry entry = handed_out_.pop_front();
        if (!entry.settled) kept.push_back(std::move(entry));
    }
    handed_out_ = std::move(kept);
}

}  // namespace acemq::inproc::detail
