// Which channel does what on a transport's connection. Internal.
#pragma once

#include <amqp.h>

#include <set>

namespace acemq::amqp {

inline constexpr amqp_channel_t publish_channel = 1;  // confirm mode; every publish
inline constexpr amqp_channel_t admin_channel = 2;    // declarations and questions (a failure closes it)
inline constexpr amqp_channel_t pull_channel = 3;     // basic.get and its settlements
inline constexpr amqp_channel_t first_consumer_channel = 4;

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
