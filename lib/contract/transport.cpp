#include <acemq/transport.hpp>

#include <utility>

#include <acemq/error.hpp>
#include "builtin_transports.hpp"
#include "scheme_table.hpp"

namespace acemq {

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
        throw UsageError("acemq: cannot " + std::string(action) + " message " + std::string(message_.message_id()) +
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
