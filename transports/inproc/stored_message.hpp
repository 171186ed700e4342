// A message as a queue keeps it: what a consumer will receive, and when it entered the
// queue it is in. The unit the broker stores, moves between queues and hands out.
// Internal to the inproc broker; a plain value.
#pragma once

#include <cstdint>

#include <acemq/clock.hpp>
#include <acemq/transport.hpp>

namespace acemq::inproc::detail {

struct StoredMessage {
    InboundMessage message;
    Clock::time_point enqueued{};  // set only in a queue with a TTL, which runs from here
    bool persistent = false;       // as published: a durable broker keeps it in a durable queue
    std::uint64_t row = 0;         // its id in the data file; 0 when it is in memory only
};

}  // namespace acemq::inproc::detail
