// Test helpers for the inproc broker: an Inbox that a DeliverFn fills (as the engine's
// worker queue would), message builders and a unique broker name per test.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/clock.hpp>
#include <acemq/inproc.hpp>
#include <acemq/transport.hpp>
#include "inproc/inproc_transport.hpp"

namespace inproc_test {

using namespace acemq;

// Deliveries as a consumer's worker queue holds them. The DeliverFn only queues, as
// transport.hpp demands; tests take them off from any thread.
class Inbox {
public:
    DeliverFn deliver() {
        return [this](Delivery delivery) {
            std::lock_guard guard(lock_);
            deliveries_.push_back(std::move(delivery));
            ++received_;
            arrived_.notify_all();
        };
    }

    std::size_t size() {
        std::lock_guard guard(lock_);
        return deliveries_.size();
    }

    std::size_t received() {
        std::lock_guard guard(lock_);
        return received_;
    }

    // The oldest delivery not yet taken, or nullopt when none arrives within `patience`.
    std::optional<Delivery> take(std::chrono::milliseconds patience = std::chrono::milliseconds(0)) {
        std::unique_lock guard(lock_);
        if (!arrived_.wait_for(guard, patience, [&] { return !deliveries_.empty(); })) return std::nullopt;
        Delivery delivery = std::move(deliveries_.front());
        deliveries_.pop_front();
        return delivery;
    }

private:
    std::mutex lock_;
    std::condition_variable arrived_;
    std::deque<Delivery> deliveries_;
    std::size_t received_ = 0;
};

inline std::string unique_name(const std::string& stem) {
    static std::atomic<int> counter{0};
    return stem + "-" + std::to_string(counter.fetch_add(1));
}

inline Bytes bytes(std::string_view text) {
    Bytes out;
    for (char c : text) out.push_back(static_cast<std::byte>(c));
    return out;
}

inline std::string text(std::span<const std::byte> body) {
    std::string out;
    for (std::byte b : body) out.push_back(static_cast<char>(b));
    return out;
}

inline OutboundMessage message(std::string exchange, std::string routing_key, std::string_view body = "m",
                               bool mandatory = false) {
    OutboundMessage out;
    out.exchange = std::move(exchange);
    out.routing_key = std::move(routing_key);
    out.body = bytes(body);
    out.message_id = std::string(body);
    out.mandatory = mandatory;
    return out;
}

// Every message of `queue` in delivery order, pulled and handed back (closing the connection
// requeues them, so the queue is as it was, but each comes back marked redelivered).
inline std::vector<InboundMessage> pull_all(inproc::Broker& broker, std::string_view queue) {
    const auto connection = broker.open_connection();
    std::vector<InboundMessage> messages;
    std::vector<Delivery> held;
    while (auto delivery = broker.pull(connection, queue)) {
        messages.push_back(delivery->message());
        held.push_back(std::move(*delivery));
    }
    broker.close_connection(connection);
    return messages;
}

// ConsumeSpec has a member without a default, so designated initializers draw a warning.
inline ConsumeSpec with_prefetch(std::uint16_t prefetch) {
    ConsumeSpec spec;
    spec.prefetch = prefetch;
    return spec;
}

inline ConsumeSpec with_tag(std::string tag) {
    ConsumeSpec spec;
    spec.tag = std::move(tag);
    return spec;
}

inline QueueOptions classic(FieldTable arguments = {}) {
    return QueueOptions{.type = QueueType::classic, .durable = true, .arguments = std::move(arguments)};
}

}  // namespace inproc_test
