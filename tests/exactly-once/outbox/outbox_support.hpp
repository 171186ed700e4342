// What the outbox tests share: a bus on the embedded broker behind a transport that can
// refuse, break or hold a publish, and remembers what it was asked to send.
#pragma once

#include <catch2/catch.hpp>
#include "../../support/forwarding_transport.hpp"
#include "../../support/thrown.hpp"

#include <acemq/acemq.hpp>
#include <acemq/outbox.hpp>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include "../../support/messages.hpp"

namespace outbox_test {

using testing_support::what_of;

using namespace std::chrono_literals;

using test_messages::Order;

// The embedded broker, except: a routing key containing ".nacked" is not confirmed, one
// containing ".broken" throws as a lost connection would, and while `hold` is set a
// publish waits (30 s at most) for it to be cleared (for tests of close during a sweep).
class FaultyTransport final : public testing_support::ForwardingTransport {
public:
    using ForwardingTransport::ForwardingTransport;

    acemq::PublishResult publish(acemq::OutboundMessage message) override {
        {
            std::unique_lock guard(lock_);
            sent_.push_back(message);
            ++entered_;
            changed_.notify_all();
            changed_.wait_for(guard, 30s, [&] { return !hold_; });  // bounded: a failed test never hangs here
        }
        if (message.routing_key.find(".nacked") != std::string::npos)
            return acemq::PublishResult{.confirmed = false, .return_reason = "the broker said no"};
        if (message.routing_key.find(".broken") != std::string::npos)
            throw acemq::Error("acemq: the connection to the broker was lost");
        return ForwardingTransport::publish(std::move(message));
    }

    void hold(bool on) {
        std::lock_guard guard(lock_);
        hold_ = on;
        changed_.notify_all();
    }
    // Waits up to `timeout` until `count` publishes have started.
    bool wait_entered(std::size_t count, std::chrono::milliseconds timeout) {
        std::unique_lock guard(lock_);
        return changed_.wait_for(guard, timeout, [&] { return entered_ >= count; });
    }
    std::vector<acemq::OutboundMessage> sent() const {
        std::lock_guard guard(lock_);
        return sent_;
    }

private:
    mutable std::mutex lock_;
    std::condition_variable changed_;
    std::vector<acemq::OutboundMessage> sent_;
    std::size_t entered_ = 0;
    bool hold_ = false;
};

// The transports made by the "outbox-faulty" scheme, by broker name, so a test can reach
// the one under its bus.
inline std::map<std::string, std::shared_ptr<FaultyTransport>>& faulty_transports() {
    static std::map<std::string, std::shared_ptr<FaultyTransport>> made;
    return made;
}
inline std::mutex& faulty_lock() {
    static std::mutex lock;
    return lock;
}

// A fresh bus on its own embedded broker, with its faulty transport and queue `queue`.
struct Fixture {
    explicit Fixture(const std::string& queue = "orders.events")
        : name("outbox-" + acemq::new_uuid()), bus(connect(name)), queue(queue) {
        if (!queue.empty()) bus.declare(acemq::Topology{}.queue(queue));
    }
    // The registry lets go of this fixture's transport, so it closes with the bus.
    ~Fixture() {
        std::lock_guard guard(faulty_lock());
        faulty_transports().erase(name);
    }
    Fixture(const Fixture&) = delete;
    Fixture& operator=(const Fixture&) = delete;

    static acemq::Bus connect(const std::string& name) {
        acemq::register_transport("outbox-faulty", [](std::string_view url) -> std::shared_ptr<acemq::Transport> {
            const std::string broker(url.substr(std::string_view("outbox-faulty://").size()));
            auto made = std::make_shared<FaultyTransport>(acemq::open_transport("inproc://" + broker));
            std::lock_guard guard(faulty_lock());
            faulty_transports()[broker] = made;
            return made;
        });
        return acemq::connect("outbox-faulty://" + name, {.origin = "shop@test"});
    }

    FaultyTransport& transport() {
        std::lock_guard guard(faulty_lock());
        return *faulty_transports().at(name);
    }

    // Every message ready in `from`, taken off and acked, in queue order.
    std::vector<acemq::InboundMessage> drain(const std::string& from) {
        std::vector<acemq::InboundMessage> taken;
        while (auto delivery = bus.transport().pull(from)) {
            taken.push_back(delivery->message());
            delivery->ack();
        }
        return taken;
    }
    std::vector<acemq::InboundMessage> drain() { return drain(queue); }

    // Waits up to `timeout` until `from` holds `depth` ready messages.
    bool wait_depth(const std::string& from, std::uint64_t depth, std::chrono::milliseconds timeout = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (bus.transport().queue_depth(from) != depth) {
            if (std::chrono::steady_clock::now() >= deadline) return false;
            std::this_thread::sleep_for(2ms);
        }
        return true;
    }

    std::string name;
    acemq::Bus bus;
    std::string queue;
};

// A record for the default exchange, routed to `queue`, created `age` ago.
inline acemq::OutboxRecord order_record(acemq::Bus& bus, const std::string& queue, const std::string& order_id,
                                        std::chrono::milliseconds age = 0ms) {
    acemq::OutboxRecord made = acemq::record_to_queue(bus, queue, Order{order_id, 100});
    made.created_at -= age;
    return made;
}

inline std::vector<std::string> ids_of(const std::vector<acemq::OutboxRecord>& records) {
    std::vector<std::string> ids;
    for (const auto& record : records) ids.push_back(record.id);
    return ids;
}

inline std::string order_id_of(const acemq::InboundMessage& message) {
    return acemq::decode<Order>(*acemq::default_codec(), message.body(), message.content_type()).id;
}

// Collects what a relay reports.
class Events final : public acemq::OutboxObserver {
public:
    struct Seen {
        std::string id, exchange, routing_key;
        acemq::RelayOutcome outcome;
        std::optional<double> lag_seconds;
        std::string error;
    };
    void relayed(const acemq::RelayedEvent& event) override {
        std::lock_guard guard(lock_);
        seen_.push_back(Seen{std::string(event.id), std::string(event.exchange), std::string(event.routing_key),
                             event.outcome, event.lag ? std::optional<double>(event.lag->count()) : std::nullopt,
                             std::string(event.error)});
    }
    std::vector<Seen> seen() const {
        std::lock_guard guard(lock_);
        return seen_;
    }

private:
    mutable std::mutex lock_;
    std::vector<Seen> seen_;
};

}  // namespace outbox_test
