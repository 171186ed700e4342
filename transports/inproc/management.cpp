// Broker::Impl: what an operator asks (<acemq/management.hpp>): the listings, browsing and
// purging a queue, deleting a queue or an exchange by name, the broker's own state, and an
// online backup; and manage(), the Management over them. Unlike a connection's calls these
// reach every queue, exclusive ones too, as RabbitMQ's management does.
#include <acemq/config.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>
#include <tuple>
#include <unordered_map>

#include <acemq/error.hpp>
#include "inproc/broker_impl.hpp"
#include "inproc/quoted.hpp"
#include "inproc/reentry.hpp"

namespace acemq::inproc {

using detail::in_quotes;
using detail::Queue;
using detail::StoredMessage;

namespace {

template <class Summary>
void sort_by_name(std::vector<Summary>& summaries) {
    std::sort(summaries.begin(), summaries.end(), [](const Summary& a, const Summary& b) { return a.name < b.name; });
}

// The size of `path`, 0 when there is no such file (a WAL checkpointed away, another VFS's name).
std::uint64_t size_of(const std::string& path) {
    std::error_code missing;
    const std::uintmax_t size = std::filesystem::file_size(path, missing);
    return missing ? 0 : static_cast<std::uint64_t>(size);
}

class BrokerManagement final : public Management {
public:
    explicit BrokerManagement(std::shared_ptr<Broker> broker) : broker_(std::move(broker)) {}

