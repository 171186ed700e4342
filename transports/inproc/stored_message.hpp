// A message as a queue keeps it: what a consumer will receive, and when it entered the
// queue it is in. The unit the broker stores, moves between queues and hands out.
// Internal to the inproc broker; a plain value.
//
// The message's block is shared (InboundMessage): every delivery of it hands the consumer
// the same one instead of a copy, and copies of a StoredMessage (one per queue a publish
// reaches) share it too. What is shared is never changed: edit() and mark_redelivered() make
// a new block while anyone else holds it, so a handler reading its delivery never sees it
// change under it.
#pragma once

#include <cstdint>
#include <utility>

#include <acemq/clock.hpp>
#include <acemq/transport.hpp>

namespace acemq::inproc::detail {

struct StoredMessage {
    // Changes the message through its parts (its body moved, not copied, when this
    // StoredMessage holds it alone).
    template <class Change>
    void edit(Change&& change) {
        InboundParts parts = std::move(message).parts();
        change(parts);
        message = InboundMessage(std::move(parts));
    }

    void mark_redelivered() { message.set_redelivered(true); }

    InboundMessage message;
    Clock::time_point enqueued{};  // when it entered its queue: a TTL runs from here
    bool persistent = false;       // as published: a durable broker keeps it in a durable queue
    std::uint64_t row = 0;         // its id in the data file; 0 when it is in memory only
};

}  // namespace acemq::inproc::detail
