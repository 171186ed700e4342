// A consumer's lifecycle under pressure (issue 9): Bus::close drains every consumer at once,
// a consumer refuses a concurrency it cannot sensibly run, and a consumer closed or destroyed
// from inside its own handler does not wait for that handler. On the embedded broker.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../support/forwarding_transport.hpp"
#include "../support/gate.hpp"
#include "../support/messages.hpp"
#include "../support/tally.hpp"

using namespace std::chrono_literals;
using acemq::Message;
using testing_support::Gate;

namespace {

using test_messages::Order;

std::string unique(std::string_view base) { return std::string(base) + "-" + acemq::new_uuid().substr(0, 8); }

// Records, in order, when a subscription is stopped and when it is closed.
class Events {
public:
    void add(std::string event) {
        std::lock_guard guard(lock_);
        events_.push_back(std::move(event));
    }
    std::vector<std::string> all() {
        std::lock_guard guard(lock_);
        return events_;
    }

private:
    std::mutex lock_;
    std::vector<std::string> events_;
};

class RecordingSubscription final : public acemq::Subscription {
public:
    RecordingSubscription(std::unique_ptr<acemq::Subscription> inner, std::shared_ptr<Events> events)
        : inner_(std::move(inner)), events_(std::move(events)) {}
    void stop() override {
        events_->add("stop");
        inner_->stop();
    }
    void close() override {
        events_->add("close");
        inner_->close();
    }

private:
    std::unique_ptr<acemq::Subscription> inner_;
    std::shared_ptr<Events> events_;
};

// The embedded broker, telling `events` what happens to its subscriptions.
class RecordingTransport final : public testing_support::ForwardingTransport {
public:
    RecordingTransport(std::shared_ptr<acemq::Transport> inner, std::shared_ptr<Events> events)
        : ForwardingTransport(std::move(inner)), events_(std::move(events)) {}
    std::unique_ptr<acemq::Subscription> consume(std::string_view queue, const acemq::ConsumeSpec& spec,
                                                 acemq::DeliverFn deliver) override {
        return std::make_unique<RecordingSubscription>(ForwardingTransport::consume(queue, spec, std::move(deliver)),
                                                       events_);
    }

private:
    std::shared_ptr<Events> events_;
};

std::size_t threads_of_this_process() {
    const std::filesystem::directory_iterator tasks("/proc/self/task");
    return static_cast<std::size_t>(std::distance(begin(tasks), end(tasks)));
}

}  // namespace

TEST_CASE("Bus::close drains three stuck consumers at once, under one deadline") {
    auto events = std::make_shared<Events>();
    acemq::Bus bus = acemq::connect(
        std::make_shared<RecordingTransport>(acemq::open_transport("inproc://" + unique("close-all")), events));
    // Shared with the handlers: the cut-off workers outlive this test by a moment.
    auto gate = std::make_shared<Gate>();
    std::vector<acemq::Consumer> consumers;
    for (int i = 0; i < 3; ++i) {
        const std::string queue = "stuck-" + std::to_string(i);
        bus.declare(acemq::Topology{}.queue(queue, {.dead_letter = true}));
        consumers.push_back(bus.consume<Order>(queue,
                                               [gate](const Message<Order>&) {
                                                   gate->pass();
                                                   return acemq::accept();
                                               },
                                               {.drain_timeout = 1s}));
        bus.publisher_to_queue(queue).send(Order{"o-" + std::to_string(i), 1});
    }
    REQUIRE(gate->wait_waiting(3));

    bus.close();
    CHECK(gate->waiting() == 3);  // Bus::close returned on the deadline, the handlers still stuck
    gate->open();

    // All three were stopped before any was closed: each waited out the same deadline. One
    // after another, each with a deadline of its own, would be stop, close, stop, close, stop, close.
    const std::vector<std::string> seen = events->all();
    REQUIRE(seen.size() == 6);
    CHECK(std::count(seen.begin(), seen.begin() + 3, "stop") == 3);
    CHECK(std::count(seen.begin() + 3, seen.end(), "close") == 3);
}

