// The state of one embedded broker and the operations that span its parts. The parts
// (exchange.hpp, queue.hpp, consumer.hpp) each keep their own records; Broker::Impl owns
// them all, looks them up by name or id, and moves messages between them. Its operations
// are spread over files named for what they do:
//   broker.cpp    the public Broker, connections, the lock (Guard)
//   topology.cpp  declaring, binding, inspecting and deleting
//   routing.cpp   publishing, routing and dead-lettering
//   dispatch.cpp  consuming, pulling, handing out and settling deliveries
//   stream.cpp    stream queues: where a consumer starts, reading the log, retention
//   expiry.cpp    TTL: expiring a queue's head and keeping its timer armed
//   management.cpp what an operator asks: listings, browse, purge, deleting by name, info
//   durable.cpp   a durable broker: recovery from its data file, what it records in its
//                 journal, messages made visible by a commit, the clean close
//
// Threads: name() and clock() never change; every other public member takes the broker's
// lock (Guard) and refuses a call from inside a DeliverFn; the private ones expect it held.
// Internal to the inproc broker.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include <acemq/inproc.hpp>
#include "inproc/consumer.hpp"
#include "inproc/exchange.hpp"
#include "inproc/journal.hpp"
#include "inproc/queue.hpp"
#include "inproc/released_messages.hpp"
#include "inproc/topic_routes.hpp"

namespace acemq::inproc {

class Broker::Impl final : public DeliverySettler {
public:
    // Opens and reads options.data when given (DataFileError).
    Impl(Broker& owner, std::string name, const BrokerOptions& options);
    // Closes the data file cleanly, cancels the expiry timers still armed.
    ~Impl();
    // Once the broker is owned by a shared_ptr: arms the timers of recovered messages.
    void start();

    const std::string& name() const noexcept { return name_; }
    const std::shared_ptr<Clock>& clock() const noexcept { return clock_; }
    const std::string& data() const noexcept { return data_; }
    std::uint64_t quarantined_messages() const noexcept { return quarantined_; }
    // What the broker has done since it started (BrokerInfo::published, delivered, acked):
    // messages published to it (routed or not), handed to consumers and pulls (redeliveries
    // too), and acked.
    struct Traffic {
        std::uint64_t published = 0;
        std::uint64_t delivered = 0;
        std::uint64_t acked = 0;
    };
    Traffic traffic() const noexcept {
        return {published_.load(std::memory_order_relaxed), delivered_.load(std::memory_order_relaxed),
                acked_.load(std::memory_order_relaxed)};
    }

    std::optional<std::string> commit_failure();
    // A durable broker's journal (for a CommitBurst); nullptr for one in memory only.
    detail::Journal* journal() const noexcept { return journal_.get(); }
    ConnectionId open_connection(ConnectionOptions options);
    void close_connection(ConnectionId connection);

    void declare(ConnectionId connection, const Topology& topology);
    void declare_exchange(const ExchangeDeclaration& asked);
    void declare_queue(ConnectionId connection, const QueueDeclaration& asked);
    void bind(ConnectionId connection, const BindingDeclaration& asked);
    std::uint64_t queue_depth(ConnectionId connection, std::string_view queue_name);
    bool queue_exists(ConnectionId connection, std::string_view queue_name);
    void delete_queue(ConnectionId connection, std::string_view queue_name);

    // management.cpp
    std::vector<ExchangeSummary> exchanges();
    std::vector<QueueSummary> queues();
    std::vector<BindingDeclaration> bindings();
    std::vector<SessionSummary> sessions();
    std::vector<BrowsedMessage> browse(std::string_view queue_name, BrowseOptions options);
    std::uint64_t purge(std::string_view queue_name);
    void delete_queue(std::string_view queue_name, DeleteOptions options);
    void delete_exchange(std::string_view exchange_name);
    BrokerInfo info();
    BackupResult backup(const std::string& path);

    PublishResult publish(OutboundMessage message);
    void publish(OutboundMessage message, ConfirmFn confirmed);
    void publish_batch(std::vector<OutboundMessage> messages, BatchConfirmFn confirmed);

    std::unique_ptr<Subscription> consume(ConnectionId connection, std::string_view queue_name, const ConsumeSpec& spec,
                                          DeliverFn deliver);
    std::optional<Delivery> pull(ConnectionId connection, std::string_view queue_name);
    void stop(std::uint64_t consumer);
    void close_consumer(std::uint64_t consumer);
    void ack(std::uint64_t tag) override;
    void requeue(std::uint64_t tag) override;
    void reject(std::uint64_t tag) override;

    // What a queue's timer runs: expires its due head, unless the queue went or the timer
    // was superseded since it was armed (`generation`).
    void on_timer(const std::weak_ptr<detail::Queue>& target, std::uint64_t generation);

private:
    class Guard;
    enum class Settlement { ack, requeue, reject };
    struct Connection {
        std::uint64_t pulls;  // the consumer id of its pulls
        bool acks_wait;
        std::string peer;
        std::string client_name;
        std::chrono::system_clock::time_point opened;
    };
    // What publish decided: its result, and the journal change it waits for (0: none).
    struct Published {
        PublishResult result;
        std::uint64_t commit = 0;
    };

    // topology.cpp
    void require_open(ConnectionId connection, const std::string& what) const;
    void require_access(const detail::Queue& queue, ConnectionId connection, std::string_view action) const;
    const std::shared_ptr<detail::Queue>& existing_queue(ConnectionId connection, std::string_view name,
                                                         std::string_view action);
    void remove_queue(std::shared_ptr<detail::Queue> queue);
    // remove_queue, and on a durable broker waits (once `guard` lets go) for its deletion.
    void delete_queue_locked(Guard& guard, std::shared_ptr<detail::Queue> queue);
    // The queue named `name`, whoever owns it; ManagementError not_found.
    const std::shared_ptr<detail::Queue>& managed_queue(std::string_view name, std::string_view action);