    BrokerInfo info() override { return broker_->info(); }
    std::vector<ExchangeSummary> exchanges() override { return broker_->exchanges(); }
    std::vector<QueueSummary> queues() override { return broker_->queues(); }
    std::vector<BindingDeclaration> bindings() override { return broker_->bindings(); }
    std::vector<SessionSummary> sessions() override { return broker_->sessions(); }
    std::vector<BrowsedMessage> browse(std::string_view queue, BrowseOptions options) override {
        return broker_->browse(queue, options);
    }
    std::uint64_t purge(std::string_view queue) override { return broker_->purge(queue); }
    void delete_queue(std::string_view queue, DeleteOptions options) override { broker_->delete_queue(queue, options); }
    void delete_exchange(std::string_view exchange) override { broker_->delete_exchange(exchange); }
    BackupResult backup(const std::string& path) override { return broker_->backup(path); }

private:
    std::shared_ptr<Broker> broker_;
};

}  // namespace

std::unique_ptr<Management> manage(std::shared_ptr<Broker> broker) {
    if (!broker) throw InvalidArgument("acemq: cannot manage an inproc broker through a null pointer; pass a broker");
    return std::make_unique<BrokerManagement>(std::move(broker));
}

const std::shared_ptr<Queue>& Broker::Impl::managed_queue(std::string_view name, std::string_view action) {
    const auto found = queues_.find(name);
    if (found == queues_.end())
        throw ManagementError(ManagementError::Reason::not_found,
                              "acemq: cannot " + std::string(action) + " queue " + in_quotes(name) +
                                  ": NOT_FOUND - no such queue on " + detail::broker_in_errors(name_) +
                                  "; list the queues there are with `acemq queues`");
    return found->second;
}

std::vector<ExchangeSummary> Broker::Impl::exchanges() {
    Guard guard(*this, "list its exchanges");
    std::vector<ExchangeSummary> summaries;
    summaries.reserve(exchanges_.size());
    for (const auto& [name, exchange] : exchanges_) {
        const ExchangeDeclaration& declared = exchange->declaration();
        summaries.push_back(ExchangeSummary{.name = declared.name,
                                            .kind = declared.kind,
                                            .durable = declared.durable,
                                            .auto_delete = declared.auto_delete,
                                            .arguments = declared.arguments});
    }
    sort_by_name(summaries);
    return summaries;
}

std::vector<QueueSummary> Broker::Impl::queues() {
    Guard guard(*this, "list its queues");
    // What consumers hold unsettled, by the queue it came from.
    struct Held {
        std::uint64_t count = 0;
        std::uint64_t bytes = 0;
    };
    std::unordered_map<const Queue*, Held> held;
    for (const auto& [id, consumer] : consumers_)
        consumer->each_unsettled([&](const detail::Unsettled& unsettled) {
            Held& of = held[unsettled.queue.get()];
            ++of.count;
            of.bytes += unsettled.stored.message.body().size();
        });
    const Clock::time_point now = clock_->now();
    std::vector<QueueSummary> summaries;
    summaries.reserve(queues_.size());
    for (const auto& [name, queue] : queues_) {
        if (queue->is_stream()) retain(*queue);
        const QueueDeclaration& declared = queue->declaration();
        QueueSummary summary{.name = declared.name,
                             .type = declared.type,
                             .durable = declared.durable,
                             .exclusive = declared.exclusive,
                             .auto_delete = declared.auto_delete,
                             .ready = queue->depth(),
                             .consumers = queue->consumer_count(),
                             .arguments = declared.arguments};
        for (std::size_t i = 0; i < queue->depth(); ++i) summary.bytes += queue->ready_at(i).message.body().size();
        if (const auto found = held.find(queue.get()); found != held.end()) {
            summary.unacked = found->second.count;
            if (!queue->is_stream()) summary.bytes += found->second.bytes;  // a stream's are in its log still
        }
        if (!queue->empty())
            summary.oldest_age =
                std::max(std::chrono::milliseconds(0),
                         std::chrono::duration_cast<std::chrono::milliseconds>(now - queue->ready_at(0).enqueued));
        summaries.push_back(std::move(summary));
    }
    sort_by_name(summaries);
    return summaries;
}

std::vector<BindingDeclaration> Broker::Impl::bindings() {
    Guard guard(*this, "list its bindings");
    std::vector<BindingDeclaration> bindings;
    for (const auto& [name, exchange] : exchanges_) exchange->list_bindings(bindings);
    std::sort(bindings.begin(), bindings.end(), [](const BindingDeclaration& a, const BindingDeclaration& b) {
        return std::tie(a.exchange, a.queue, a.routing_key) < std::tie(b.exchange, b.queue, b.routing_key);
    });
    return bindings;
}

std::vector<SessionSummary> Broker::Impl::sessions() {
    Guard guard(*this, "list its sessions");
    std::map<ConnectionId, SessionSummary> by_age;  // ids are given out in order
    for (const auto& [id, connection] : connections_)
        by_age.emplace(id, SessionSummary{.peer = connection.peer.empty() ? "in-process" : connection.peer,
                                          .name = connection.client_name,
                                          .since = connection.opened});
    for (const auto& [id, consumer] : consumers_) {
        const auto session = by_age.find(consumer->connection());
        if (session == by_age.end()) continue;
        if (consumer->queue() && consumer->active()) ++session->second.consumers;
        session->second.unacked += consumer->outstanding();
    }
    std::vector<SessionSummary> sessions;
    sessions.reserve(by_age.size());
    for (auto& [id, session] : by_age) sessions.push_back(std::move(session));
    return sessions;
}

std::vector<BrowsedMessage> Broker::Impl::browse(std::string_view queue_name, BrowseOptions options) {
    Guard guard(*this, "browse a queue");
    const Queue& queue = *managed_queue(queue_name, "browse");
    std::vector<BrowsedMessage> browsed;
    const std::uint64_t depth = queue.depth();
    for (std::uint64_t position = options.from; position < depth && browsed.size() < options.count; ++position) {
        const StoredMessage& stored = queue.ready_at(static_cast<std::size_t>(position));
        browsed.push_back(
            BrowsedMessage{.position = position, .message = stored.message, .persistent = stored.persistent});
    }
    return browsed;
}

std::uint64_t Broker::Impl::purge(std::string_view queue_name) {
    Guard guard(*this, "purge a queue");
    Queue& queue = *managed_queue(queue_name, "purge");
    if (queue.is_stream())
        throw ManagementError(ManagementError::Reason::unsupported,
                              "acemq: cannot purge stream " + in_quotes(queue_name) + " on " +
                                  detail::broker_in_errors(name_) +
                                  ": a stream is an append-only log, as on RabbitMQ, which refuses this too; its "
                                  "retention (x-max-age, x-max-length-bytes) takes its oldest messages, or delete it");
    const std::vector<StoredMessage> purged = queue.take_ready();
    if (queue.stored_id() != 0) {
        std::uint64_t last = 0;
        for (const StoredMessage& stored : purged)
            if (stored.row != 0) last = record(detail::journal::DeleteMessage{stored.row});
        if (last != 0) guard.wait_for_commit(last);
    }
    sync_timer(queue);
    return purged.size();
}

void Broker::Impl::delete_queue(std::string_view queue_name, DeleteOptions options) {
    Guard guard(*this, "delete a queue");
    const std::shared_ptr<Queue>& queue = managed_queue(queue_name, "delete");
    if (queue->has_consumers() && !options.even_if_consumed)
        throw ManagementError(ManagementError::Reason::in_use,
                              "acemq: cannot delete queue " + in_quotes(queue_name) + " on " +
                                  detail::broker_in_errors(name_) + ": it has " +
                                  std::to_string(queue->consumer_count()) +
                                  " consumer(s); stop them first, or delete it even so (`acemq delete --force`, "
                                  "DeleteOptions::even_if_consumed), which cancels them");
    delete_queue_locked(guard, queue);
}

void Broker::Impl::delete_exchange(std::string_view exchange_name) {
    Guard guard(*this, "delete an exchange");
    if (exchange_name.empty())
        throw InvalidArgument(
            "acemq: cannot delete the default exchange \"\": it always exists, and every queue is reachable "
            "through it by its name; name the exchange to delete");
    const auto found = exchanges_.find(exchange_name);
    if (found == exchanges_.end())
        throw ManagementError(ManagementError::Reason::not_found,
                              "acemq: cannot delete exchange " + in_quotes(exchange_name) +
                                  ": NOT_FOUND - no such exchange on " + detail::broker_in_errors(name_) +
                                  "; list the exchanges there are with `acemq exchanges`");
    const bool stored = durable() && found->second->declaration().durable;
    exchanges_.erase(found);
    if (stored) guard.wait_for_commit(record(detail::journal::DeleteExchange{std::string(exchange_name)}));
}

BrokerInfo Broker::Impl::info() {
    BrokerInfo info{
        .product = "acemq in-process broker",
        .version = ACEMQ_VERSION,
        .name = name_,
        .uptime = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_),
        .data_file = data_,
        .quarantined = quarantined_};
    const Traffic done = traffic();
    info.published = done.published;
    info.delivered = done.delivered;
    info.acked = done.acked;
    info.details.emplace_back("max_data_bytes", std::to_string(max_data_bytes_));
    if (!durable()) return info;
    info.data_bytes = size_of(data_);
    info.wal_bytes = size_of(data_ + "-wal");
    info.free_disk_bytes = detail::free_disk_bytes(data_);
    info.opens = opens_;
    const detail::Journal::CommitStats stats = journal_->commit_stats();
    info.commits = stats.commits;
    if (stats.commits > 0) {
        info.commit_latency_mean = std::chrono::duration_cast<std::chrono::microseconds>(
            stats.total / static_cast<std::int64_t>(stats.commits));
        info.commit_latency_max = std::chrono::duration_cast<std::chrono::microseconds>(stats.longest);
    }
    if (!sqlite_vfs_.empty()) info.details.emplace_back("sqlite_vfs", sqlite_vfs_);
    if (const std::optional<std::string> failure = commit_failure())
        info.details.emplace_back("commit_failure", *failure);
    return info;
}

BackupResult Broker::Impl::backup(const std::string& path) {
    // Not under the broker's lock: the writer takes it after each transaction, and the copy
    // is made between them.
    detail::refuse_reentry("back up its data file");
    if (!durable())
        throw ManagementError(ManagementError::Reason::unsupported,
                              "acemq: cannot back up " + detail::broker_in_errors(name_) +
                                  ": it keeps everything in memory, and has no data file; run it with one "
                                  "(inproc://NAME?data=FILE, acemq-broker --data FILE) to have something to back up");
    if (path.empty())
        throw InvalidArgument("acemq: cannot back up the broker's data file to \"\": name the file to write");
    return journal_->backup(path);
}

}  // namespace acemq::inproc