TEST_CASE("a concurrency past max_concurrency is refused before any thread starts, naming both") {
    acemq::Bus bus = acemq::connect("inproc://" + unique("threads"));
    bus.declare(acemq::Topology{}.queue("orders"));
    auto handle = [](const Message<Order>&) { return acemq::accept(); };
    const std::size_t before = threads_of_this_process();
    REQUIRE_THROWS_AS(bus.consume<Order>("orders", handle, {.concurrency = acemq::max_concurrency + 1}),
                      acemq::InvalidArgument);
    CHECK_THROWS_WITH(bus.consume<Order>("orders", handle, {.concurrency = 100000}),
                      Catch::Contains("concurrency must be between 1 and 1024, got 100000") &&
                          Catch::Contains("raise the prefetch instead"));
    CHECK(threads_of_this_process() <= before);  // none started (another test's may have ended)
    CHECK_THROWS_WITH(acemq::connect("inproc://" + unique("threads"), {.concurrency = 5000}),
                      Catch::Contains("between 1 and 1024, got 5000"));

    acemq::Consumer wide = bus.consume<Order>("orders", handle, {.concurrency = 4});
    CHECK(wide.close());
}

TEST_CASE("close() inside the consumer's own handler returns at once; the delivery is still acked") {
    acemq::Bus bus = acemq::connect("inproc://" + unique("inside"));
    acemq::testing::Harness harness{bus};
    bus.declare(acemq::Topology{}.queue("orders", {.dead_letter = true}));
    std::optional<acemq::Consumer> consumer;
    testing_support::Tally closed;
    std::atomic<int> runs{0};
    std::atomic<bool> answer{true};
    consumer.emplace(bus.consume<Order>("orders",
                                        [&](const Message<Order>&) {
                                            ++runs;
                                            answer = consumer->close();  // a 30 s drain deadline, were it waited for
                                            closed.add();
                                            return acemq::accept();
                                        },
                                        {.drain_timeout = 30s}));
    bus.publisher_to_queue("orders").send(Order{"o-1", 1});
    REQUIRE(closed.wait_at_least(1, 10s));
    CHECK_FALSE(answer);  // its own handler was still running
    CHECK(harness.wait_settled("orders", acemq::Outcome::acked, 1, 10s));

    bus.publisher_to_queue("orders").send(Order{"o-2", 1});  // nobody consumes any more
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (bus.transport().queue_depth("orders") != 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
    CHECK(bus.transport().queue_depth("orders") == 1);
    CHECK(consumer->close());  // finished by its last worker: drained
    CHECK(runs == 1);
}

TEST_CASE("a Consumer destroyed inside its own handler does not wait for it; the delivery is still acked") {
    acemq::Bus bus = acemq::connect("inproc://" + unique("inside"));
    acemq::testing::Harness harness{bus};
    bus.declare(acemq::Topology{}.queue("orders", {.dead_letter = true}));
    std::optional<acemq::Consumer> consumer;
    testing_support::Tally destroyed;
    // Held by the handler, so expired once the last worker let go of the consumer.
    auto held_by_handler = std::make_shared<int>(0);
    const std::weak_ptr<int> handler_alive = held_by_handler;
    consumer.emplace(bus.consume<Order>("orders",
                                        [&, held_by_handler = std::move(held_by_handler)](const Message<Order>&) {
                                            consumer.reset();
                                            destroyed.add();
                                            return acemq::accept();
                                        },
                                        {.concurrency = 2, .drain_timeout = 30s}));
    bus.publisher_to_queue("orders").send(Order{"o-1", 1});
    REQUIRE(destroyed.wait_at_least(1, 10s));
    CHECK(harness.wait_settled("orders", acemq::Outcome::acked, 1, 10s));
    bus.close();  // the core is gone or going: closing the bus does not wait on it
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!handler_alive.expired() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
    CHECK(handler_alive.expired());  // the last worker out released the consumer, handler and all
}
