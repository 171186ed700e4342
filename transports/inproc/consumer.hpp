// One consumer of the embedded broker: a subscription to a queue with its prefetch, or the
// record of a connection's pulls, and the deliveries handed to it and not yet settled.
// Which message goes to which consumer, and what a settlement does to it, is the broker's
// (Broker::Impl, dispatch.cpp).
//
// A delivery tag is the consumer's id above the low 40 bits and its own sequence number
// below, so a settlement finds its consumer without a search.
//
// Ownership: the broker owns each consumer by id; the consumer shares the queue it reads
// and the queue each unsettled delivery came from. Internal to the inproc broker. Not
// thread-safe: the broker's lock guards every member.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <acemq/inproc.hpp>
#include <acemq/transport.hpp>
#include "inproc/ring.hpp"
#include "inproc/stored_message.hpp"

namespace acemq::inproc::detail {

class Queue;

// A delivery handed out and not settled: the queue a requeue sends it back to, and the
// message as it was stored. A plain value.
struct Unsettled {
    std::shared_ptr<Queue> queue;
    StoredMessage stored;
};

class Consumer {
public:
    // A subscription to `queue`, active from the start; prefetch 0: no limit.
    Consumer(std::uint64_t id, Broker::ConnectionId connection, std::shared_ptr<Queue> queue, std::string tag,
             std::uint16_t prefetch, DeliverFn deliver);
    // The record of a connection's pulls: no queue, never active, no limit.
    Consumer(std::uint64_t id, Broker::ConnectionId connection);
    Consumer(const Consumer&) = delete;
    Consumer& operator=(const Consumer&) = delete;

    // The consumer a delivery tag belongs to.
    static std::uint64_t id_of(std::uint64_t delivery_tag) noexcept;

    std::uint64_t id() const noexcept { return id_; }
    Broker::ConnectionId connection() const noexcept { return connection_; }
    const std::string& tag() const noexcept { return tag_; }
    const std::shared_ptr<Queue>& queue() const noexcept { return queue_; }  // null for pulls

    // Active: it takes new deliveries. Deactivated for good when stopped, or when its
    // queue goes.
    bool active() const noexcept { return active_; }
    void deactivate() noexcept { active_ = false; }
    bool has_room() const noexcept { return active_ && (prefetch_ == 0 || outstanding_ < prefetch_); }

    // A stream consumer's offset: the next message of the log it is handed.
    std::int64_t stream_position() const noexcept { return stream_position_; }
    void set_stream_position(std::int64_t offset) noexcept { stream_position_ = offset; }

    // Records `stored`, taken from `from`, as handed out; returns its delivery tag.
    std::uint64_t hand_out(std::shared_ptr<Queue> from, StoredMessage&& stored);
    // How many deliveries it holds unsettled.
    std::size_t outstanding() const noexcept { return outstanding_; }
    // Calls `visit` with each delivery it holds unsettled, in the order they were handed out.
    template <class Visit>
    void each_unsettled(Visit&& visit) const {
        for (std::size_t i = 0; i < handed_out_.size(); ++i)
            if (!handed_out_[i].settled) visit(handed_out_[i].delivery);
    }
    // Runs the DeliverFn on this thread, marked as inside one (reentry.hpp). False when it
    // threw: it must not (it only queues), so the caller stops this consumer.
    bool deliver(Delivery&& delivery) noexcept;
    // Settles delivery `delivery_tag` and gives back what it held; nullopt when it is not
    // this consumer's or is settled already.
    std::optional<Unsettled> settle(std::uint64_t delivery_tag);
    // Every delivery still unsettled, in the order they were handed out; the consumer
    // holds none afterwards. For closing it.
    std::vector<Unsettled> take_unsettled();
    // The ids in the data file of the messages it holds unsettled, a stream's excepted; for a
    // durable broker's clean close, which marks them redelivered.
    void collect_unsettled_rows(std::vector<std::uint64_t>& into) const;

private:
    struct Entry {
        std::uint64_t sequence = 0;
        Unsettled delivery;
        bool settled = false;
    };

    Entry* find(std::uint64_t sequence);
    void trim();

    std::uint64_t id_;
    Broker::ConnectionId connection_;
    std::shared_ptr<Queue> queue_;
    std::string tag_;
    std::uint16_t prefetch_ = 0;
    DeliverFn deliver_;
    bool active_ = false;
    std::uint64_t next_sequence_ = 1;
    Ring<Entry> handed_out_;  // in delivery order; settled entries linger until they reach the front
    std::size_t outstanding_ = 0;
    std::int64_t stream_position_ = 0;
};

}  // namespace acemq::inproc::detail
