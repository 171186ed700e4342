// Content being put together from its frames (a method, a header, body frames) on each
// channel: a delivery to a consumer, or a publish the broker returned. I/O thread only;
// internal.
#pragma once

#include <amqp.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <acemq/transport.hpp>

namespace acemq::amqp {

// A whole message that came in on `channel`.
struct Incoming {
    enum class Kind { delivery, returned };
    Kind kind = Kind::delivery;
    amqp_channel_t channel = 0;
    InboundMessage message;
    std::uint64_t broker_tag = 0;  // of a delivery
    std::string return_reason;     // of a returned publish
};

class IncomingContent {
public:
    // basic.deliver and basic.return start content on their channel.
    void begin_delivery(amqp_channel_t channel, const amqp_basic_deliver_t& deliver);
    void begin_return(amqp_channel_t channel, const amqp_basic_return_t& returned);
    // A header or body frame; the message once its last byte is here. Content for a channel
    // with none begun (one given up) is dropped with it.
    std::optional<Incoming> add(const amqp_frame_t& frame);
    // The channel is given up, or the connection: what was begun on it is dropped.
    void drop(amqp_channel_t channel) { partial_.erase(channel); }
    void clear() { partial_.clear(); }

private:
    struct Partial {
        Incoming incoming;
        InboundParts parts;  // the message so far, made one when its last byte is here
        std::uint64_t body_size = 0;
        bool have_header = false;
    };
    std::map<amqp_channel_t, Partial> partial_;
};

}  // namespace acemq::amqp
