// Message TTL and dead-lettering, driven by a ManualClock: a five-minute retry rung runs
// in microseconds, and a message comes home exactly when its TTL is over, not a moment
// before.
#include <catch2/catch.hpp>

#include <acemq/error.hpp>
#include <acemq/naming.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "inbox.hpp"

using namespace acemq;
using namespace inproc_test;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

namespace {

struct Fixture {
    std::string name = unique_name("ttl");
    std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
    std::shared_ptr<inproc::Broker> broker = inproc::broker(name, clock);
    std::shared_ptr<Transport> transport = open_transport("inproc://" + name);

    // The family's retry shape: source queue "orders", a rung with the three rung arguments,
    // and acemq.retry bringing expired rung messages home.
    void declare_rung(milliseconds delay) {
        transport->declare(Topology{}
                               .exchange(retry_exchange, ExchangeKind::direct)
                               .queue("orders", classic())
                               .queue(rung_queue("orders", delay), classic(rung_args("orders", delay)))
                               .bind("orders", retry_exchange, "orders"));
    }
};

// A ManualClock that keeps the books of its timers: each one armed is later fired,
// cancelled, or still armed.
class BookedClock final : public Clock {
public:
    time_point now() const override { return inner_.now(); }
    bool wait_until(time_point deadline, std::stop_token stop) override {
        return inner_.wait_until(deadline, std::move(stop));
    }
    TimerId call_at(time_point deadline, std::function<void()> action) override {
        auto fired = std::make_shared<std::atomic<bool>>(false);
        const TimerId timer = inner_.call_at(deadline, [fired, action = std::move(action)] {
            *fired = true;
            action();
        });
        std::lock_guard guard(lock_);
        timers_.emplace(timer, Timer{std::move(fired)});
        return timer;
    }
    void cancel(TimerId timer) override {
        inner_.cancel(timer);
        std::lock_guard guard(lock_);
        if (auto found = timers_.find(timer); found != timers_.end()) found->second.cancelled = true;
    }
    void advance(duration step) { inner_.advance(step); }

    std::size_t armed() const {
        return count([](const Timer& timer) { return !*timer.fired && !timer.cancelled; });
    }
    std::size_t fired() const {
        return count([](const Timer& timer) { return timer.fired->load(); });
    }

private:
    struct Timer {
        std::shared_ptr<std::atomic<bool>> fired;
        bool cancelled = false;
    };
    template <class Predicate>
    std::size_t count(Predicate predicate) const {
        std::lock_guard guard(lock_);
        return static_cast<std::size_t>(
            std::count_if(timers_.begin(), timers_.end(), [&](const auto& entry) { return predicate(entry.second); }));
    }

    ManualClock inner_;
    mutable std::mutex lock_;
    std::map<TimerId, Timer> timers_;
};

FieldTable death_entry(const InboundMessage& message, std::size_t index) {
    const FieldValue x_death = message.headers().at("x-death");
    const auto& deaths = std::get<FieldArray>(x_death.get());
    REQUIRE(index < deaths.size());
    return std::get<FieldTable>(deaths[index].get());
}

std::size_t death_count(const InboundMessage& message) {
    return std::get<FieldArray>(message.headers().at("x-death").get()).size();
}

}  // namespace

