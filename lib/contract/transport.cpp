#include <acemq/transport.hpp>

#include <map>
#include <mutex>

#include <acemq/error.hpp>
#include <acemq/url.hpp>
#include "builtin_transports.hpp"

namespace acemq {

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
        throw UsageError("acemq: cannot " + std::string(action) + " message " + message_->message_id +
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

// Starts with the transports built into the library; register_transport adds more.
struct Registry {
    Registry() {
        for (auto& [scheme, factory] : detail::builtin_transports()) factories.emplace(scheme, std::move(factory));
    }

    std::mutex lock;
    std::map<std::string, TransportFactory, std::less<>> factories;
};

Registry& registry() {
    static Registry instance;
    return instance;
}

}  // namespace

Health Transport::check_health(std::chrono::milliseconds /*timeout*/) { return Health{}; }

TransportInfo Transport::describe() const { return TransportInfo{}; }

void Transport::measure_connection(std::shared_ptr<Metrics> /*metrics*/) {}

void register_transport(std::string_view scheme, TransportFactory factory) {
    Registry& known = registry();
    std::lock_guard guard(known.lock);
    known.factories.insert_or_assign(std::string(scheme), std::move(factory));
}

std::shared_ptr<Transport> open_transport(std::string_view url) {
    const std::size_t separator = url.find("://");
    const std::string_view scheme = separator == std::string_view::npos ? std::string_view{} : url.substr(0, separator);
    TransportFactory factory;
    std::string known_schemes;
    {
        Registry& known = registry();
        std::lock_guard guard(known.lock);
        if (auto it = known.factories.find(scheme); it != known.factories.end()) factory = it->second;
        for (const auto& [name, unused] : known.factories) known_schemes += (known_schemes.empty() ? "" : ", ") + name;
    }
    if (!factory)
        throw InvalidArgument("acemq: no transport for \"" + redacted_url(url) + "\": the URL must start with one of " +
                              (known_schemes.empty() ? std::string("(none registered)") : known_schemes) +
                              " followed by ://");
    return factory(url);
}

}  // namespace acemq
