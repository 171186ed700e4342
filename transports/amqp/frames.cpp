// What the broker sends, frame by frame: content for consumers and returned publishes,
// confirms, cancellations, closes and flow control. Read by the I/O thread, or by a
// publisher waiting for its own confirm (both under the I/O lock).

#include <charconv>
#include <functional>
#include <optional>

#include "amqp/transport_impl.hpp"
#include "amqp/wire.hpp"

namespace acemq::amqp {

// Reads every frame that is already here, without waiting.
void AmqpTransport::Impl::pump_frames() {
    for (int frames = 0; connection_ && frames < 4096; ++frames) {
        const std::optional<amqp_frame_t> frame = connection_->next_frame();
        if (!frame) break;
        if (frame->frame_type == AMQP_FRAME_METHOD)
            handle_method(frame->channel, frame->payload.method);
        else if (std::optional<Incoming> done = incoming_.add(*frame))
            complete(std::move(*done));
    }
    if (connection_) connection_->release_buffers();
}

void AmqpTransport::Impl::handle_method(amqp_channel_t channel, const amqp_method_t& method) {
    switch (method.id) {
    case AMQP_BASIC_DELIVER_METHOD:
        incoming_.begin_delivery(channel, *static_cast<const amqp_basic_deliver_t*>(method.decoded));
        return;
    case AMQP_BASIC_RETURN_METHOD:
        incoming_.begin_return(channel, *static_cast<const amqp_basic_return_t*>(method.decoded));
        return;
    case AMQP_BASIC_ACK_METHOD: {
        const auto* ack = static_cast<const amqp_basic_ack_t*>(method.decoded);
        confirms_.confirm(ack->delivery_tag, ack->multiple != 0, true);
        return;
    }
    case AMQP_BASIC_NACK_METHOD: {
        const auto* nack = static_cast<const amqp_basic_nack_t*>(method.decoded);
        confirms_.confirm(nack->delivery_tag, nack->multiple != 0, false);
        return;
    }
    case AMQP_BASIC_CANCEL_METHOD:  // the broker ended a consumer: its queue was deleted
        subscriptions_.cancelled_by_broker(channel);
        note_stopped_queues();
        return;
    case AMQP_CHANNEL_CLOSE_METHOD: {
        const auto* close = static_cast<const amqp_channel_close_t*>(method.decoded);
        const std::string reason = reply_text(close->reply_code, close->reply_text);
        connection_->acknowledge_channel_close(channel);
        incoming_.drop(channel);
        channel_closed_by_broker(channel, reason, *close);
        return;
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
        const auto* close = static_cast<const amqp_connection_close_t*>(method.decoded);
        const std::string reason = reply_text(close->reply_code, close->reply_text);
        connection_->acknowledge_connection_close();
        throw ConnectionLost("acemq: the broker closed the connection to " + address_.printable() + " (" + reason +
                             ")");
    }
    case AMQP_CONNECTION_BLOCKED_METHOD: {
        const auto* blocked = static_cast<const amqp_connection_blocked_t*>(method.decoded);
        std::string reason = string_of(blocked->reason);
        set_blocked(BlockedState{.blocked = true, .reason = reason});
        events_.emit(ConnectionEvent::Kind::blocked, reason);
        return;
    }
    case AMQP_CONNECTION_UNBLOCKED_METHOD:
        set_blocked(BlockedState{});
        events_.emit(ConnectionEvent::Kind::unblocked, {});
        return;
    default: return;  // channel.flow and the like: nothing we act on
    }
}

void AmqpTransport::Impl::complete(Incoming in) {
    if (in.kind == Incoming::Kind::returned)
        confirms_.file_return(std::string(in.message.message_id()), in.return_reason);
    else
        subscriptions_.deliver(*connection_, std::move(in));
}

namespace {

// Which publish a channel.close was about, when its reply says: a 404 names the exchange
// that does not exist ("no exchange 'X' in vhost '/'"), a 406 the largest body RabbitMQ
// takes ("message size N is larger than [configured] max size M", its max_message_size).
std::function<bool(const OutboundMessage&)> publish_named_by(const amqp_channel_close_t& close) {
    const std::string text = string_of(close.reply_text);
    const auto after = [&](std::string_view mark) -> std::optional<std::string_view> {
        const std::size_t at = text.find(mark);
        if (at == std::string::npos) return std::nullopt;
        return std::string_view(text).substr(at + mark.size());
    };
    if (close.reply_code == AMQP_NOT_FOUND) {
        if (const auto rest = after("no exchange '"); rest && rest->find('\'') != std::string_view::npos)
            return [exchange = std::string(rest->substr(0, rest->find('\'')))](const OutboundMessage& message) {
                return message.exchange == exchange;
            };
    } else if (close.reply_code == AMQP_PRECONDITION_FAILED && text.find("is larger than") != std::string::npos) {
        if (const auto rest = after("max size ")) {
            std::size_t limit = 0;
            const auto [end, fault] = std::from_chars(rest->data(), rest->data() + rest->size(), limit);
            if (fault == std::errc())
                return [limit](const OutboundMessage& message) { return message.body.size() > limit; };
        }
    }
    return [](const OutboundMessage&) { return false; };
}

}  // namespace

// The broker closed one of our channels (a publish to a missing exchange, a bad ack, a
// queue deleted under a consumer...). Reopen it so the rest keeps going.
void AmqpTransport::Impl::channel_closed_by_broker(amqp_channel_t channel, const std::string& reason,
                                                   const amqp_channel_close_t& close) {
    if (channel == publish_channel) {
        // No confirm will come for any publish in flight on it. The one that caused the close
        // was refused, a refusal the broker stated, not a doubt; so were those after it.
        const amqp_method_number_t caused_by = (amqp_method_number_t{close.class_id} << 16) | close.method_id;
        if (caused_by == AMQP_BASIC_PUBLISH_METHOD)
            confirms_.refuse_from(reason, publish_named_by(close));
        else
            confirms_.fail_all(reason);
        open_publish_channel(*connection_);
        return;
    }
    if (channel == admin_channel || channel == pull_channel) {
        connection_->open_channel(channel);
        return;
    }
    subscriptions_.channel_closed(channel);
    resume_subscriptions();
}

void AmqpTransport::Impl::set_blocked(BlockedState state) {
    std::lock_guard lock(state_mutex_);
    blocked_ = std::move(state);
}

}  // namespace acemq::amqp