TEST_CASE("a message on a five-minute rung comes home after five minutes, not before", "[inproc][ttl]") {
    Fixture f;
    f.declare_rung(minutes(5));
    const std::string rung = rung_queue("orders", minutes(5));
    REQUIRE(rung == "orders.retry.5m");

    f.transport->publish(message("", rung, "retry me"));
    CHECK(f.transport->queue_depth(rung) == 1);

    f.clock->advance(minutes(4) + seconds(59));
    CHECK(f.transport->queue_depth(rung) == 1);
    CHECK(f.transport->queue_depth("orders") == 0);

    f.clock->advance(seconds(1));
    CHECK(f.transport->queue_depth(rung) == 0);
    REQUIRE(f.transport->queue_depth("orders") == 1);

    auto home = f.transport->pull("orders");
    REQUIRE(home);
    const InboundMessage& m = home->message();
    CHECK(text(m.body()) == "retry me");
    CHECK(m.exchange() == "acemq.retry");
    CHECK(m.routing_key() == "orders");
    CHECK_FALSE(m.redelivered());
    REQUIRE(death_count(m) == 1);
    const FieldTable& death = death_entry(m, 0);
    CHECK(death.at("count") == FieldValue(std::int64_t{1}));
    CHECK(death.at("reason") == FieldValue("expired"));
    CHECK(death.at("queue") == FieldValue(rung));
    CHECK(death.at("exchange") == FieldValue(""));
    CHECK(death.at("routing-keys") == FieldValue(FieldArray{FieldValue(rung)}));
    REQUIRE(death.at("time").holds<FieldTimestamp>());  // as RabbitMQ types it
    CHECK(std::get<FieldTimestamp>(death.at("time").get()).time_since_epoch().count() > 0);
    CHECK(m.headers().at("x-first-death-reason") == FieldValue("expired"));
    CHECK(m.headers().at("x-first-death-queue") == FieldValue(rung));
    home->ack();
}

TEST_CASE("a consumer on the source queue gets the message when it comes home", "[inproc][ttl]") {
    Fixture f;
    f.declare_rung(seconds(30));
    Inbox inbox;
    auto subscription = f.transport->consume("orders", {}, inbox.deliver());
    f.transport->publish(message("", "orders.retry.30s", "x"));
    f.clock->advance(seconds(29));
    CHECK(inbox.size() == 0);
    f.clock->advance(seconds(1));
    auto delivery = inbox.take();
    REQUIRE(delivery);
    CHECK(text(delivery->message().body()) == "x");
    delivery->ack();
}

TEST_CASE("each message expires on its own time, in order", "[inproc][ttl]") {
    Fixture f;
    f.declare_rung(seconds(10));
    f.transport->publish(message("", "orders.retry.10s", "first"));
    f.clock->advance(seconds(4));
    f.transport->publish(message("", "orders.retry.10s", "second"));
    f.clock->advance(seconds(6));
    CHECK(f.transport->queue_depth("orders") == 1);
    CHECK(f.transport->queue_depth("orders.retry.10s") == 1);
    f.clock->advance(seconds(3));
    CHECK(f.transport->queue_depth("orders") == 1);
    f.clock->advance(seconds(1));
    CHECK(f.transport->queue_depth("orders") == 2);
    auto first = f.transport->pull("orders");
    REQUIRE(first);
    CHECK(text(first->message().body()) == "first");
}

TEST_CASE("a second death through the same queue for the same reason counts up", "[inproc][ttl]") {
    Fixture f;
    f.declare_rung(seconds(10));
    f.transport->publish(message("", "orders.retry.10s", "x"));
    f.clock->advance(seconds(10));
    auto once = f.transport->pull("orders");
    REQUIRE(once);

    // The engine's next retry: the same message republished to the rung, headers kept.
    OutboundMessage again = message("", "orders.retry.10s", "x");
    again.headers = once->message().headers().table();
    once->ack();
    f.transport->publish(std::move(again));
    f.clock->advance(seconds(10));
    auto twice = f.transport->pull("orders");
    REQUIRE(twice);
    REQUIRE(death_count(twice->message()) == 1);
    CHECK(death_entry(twice->message(), 0).at("count") == FieldValue(std::int64_t{2}));
}

