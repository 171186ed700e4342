// The deliveries of one consumer channel's life that are not settled on the wire yet, and
// how the settlements waiting for them become as few basic.ack / basic.nack frames as AMQP
// allows: one frame with `multiple` for each run of equal settlements at the bottom of the
// channel's open tags, one frame each for settlements above a delivery still unsettled (a
// `multiple` there would settle that one too). I/O side only; internal.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

namespace acemq::amqp {

enum class Outcome : std::uint8_t { ack, requeue, reject };

struct Settlement {
    std::uint64_t broker_tag = 0;
    Outcome outcome = Outcome::ack;
};

// One basic.ack (Outcome::ack) or basic.nack to write; `multiple` settles every open tag up
// to `broker_tag`.
struct SettlementFrame {
    Outcome outcome = Outcome::ack;
    std::uint64_t broker_tag = 0;
    bool multiple = false;
};

class OpenDeliveries {
public:
    // A delivery handed out on the channel; the broker's tags rise on a channel.
    void delivered(std::uint64_t broker_tag) { open_.push_back(broker_tag); }

    // The frames that settle `waiting` (in any order), to be written in the order given. A
    // tag that is not open (settled already, or not of this channel's life) is left out: the
    // broker would close the channel for it, or settle another message.
    std::vector<SettlementFrame> settle(std::vector<Settlement> waiting);

    std::size_t size() const noexcept { return open_.size(); }

private:
    std::deque<std::uint64_t> open_;  // ascending; at most the prefetch
};

}  // namespace acemq::amqp
