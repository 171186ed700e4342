#include <acemq/transport.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include <acemq/error.hpp>
#include "builtin_transports.hpp"
#include "scheme_table.hpp"

namespace acemq {

InboundMessage::InboundMessage(InboundParts parts) : body_(std::move(parts.body)), redelivered_(parts.redelivered) {
    const std::array<const std::string*, text_count - 1> texts{&parts.content_type, &parts.exchange,
                                                               &parts.routing_key,  &parts.message_id,
                                                               &parts.reply_to,     &parts.decode_failure};
    std::size_t total = 0;
    for (const std::string* text : texts) total += text->size();
    // Most headers fit here: packed once, then copied, instead of counted and then packed.
    std::array<char, 512> scratch;
    const std::size_t headers_size =
        PackedHeaders::pack(parts.headers, parts.message_id, scratch.data(), scratch.size());
    if (total + headers_size > std::numeric_limits<std::uint32_t>::max())
        throw InvalidArgument(
            "acemq: a delivery's content type, exchange, routing key, id, reply-to, decode "
            "failure and headers come to " +
            std::to_string(total + headers_size) + " bytes; at most 4 GiB in all");
    texts_.resize(total + headers_size);
    char* at = texts_.data();
    for (std::size_t index = 0; index < texts.size(); ++index) {
        at = std::copy(texts[index]->begin(), texts[index]->end(), at);
        text_ends_[index] = static_cast<std::uint32_t>(at - texts_.data());
    }
    if (headers_size <= scratch.size())
        std::memcpy(at, scratch.data(), headers_size);
    else
        PackedHeaders::pack(parts.headers, parts.message_id, at, headers_size);
    text_ends_.back() = static_cast<std::uint32_t>(texts_.size());
}

InboundParts InboundMessage::parts() const& { return parts_with(body_); }

InboundParts InboundMessage::parts() && { return parts_with(std::move(body_)); }

InboundParts InboundMessage::parts_with(Bytes body) const {
    return InboundParts{.body = std::move(body),
                        .content_type = std::string(content_type()),
                        .exchange = std::string(exchange()),
                        .routing_key = std::string(routing_key()),
                        .message_id = std::string(message_id()),
                        .reply_to = std::string(reply_to()),
                        .headers = headers().table(),
                        .redelivered = redelivered_,
                        .decode_failure = std::string(decode_failure())};
}

Delivery::Delivery(InboundMessage message, DeliverySettler& settler, std::uint64_t delivery_tag)
    : Delivery(std::make_shared<const InboundMessage>(std::move(message)), settler, delivery_tag) {}

Delivery::Delivery(Delivery&& other) noexcept
    : message_(std::move(other.message_)), settler_(std::exchange(other.settler_, nullptr)), tag_(other.tag_) {}

Delivery& Delivery::operator=(Delivery&& other) noexcept {
    message_ = std::move(other.message_);
    settler_ = std::exchange(other.settler_, nullptr);
    tag_ = other.tag_;
    return *this;
}

DeliverySettler& Delivery::take_settler(std::string_view action) {
    if (settler_ == nullptr)
        throw UsageError("acemq: cannot " + std::string(action) + " message " + std::string(message_->message_id()) +
                         ": it was already settled; settle each delivery exactly once");
    return *std::exchange(settler_, nullptr);
}

void Delivery::ack() { take_settler("ack").ack(tag_); }

void Delivery::requeue() { take_settler("requeue").requeue(tag_); }

void Delivery::reject() { take_settler("reject").reject(tag_); }

std::vector<PublishResult> Transport::publish_batch(std::vector<OutboundMessage> messages) {
    std::vector<PublishResult> results;
    results.reserve(messages.size());
    for (OutboundMessage& message : messages) results.push_back(publish(std::move(message)));
    return results;
}

namespace {

detail::SchemeTable<TransportFactory>& transports() {
    static detail::SchemeTable<TransportFactory> table(detail::builtin_transports());
    return table;
}

}  // namespace

Health Transport::check_health(std::chrono::milliseconds /*timeout*/) { return Health{}; }

TransportInfo Transport::describe() const { return TransportInfo{}; }

void Transport::measure_connection(std::shared_ptr<Metrics> /*metrics*/) {}

void register_transport(std::string_view scheme, TransportFactory factory) {
    transports().set(scheme, std::move(factory));
}

std::shared_ptr<Transport> open_transport(std::string_view url) { return transports().find(url, "transport")(url); }

}  // namespace acemq