TEST_CASE("x-death lists deaths newest first", "[inproc][ttl]") {
    Fixture f;
    f.transport->declare(Topology{}
                             .exchange("dlx", ExchangeKind::direct)
                             .queue("work", classic({{"x-dead-letter-exchange", FieldValue("dlx")},
                                                     {"x-dead-letter-routing-key", FieldValue("parking")}}))
                             .queue("parking", classic({{"x-message-ttl", FieldValue(std::int64_t{1000})},
                                                        {"x-dead-letter-exchange", FieldValue("dlx")},
                                                        {"x-dead-letter-routing-key", FieldValue("end")}}))
                             .queue("end", classic())
                             .bind("parking", "dlx", "parking")
                             .bind("end", "dlx", "end"));
    f.transport->publish(message("", "work", "x"));
    auto delivery = f.transport->pull("work");
    REQUIRE(delivery);
    delivery->reject();
    CHECK(f.transport->queue_depth("parking") == 1);
    f.clock->advance(seconds(1));
    auto end = f.transport->pull("end");
    REQUIRE(end);
    REQUIRE(death_count(end->message()) == 2);
    CHECK(death_entry(end->message(), 0).at("reason") == FieldValue("expired"));
    CHECK(death_entry(end->message(), 0).at("queue") == FieldValue("parking"));
    CHECK(death_entry(end->message(), 1).at("reason") == FieldValue("rejected"));
    CHECK(death_entry(end->message(), 1).at("queue") == FieldValue("work"));
    CHECK(end->message().headers().at("x-first-death-reason") == FieldValue("rejected"));
    CHECK(end->message().headers().at("x-last-death-reason") == FieldValue("expired"));
    CHECK(end->message().routing_key() == "end");
}

TEST_CASE("nack without requeue dead-letters with reason rejected", "[inproc][dlx]") {
    Fixture f;
    f.transport->declare(Topology{}.queue("orders.new", {.dead_letter = true}));  // acemq.dlx → orders.new.dlq
    f.transport->publish(message("", "orders.new", "bad"));
    Inbox inbox;
    auto subscription = f.transport->consume("orders.new", {}, inbox.deliver());
    auto delivery = inbox.take();
    REQUIRE(delivery);
    delivery->reject();
    CHECK(f.transport->queue_depth("orders.new") == 0);
    auto dead = f.transport->pull("orders.new.dlq");
    REQUIRE(dead);
    CHECK(text(dead->message().body()) == "bad");
    CHECK(dead->message().exchange() == "acemq.dlx");
    CHECK(dead->message().routing_key() == "orders.new.dlq");
    const FieldTable& death = death_entry(dead->message(), 0);
    CHECK(death.at("reason") == FieldValue("rejected"));
    CHECK(death.at("queue") == FieldValue("orders.new"));
    CHECK(death.at("routing-keys") == FieldValue(FieldArray{FieldValue("orders.new")}));
}

TEST_CASE("without a dead-letter exchange an expired message is dropped", "[inproc][ttl]") {
    Fixture f;
    f.transport->declare(Topology{}.queue("short", classic({{"x-message-ttl", FieldValue(std::int64_t{1000})}})));
    f.transport->publish(message("", "short"));
    f.clock->advance(milliseconds(999));
    CHECK(f.transport->queue_depth("short") == 1);
    f.clock->advance(milliseconds(1));
    CHECK(f.transport->queue_depth("short") == 0);
}

TEST_CASE("without a dead-letter routing key the original key is kept", "[inproc][ttl]") {
    Fixture f;
    f.transport->declare(Topology{}
                             .exchange("back", ExchangeKind::topic)
                             .queue("wait", classic({{"x-message-ttl", FieldValue(std::int64_t{1000})},
                                                     {"x-dead-letter-exchange", FieldValue("back")}}))
                             .queue("home", classic())
                             .bind("home", "back", "wait"));
    f.transport->publish(message("", "wait"));
    f.clock->advance(seconds(1));
    auto home = f.transport->pull("home");
    REQUIRE(home);
    CHECK(home->message().routing_key() == "wait");
}

