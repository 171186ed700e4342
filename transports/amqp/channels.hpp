// Which channel does what on a transport's connection, and the delivery tags handed out on
// them. Internal.
#pragma once

#include <amqp.h>

#include <cstdint>
#include <set>

namespace acemq::amqp {

inline constexpr amqp_channel_t publish_channel = 1;  // confirm mode; every publish
inline constexpr amqp_channel_t admin_channel = 2;    // declarations and questions (a failure closes it)
inline constexpr amqp_channel_t pull_channel = 3;     // basic.get and its settlements
inline constexpr amqp_channel_t first_consumer_channel = 4;

// A delivery tag as handed to Delivery: the connection's generation in the top 16 bits, so
// a settlement of a delivery from before a reconnect can be told apart (the broker has
// already given that message back to its queue, and its tag now means another message).
inline constexpr int generation_shift = 48;
inline std::uint64_t tag_for(std::uint64_t generation, std::uint64_t broker_tag) {
    return (generation << generation_shift) | broker_tag;
}
inline std::uint64_t generation_of(std::uint64_t tag) { return tag >> generation_shift; }
inline std::uint64_t broker_tag_of(std::uint64_t tag) { return tag & ((std::uint64_t{1} << generation_shift) - 1); }

// The consumer channels of one connection: one per subscription, reused once given back.
class ConsumerChannels {
public:
    amqp_channel_t take() {
        if (free_.empty()) return next_++;
        const amqp_channel_t channel = *free_.begin();
        free_.erase(free_.begin());
        return channel;
    }
    void give_back(amqp_channel_t channel) { free_.insert(channel); }
    // For a new connection: every channel unused.
    void reset() {
        next_ = first_consumer_channel;
        free_.clear();
    }

private:
    amqp_channel_t next_ = first_consumer_channel;
    std::set<amqp_channel_t> free_;
};

}  // namespace acemq::amqp
