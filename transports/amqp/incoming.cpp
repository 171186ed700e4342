#include "amqp/incoming.hpp"

#include "amqp/wire.hpp"

namespace acemq::amqp {

void IncomingContent::begin_delivery(amqp_channel_t channel, const amqp_basic_deliver_t& deliver) {
    Partial partial;
    partial.incoming.channel = channel;
    partial.incoming.broker_tag = deliver.delivery_tag;
    partial.parts.exchange = string_of(deliver.exchange);
    partial.parts.routing_key = string_of(deliver.routing_key);
    partial.parts.redelivered = deliver.redelivered != 0;
    partial_[channel] = std::move(partial);
}

void IncomingContent::begin_return(amqp_channel_t channel, const amqp_basic_return_t& returned) {
    Partial partial;
    partial.incoming.kind = Incoming::Kind::returned;
    partial.incoming.channel = channel;
    partial.incoming.return_reason = reply_text(returned.reply_code, returned.reply_text);
    partial_[channel] = std::move(partial);
}

std::optional<Incoming> IncomingContent::add(const amqp_frame_t& frame) {
    auto found = partial_.find(frame.channel);
    if (found == partial_.end()) return std::nullopt;
    Partial& in = found->second;
    if (frame.frame_type == AMQP_FRAME_HEADER) {
        in.have_header = true;
        in.body_size = frame.payload.properties.body_size;
        read_properties(in.parts, *static_cast<const amqp_basic_properties_t*>(frame.payload.properties.decoded));
        in.parts.body.reserve(in.body_size);
    } else if (frame.frame_type == AMQP_FRAME_BODY) {
        const auto* data = static_cast<const std::byte*>(frame.payload.body_fragment.bytes);
        in.parts.body.insert(in.parts.body.end(), data, data + frame.payload.body_fragment.len);
    }
    if (!in.have_header || in.parts.body.size() < in.body_size) return std::nullopt;
    Incoming done = std::move(in.incoming);
    done.message = InboundMessage(std::move(in.parts));
    partial_.erase(found);
    return done;
}

}  // namespace acemq::amqp