TEST_CASE("handed-out messages do not expire; requeued ones keep their first enqueue time", "[inproc][ttl]") {
    Fixture f;
    f.declare_rung(seconds(10));
    const std::string rung = "orders.retry.10s";
    f.transport->publish(message("", rung, "held"));
    auto held = f.transport->pull(rung);
    REQUIRE(held);
    f.clock->advance(seconds(30));
    CHECK(f.transport->queue_depth("orders") == 0);  // unacked: no expiry
    held->requeue();  // its TTL ran out while it was out: it expires as soon as it is back
    CHECK(f.transport->queue_depth(rung) == 0);
    CHECK(f.transport->queue_depth("orders") == 1);

    f.transport->publish(message("", rung, "second"));
    f.clock->advance(seconds(4));
    auto second = f.transport->pull(rung);
    REQUIRE(second);
    second->requeue();  // back at the head, six seconds left, not ten
    f.clock->advance(seconds(5));
    CHECK(f.transport->queue_depth(rung) == 1);
    f.clock->advance(seconds(1));
    CHECK(f.transport->queue_depth(rung) == 0);
    CHECK(f.transport->queue_depth("orders") == 2);
}

TEST_CASE("a message that dead-letters back into its own queue by expiry is dropped, as RabbitMQ does",
          "[inproc][ttl]") {
    Fixture f;
    f.transport->declare(Topology{}
                             .exchange("loop", ExchangeKind::fanout)
                             .queue("cycle", classic({{"x-message-ttl", FieldValue(std::int64_t{1000})},
                                                      {"x-dead-letter-exchange", FieldValue("loop")}}))
                             .bind("cycle", "loop", ""));
    f.transport->publish(message("", "cycle"));
    f.clock->advance(seconds(10));
    CHECK(f.transport->queue_depth("cycle") == 0);
}

TEST_CASE("TTL 0 messages go to a waiting consumer or expire at once", "[inproc][ttl]") {
    Fixture f;
    f.transport->declare(Topology{}.queue("now", classic({{"x-message-ttl", FieldValue(std::int64_t{0})}})));
    f.transport->publish(message("", "now"));
    CHECK(f.transport->queue_depth("now") == 0);
    Inbox inbox;
    auto subscription = f.transport->consume("now", {}, inbox.deliver());
    f.transport->publish(message("", "now"));
    CHECK(inbox.size() == 1);
}

TEST_CASE("deleting a queue cancels its expiry timer; a later advance finds nothing", "[inproc][ttl]") {
    Fixture f;
    f.declare_rung(seconds(10));
    f.transport->publish(message("", "orders.retry.10s"));
    f.transport->delete_queue("orders.retry.10s");
    f.clock->advance(minutes(1));
    CHECK(f.transport->queue_depth("orders") == 0);
}

TEST_CASE("a broker released with armed timers cancels them", "[inproc][ttl]") {
    auto clock = std::make_shared<BookedClock>();
    {
        const std::string name = unique_name("released");
        auto broker = inproc::broker(name, clock);
        auto transport = open_transport("inproc://" + name);
        transport->declare(Topology{}.queue("q", classic({{"x-message-ttl", FieldValue(std::int64_t{1000})}})));
        transport->publish(message("", "q"));
        REQUIRE(clock->armed() == 1);  // the message's expiry
    }
    CHECK(clock->armed() == 0);
    CHECK_NOTHROW(clock->advance(seconds(5)));
    CHECK(clock->fired() == 0);
}

TEST_CASE("expiry runs on the system clock's timer thread too", "[inproc][ttl]") {
    const std::string name = unique_name("system");
    auto transport = open_transport("inproc://" + name);
    transport->declare(Topology{}
                           .exchange("back", ExchangeKind::direct)
                           .queue("wait", classic({{"x-message-ttl", FieldValue(std::int64_t{20})},
                                                   {"x-dead-letter-exchange", FieldValue("back")},
                                                   {"x-dead-letter-routing-key", FieldValue("home")}}))
                           .queue("home", classic())
                           .bind("home", "back", "home"));
    Inbox inbox;
    auto subscription = transport->consume("home", {}, inbox.deliver());
    transport->publish(message("", "wait"));
    auto delivery = inbox.take(milliseconds(5000));
    REQUIRE(delivery);
    delivery->ack();
}
