// Broker::Impl: a durable broker. Opening and reading back its data file, what it records in
// its journal (the rest of the broker calls record() and hold() where durable state
// changes), making messages visible once their commit lands, and the clean close.
#include <chrono>

#include <acemq/error.hpp>
#include <acemq/log.hpp>
#include "inproc/broker_impl.hpp"
#include "inproc/inproc_transport.hpp"
#include "inproc/quoted.hpp"

namespace acemq::inproc {

using detail::Queue;
using detail::StoredMessage;
namespace journal = detail::journal;

Broker::Impl::Impl(Broker& owner, std::string name, const BrokerOptions& options)
    : owner_(owner), name_(std::move(name)), clock_(options.clock ? options.clock : system_clock()),
      data_(options.data), sqlite_vfs_(options.sqlite_vfs), max_data_bytes_(options.max_data_bytes) {
    if (data_.empty()) return;
    auto file = std::make_unique<detail::DataFile>(data_, options.sqlite_vfs, options.max_data_bytes);
    detail::DataFileContents contents = file->read();
    try {
        file->make_writable();
        // Synced before anything else of this life is written: see record_open.
        file->begin();
        file->record_open();
        const auto now_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        for (const detail::DamagedRow& damaged : contents.damaged) file->quarantine(damaged, now_ms);
        file->commit();
    } catch (const detail::StorageFailure& failure) {
        throw DataFileError(failure.what());
    }
    quarantined_ = contents.quarantined + contents.damaged.size();
    opens_ = contents.opens + 1;
    if (!contents.damaged.empty()) log_quarantined(contents.damaged);
    recover(std::move(contents));
    journal_ = std::make_unique<detail::Journal>(std::move(file),
                                                 [this](std::uint64_t through, bool ok) { on_committed(through, ok); });
}

void Broker::Impl::log_quarantined(const std::vector<detail::DamagedRow>& damaged) const {
    std::string ids;
    for (std::size_t i = 0; i < damaged.size() && i < 10; ++i)
        ids += (i == 0 ? "" : ", ") + std::to_string(damaged[i].id);
    if (damaged.size() > 10) ids += ", ...";
    log(LogLevel::error, "durable-broker",
        "acemq: " + std::to_string(damaged.size()) + " stored message(s) of the broker's data file " +
            detail::in_quotes(data_) + " were damaged on the disk (" + damaged.front().reason + "; message ids " + ids +
            "): moved to the file's quarantine table as found, not delivered; every other message "
            "is delivered as before. Check the disk, and restore them from a copy if they matter");
}

void Broker::Impl::recover(detail::DataFileContents&& contents) {
    for (ExchangeDeclaration& exchange : contents.exchanges) {
        std::string name = exchange.name;
        exchanges_.emplace(std::move(name), std::make_unique<detail::Exchange>(std::move(exchange)));
    }
    std::unordered_map<std::uint64_t, Queue*> by_id;
    for (detail::StoredQueue& stored : contents.queues) {
        auto queue = std::make_shared<Queue>(std::move(stored.declaration), 0);
        queue->set_stored_id(stored.id);
        if (const auto start = contents.stream_starts.find(stored.id); start != contents.stream_starts.end())
            queue->set_first_offset(start->second);
        by_id.emplace(stored.id, queue.get());
        next_queue_id_ = std::max(next_queue_id_, stored.id + 1);
        queues_.emplace(queue->name(), std::move(queue));
    }
    for (const detail::StoredBinding& binding : contents.bindings) {
        const auto exchange = exchanges_.find(binding.exchange);
        const auto queue = by_id.find(binding.queue);
        if (exchange != exchanges_.end() && queue != by_id.end())
            exchange->second->bind(*queue->second, binding.routing_key, binding.arguments);
    }
    for (detail::StoredRow& row : contents.messages) {
        next_row_ = std::max(next_row_, row.id + 1);
        const auto queue = by_id.find(row.queue);
        if (queue == by_id.end()) continue;  // its queue's deletion was committed first
        // Whether it was handed out before a crash is not written: it may have been. A
        // stream's reads take nothing, so its messages are never redelivered.
        if (!contents.closed_cleanly && !queue->second->is_stream()) row.message.set_redelivered(true);
        StoredMessage stored{.message = std::move(row.message), .persistent = true, .row = row.id};
        stored.enqueued = row.enqueued_ms ? from_wall_ms(*row.enqueued_ms) : clock_->now();
        queue->second->append(std::move(stored));
    }
}

void Broker::Impl::start() {
    if (!durable()) return;
    Guard guard(*this, "recover the data file");
    for (const auto& [name, queue] : queues_)
        if (queue->policy().ttl || queue->is_stream()) refresh(*queue);
}

Broker::Impl::~Impl() {
    if (journal_) {
        std::vector<std::uint64_t> redelivered;
        {
            std::lock_guard guard(mutex_);
            for (const auto& [name, queue] : queues_)
                if (queue->stored_id() != 0) queue->collect_redelivered_rows(redelivered);
            for (const auto& [id, consumer] : consumers_) consumer->collect_unsettled_rows(redelivered);
        }
        journal_->close(redelivered);
    }
    // Nobody owns the broker any more, so no operation runs and no timer action gets past
    // its weak pointer; cancel what is armed so nothing keeps firing.
    std::vector<Clock::TimerId> armed;
    {
        std::lock_guard guard(mutex_);
        for (const auto& [name, queue] : queues_)
            if (queue->expiry_timer().id() != 0) armed.push_back(queue->expiry_timer().id());
        armed.insert(armed.end(), retired_timers_.begin(), retired_timers_.end());
    }
    for (Clock::TimerId timer : armed) clock_->cancel(timer);
}

std::uint64_t Broker::Impl::record(journal::Change change) { return journal_->record(std::move(change)); }

CommitBurst::CommitBurst(Broker& broker) {
    if (detail::Journal* journal = broker.impl_->journal()) burst_ = std::make_unique<detail::JournalBurst>(*journal);
}

CommitBurst::~CommitBurst() = default;

bool Broker::Impl::writes(const Queue& queue, const StoredMessage& stored) const noexcept {
    // A stream keeps every message, as RabbitMQ's do whatever their delivery mode.
    return (stored.persistent || queue.is_stream()) && queue.stored_id() != 0 && !queue.deleted();
}

std::uint64_t Broker::Impl::hold(Queue& queue, StoredMessage&& stored, Queue::Awaits awaits) {
    stored.enqueued = clock_->now();
    stored.row = next_row_++;
    const std::uint64_t commit = record(journal::insert_message(
        stored.row, queue.stored_id(), wall_ms(stored.enqueued), detail::pack_properties(stored.message),
        Bytes(stored.message.body().begin(), stored.message.body().end()), awaits == Queue::Awaits::published));
    await_commit(queue, std::move(stored), commit, awaits);
    return commit;
}

void Broker::Impl::await_commit(Queue& queue, StoredMessage&& stored, std::uint64_t commit, Queue::Awaits awaits) {
    if (queue.hold(std::move(stored), commit, awaits)) awaiting_commit_.push_back(queue.shared_from_this());
}

void Broker::Impl::on_committed(std::uint64_t through, bool ok) {
    Guard guard(*this, "make committed messages visible");
    std::vector<std::shared_ptr<Queue>> queues;
    queues.swap(awaiting_commit_);
    for (const std::shared_ptr<Queue>& queue : queues) {
        if (queue->deleted()) continue;
        queue->committed(through, ok);
        if (queue->awaiting_commit()) awaiting_commit_.push_back(queue);
        refresh(*queue);
    }
}

// Enqueue times cross a restart as wall-clock time: the broker's Clock is steady, and a
// steady clock starts again with the process.
std::optional<std::int64_t> Broker::Impl::wall_ms(Clock::time_point enqueued) const {
    if (enqueued == Clock::time_point{}) return std::nullopt;
    const auto wall = std::chrono::system_clock::now() + (enqueued - clock_->now());
    return std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
}

Clock::time_point Broker::Impl::from_wall_ms(std::int64_t wall) const {
    const auto then = std::chrono::system_clock::time_point(std::chrono::milliseconds(wall));
    return clock_->now() + std::chrono::duration_cast<Clock::duration>(then - std::chrono::system_clock::now());
}

}  // namespace acemq::inproc