    // routing.cpp
    // The broker's copy of a published message as its queues keep it (its block freed on a
    // publishing thread, released_); or, when a message cannot hold its short texts (past 64 KiB
    // in all), the refusal that says so.
    std::variant<detail::StoredMessage, PublishResult> stored_of(OutboundMessage&& message);
    Published publish_locked(OutboundMessage&& message);
    void route(const detail::Exchange& exchange, std::string_view key, std::vector<detail::Queue*>& into);
    void enqueue(detail::Queue& queue, detail::StoredMessage&& stored);
    void dead_letter(detail::Queue& from, detail::StoredMessage&& stored, std::string_view reason);
    void route_dead_letter(detail::Queue& from, detail::StoredMessage&& stored, std::string_view reason);

    // dispatch.cpp
    void refresh(detail::Queue& queue);
    void dispatch(detail::Queue& queue);
    void settle(std::uint64_t tag, Settlement settlement);
    void stop_consumer(detail::Consumer& consumer);
    void close_consumer_locked(std::uint64_t id);

    // stream.cpp
    // Where a new consumer of stream `queue` starts, from its x-stream-offset argument.
    std::int64_t stream_start(const detail::Queue& queue, const FieldTable& arguments) const;
    // Hands each consumer of a stream the messages from its offset on, while it has room.
    void dispatch_stream(detail::Queue& queue);
    // Takes out the stream's oldest messages past its x-max-age or x-max-length-bytes.
    void retain(detail::Queue& queue);

    // durable.cpp
    void recover(detail::DataFileContents&& contents);
    void log_quarantined(const std::vector<detail::DamagedRow>& damaged) const;
    bool durable() const noexcept { return journal_ != nullptr; }
    // Records `change` in the journal; its sequence number.
    std::uint64_t record(detail::journal::Change change);
    // Whether a message goes into `queue` only once written.
    bool writes(const detail::Queue& queue, const detail::StoredMessage& stored) const noexcept;
    // Writes `stored` into `queue`'s rows and holds it there until that is committed;
    // returns the insertion's sequence number.
    std::uint64_t hold(detail::Queue& queue, detail::StoredMessage&& stored, detail::Queue::Awaits awaits);
    // Holds `stored` in `queue` until change `commit` is committed.
    void await_commit(detail::Queue& queue, detail::StoredMessage&& stored, std::uint64_t commit,
                      detail::Queue::Awaits awaits);
    void on_committed(std::uint64_t through, bool ok);
    std::optional<std::int64_t> wall_ms(Clock::time_point enqueued) const;
    Clock::time_point from_wall_ms(std::int64_t wall) const;

    // expiry.cpp
    void expire_due(detail::Queue& queue);
    void sync_timer(detail::Queue& queue);
    void retire_timer(detail::Queue& queue);

    Broker& owner_;
    const std::string name_;
    const std::shared_ptr<Clock> clock_;
    const std::string data_;
    const std::string sqlite_vfs_;
    const std::uint64_t max_data_bytes_;
    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::uint64_t quarantined_ = 0;  // set at open, not changed after
    std::uint64_t opens_ = 0;        // the data file's, this one included; set at open
    // Changed under the lock, read without it (traffic()).
    std::atomic<std::uint64_t> published_{0}, delivered_{0}, acked_{0};

    // Guards everything below.
    std::mutex mutex_;
    detail::StringMap<std::unique_ptr<detail::Exchange>> exchanges_;
    detail::StringMap<std::shared_ptr<detail::Queue>> queues_;
    std::unordered_map<std::uint64_t, std::unique_ptr<detail::Consumer>> consumers_;
    std::unordered_map<ConnectionId, Connection> connections_;
    std::uint64_t next_id_ = 1;                   // connections and consumers alike
    std::uint64_t route_epoch_ = 0;               // the mark of the latest routing
    std::vector<detail::Queue*> routed_;          // publish's routing result, kept to reuse its memory
    std::vector<Clock::TimerId> retired_timers_;  // to cancel once the lock is let go (Guard)
    // Published messages whose last reference dropped, to be freed by the next publish.
    detail::ReleasedMessages::Owned released_ = detail::ReleasedMessages::create();
    // A durable broker's: its writer, the next ids in its data file, the queues holding
    // messages until a commit.
    std::unique_ptr<detail::Journal> journal_;
    std::uint64_t next_row_ = 1;
    std::uint64_t next_queue_id_ = 1;
    std::vector<std::shared_ptr<detail::Queue>> awaiting_commit_;
};

// Holds the broker lock for one operation; on the way out, after unlocking, cancels the
// expiry timers the operation retired, and waits for the journal's commit the operation
// asked for. Cancelling under the lock could deadlock: a clock's cancel waits for a firing
// timer, whose action waits for this lock; and the announcer takes the lock after a commit.
class Broker::Impl::Guard {
public:
    Guard(Impl& impl, std::string_view action);
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard();

    // Waits, once unlocked, until change `sequence` is committed (not on the writer's side,
    // the writer's and the announcer's threads: there the change is committed later).
    void wait_for_commit(std::uint64_t sequence) noexcept { commit_ = std::max(commit_, sequence); }

private:
    Impl& impl_;
    std::unique_lock<std::mutex> lock_;
    std::uint64_t commit_ = 0;
};

}  // namespace acemq::inproc
