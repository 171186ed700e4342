// A five-minute retry ladder on the embedded broker with a ManualClock: the rung's TTL is
// driven by the test, so the whole ladder runs in milliseconds of real time.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include <acemq/inproc.hpp>

#include <mutex>
#include "../support/messages.hpp"

using namespace std::chrono_literals;

namespace {

using test_messages::Order;

}  // namespace

TEST_CASE("a five-minute rung brings the message home when the clock says so, not before") {
    const std::string name = "ladder-" + acemq::new_uuid();
    auto clock = std::make_shared<acemq::ManualClock>();
    auto broker = acemq::inproc::broker(name, clock);
    acemq::Bus bus = acemq::connect("inproc://" + name, {.clock = clock});
    bus.declare(acemq::Topology{}.queue("orders.new", {.dead_letter = true}));
    acemq::testing::Harness harness{bus};

    std::mutex lock;
    std::vector<std::int32_t> attempts;
    auto consumer = bus.consume<Order>("orders.new",
                                       [&](const acemq::Message<Order>& message) -> acemq::Ack {
                                           std::lock_guard guard(lock);
                                           attempts.push_back(message.envelope.attempt);
                                           throw std::runtime_error("the warehouse is not answering");
                                       },
                                       {.retry = acemq::fixed_retry(3, 5min)});
    auto seen = [&] {
        std::lock_guard guard(lock);
        return attempts;
    };

    bus.publisher_to_queue("orders.new").send(Order{"o-1", 4250});
    REQUIRE(harness.wait_settled("orders.new", acemq::Outcome::retried, 1, 5s));
    CHECK(bus.transport().queue_depth("orders.new.retry.5m") == 1);

    clock->advance(4min + 59s);
    CHECK(bus.transport().queue_depth("orders.new.retry.5m") == 1);  // not yet
    CHECK(seen() == std::vector<std::int32_t>{1});

    clock->advance(1s);  // five minutes: the TTL fires and acemq.retry routes it home
    REQUIRE(harness.wait_settled("orders.new", acemq::Outcome::retried, 2, 5s));
    CHECK(seen() == std::vector<std::int32_t>{1, 2});

    clock->advance(5min);
    REQUIRE(harness.wait_dead_lettered("orders.new", 1, 5s));
    CHECK(seen() == std::vector<std::int32_t>{1, 2, 3});
    consumer.close();

    auto copy = bus.transport().pull("orders.new.dlq");
    REQUIRE(copy.has_value());
    const acemq::Envelope envelope = acemq::read_envelope(copy->message());
    CHECK(envelope.error == "exhausted 3 attempts: std::runtime_error: the warehouse is not answering");
    CHECK(copy->message().headers().contains("x-death"));
    copy->ack();
}

TEST_CASE("a consumer-side wait follows the bus's clock too") {
    const std::string name = "wait-" + acemq::new_uuid();
    auto clock = std::make_shared<acemq::ManualClock>();
    auto broker = acemq::inproc::broker(name, clock);
    acemq::Bus bus = acemq::connect("inproc://" + name, {.clock = clock});
    bus.declare(acemq::Topology{}.queue("orders.new", {.dead_letter = true}));
    acemq::testing::Harness harness{bus};
    std::atomic<int> calls{0};
    auto consumer = bus.consume<Order>(
        "orders.new", [&](const acemq::Message<Order>&) { return ++calls == 1 ? acemq::retry() : acemq::accept(); },
        {.retry = acemq::fixed_retry(2, 10s)});
    bus.publisher_to_queue("orders.new").send(Order{"o-2", 1});

    // The worker is now holding the message for ten seconds of the manual clock.
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (clock->waiters() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    REQUIRE(clock->waiters() == 1);
    CHECK(calls == 1);
    clock->advance(10s);
    REQUIRE(harness.wait_settled("orders.new", acemq::Outcome::acked, 1, 5s));
    CHECK(calls == 2);
    consumer.close();
}
