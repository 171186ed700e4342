// One queue of the embedded broker: its declaration and the arguments it enforces, the
// messages ready in it (where the broker stores a message between publish and delivery),
// those waiting behind them for a durable broker's commit, the consumers it serves in turn,
// and its expiry timer. What happens to a message that
// leaves it (delivery, expiry, dead-lettering) is the broker's (Broker::Impl).
//
// Ownership: the broker holds each queue by name; the deliveries handed out from it share
// it, so a requeue or a late settlement still finds it once it is deleted (and then drops
// the message). It points at its consumers, which the broker owns; a consumer leaves the
// queue's list (remove_consumer) before it is destroyed.
//
// Internal to the inproc broker. Not thread-safe: the broker's lock guards every member.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include <acemq/inproc.hpp>
#include <acemq/topology.hpp>
#include "inproc/declarations.hpp"
#include "inproc/expiry_timer.hpp"
#include "inproc/ring.hpp"
#include "inproc/stored_message.hpp"

namespace acemq::inproc::detail {

class Consumer;

class Queue : public std::enable_shared_from_this<Queue> {
public:
    // `owner`: the connection an exclusive queue belongs to, 0 for any other. Throws
    // TopologyError for arguments RabbitMQ would refuse (read_policy).
    Queue(QueueDeclaration declaration, Broker::ConnectionId owner);
    Queue(const Queue&) = delete;
    Queue& operator=(const Queue&) = delete;

    const QueueDeclaration& declaration() const noexcept { return declaration_; }
    const std::string& name() const noexcept { return declaration_.name; }
    // Exclusive to another connection than `connection`.
    bool locked_for(Broker::ConnectionId connection) const noexcept { return owner_ != 0 && owner_ != connection; }
    bool owned_by(Broker::ConnectionId connection) const noexcept { return owner_ == connection; }
    const QueuePolicy& policy() const noexcept { return policy_; }
    bool deleted() const noexcept { return deleted_; }
    // Its id in a durable broker's data file; 0 when it is kept in memory only.
    std::uint64_t stored_id() const noexcept { return stored_id_; }
    void set_stored_id(std::uint64_t id) noexcept { stored_id_ = id; }

    // Its ready messages, oldest first.
    bool empty() const noexcept { return ready_.empty(); }
    std::size_t depth() const noexcept { return ready_.size(); }
    // Ready message `position` (0: the head), left in place.
    const StoredMessage& ready_at(std::size_t position) const noexcept { return ready_[position]; }
    // Takes every ready message, head first; those waiting for a commit stay.
    std::vector<StoredMessage> take_ready();
    // Ready at once, unless messages wait for a commit: then behind them, as one that comes
    // when they do.
    void append(StoredMessage&& message);
    // The ids in the data file of its ready messages marked redelivered.
    void collect_redelivered_rows(std::vector<std::uint64_t>& into) const;

    // A stream (x-queue-type stream): an append-only log that reading does not take from.
    // Its ready messages are the log, the one at position i having offset first_offset() + i;
    // each carries its offset in the x-stream-offset header (signed 64-bit) from the moment it
    // becomes ready. Only retention (drop_oldest) takes messages out.
    bool is_stream() const noexcept { return declaration_.type == QueueType::stream; }
    std::int64_t first_offset() const noexcept { return first_offset_; }
    std::int64_t next_offset() const noexcept { return first_offset_ + static_cast<std::int64_t>(ready_.size()); }
    // The message at `offset`, which must be in [first_offset(), next_offset()).
    const StoredMessage& at_offset(std::int64_t offset) const noexcept {
        return ready_[static_cast<std::size_t>(offset - first_offset_)];
    }
    // The bytes of the bodies in the log, which x-max-length-bytes bounds.
    std::uint64_t log_bytes() const noexcept { return log_bytes_; }
    // Where a recovered stream's log starts; before its first message is appended.
    void set_first_offset(std::int64_t offset) noexcept { first_offset_ = offset; }
    // Takes the oldest message out of the log, for retention.
    StoredMessage drop_oldest();

    // Messages that become ready once change `commit` of the journal is committed, in the
    // order they arrived. A published one is dropped when that commit fails; a moved one
    // (dead-lettered here) waits for a later commit, which writes it after all.
    enum class Awaits { published, moved };
    // True when the queue had no message waiting before.
    bool hold(StoredMessage&& message, std::uint64_t commit, Awaits awaits);
    bool awaiting_commit() const noexcept { return !waiting_.empty(); }
    // After the journal's transaction through `commit`: its messages become ready (`ok`), or
    // the published ones among them are dropped and what no longer waits becomes ready.
    void committed(std::uint64_t commit, bool ok);
    // Back to the head, marked redelivered: a requeued or handed-back delivery.
    void requeue(StoredMessage&& message);
    StoredMessage take_head() { return ready_.pop_front(); }
    // When the head expires: nullopt without a TTL or a head.
    std::optional<Clock::time_point> head_deadline() noexcept;

    // Its active consumers, served round-robin (a stream serves each from its own offset).
    const std::vector<Consumer*>& consumers() const noexcept { return consumers_; }
    void add_consumer(Consumer& consumer);
    // True when that was the last consumer of an auto-delete queue: then it must go.
    bool remove_consumer(Consumer& consumer);
    bool has_consumers() const noexcept { return !consumers_.empty(); }
    std::size_t consumer_count() const noexcept { return consumers_.size(); }
    // The next consumer in turn with room for a delivery, which then counts as served;
    // nullptr when none has room.
    Consumer* next_with_room();

    // Drops its messages and deactivates its consumers; the broker has unlisted it.
    void mark_deleted();

    // True the first time publish `mark` reaches this queue, so it is routed there once
    // however many bindings match.
    bool first_route(std::uint64_t mark) noexcept;

    ExpiryTimer& expiry_timer() noexcept { return timer_; }

private:
    QueueDeclaration declaration_;
    Broker::ConnectionId owner_;
    QueuePolicy policy_;
    struct Waiting {
        StoredMessage message;
        std::uint64_t commit;
        enum { published, moved, follows } kind;  // follows: not written itself, comes with the one before
    };

    // Into ready_, at the back; a stream's message gets its offset.
    void make_ready(StoredMessage&& message);

    Ring<StoredMessage> ready_;
    std::int64_t first_offset_ = 0;  // a stream's
    std::uint64_t log_bytes_ = 0;    // a stream's
    std::deque<Waiting> waiting_;
    std::uint64_t stored_id_ = 0;
    std::vector<Consumer*> consumers_;
    std::size_t next_consumer_ = 0;
    bool had_consumer_ = false;
    bool deleted_ = false;
    ExpiryTimer timer_;
    std::uint64_t route_mark_ = 0;
};

}  // namespace acemq::inproc::detail
