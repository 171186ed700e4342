// A consumer's lone worker takes every delivery waiting when it wakes (consumer_core.hpp):
// the ones it took and has not started still count as waiting, for Bus::health's in-flight
// count and its stall, and go back to the queue, unhandled, when the consumer closes.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "../support/messages.hpp"

using namespace std::chrono_literals;

namespace {

using test_messages::Order;

// A handler that holds each delivery until the test lets it go, counting those it started.
struct Gate {
    std::mutex lock;
    std::condition_variable changed;
    int started = 0;
    int released = 0;

    acemq::Ack hold() {
        std::unique_lock guard(lock);
        const int mine = ++started;
        changed.notify_all();
        changed.wait_for(guard, 10s, [&] { return released >= mine; });
        return acemq::accept();
    }
    bool wait_started(int count) {
        std::unique_lock guard(lock);
        return changed.wait_for(guard, 10s, [&] { return started >= count; });
    }
    void release_one() {
        {
            std::lock_guard guard(lock);
            ++released;
        }
        changed.notify_all();
    }
    void release_all() {
        {
            std::lock_guard guard(lock);
            released = 1 << 30;
        }
        changed.notify_all();
    }
};

// Polls Bus::health until `holds` says yes, 10 s at most.
template <class Holds>
bool health_reaches(acemq::Bus& bus, Holds holds) {
    for (int i = 0; i < 1000; ++i) {
        if (holds(bus.health())) return true;
        std::this_thread::sleep_for(10ms);
    }
    return false;
}

// One delivery in the handler, then nine more waiting: released, the worker takes the nine
// at once and holds the second one in its handler, eight taken and not started.
struct HeldBatch {
    acemq::Bus bus = acemq::connect("inproc://batches-" + acemq::new_uuid());
    Gate gate;
    std::optional<acemq::Consumer> consumer;

    explicit HeldBatch(std::chrono::milliseconds stall_after = acemq::default_stall_after) {
        bus.declare(acemq::Topology{}.queue("batches"));
        consumer.emplace(bus.consume<Order>("batches", [this](const acemq::Message<Order>&) { return gate.hold(); },
                                            {.prefetch = 20, .concurrency = 1, .stall_after = stall_after}));
        acemq::Publisher publisher = bus.publisher_to_queue("batches");
        publisher.send(Order{"o-1", 1});
        REQUIRE(gate.wait_started(1));
        const std::vector<Order> nine(9, Order{"o-2", 2});
        publisher.send_all(std::span<const Order>(nine));
        REQUIRE(health_reaches(bus, [](const acemq::Health& health) { return health.in_flight == 10; }));
        gate.release_one();
        REQUIRE(gate.wait_started(2));
    }
    ~HeldBatch() { gate.release_all(); }
};

}  // namespace

TEST_CASE("the deliveries a lone worker took together and has not started count as in flight") {
    HeldBatch held;
    // One in the handler, eight taken behind it.
    CHECK(held.bus.health().in_flight == 9);
}

TEST_CASE("a lone worker stuck in a handler with deliveries taken behind it is a stall") {
    HeldBatch held(100ms);
    CHECK(health_reaches(held.bus, [](const acemq::Health& health) { return !health.stopped_reading.empty(); }));
}

TEST_CASE("closing hands back the deliveries a lone worker took together and had not started") {
    HeldBatch held;
    std::thread closer([&] { held.consumer->close(); });
    // Closing stops the consumer (it leaves the count) and then waits for the running handler.
    REQUIRE(health_reaches(held.bus, [](const acemq::Health& health) { return health.consumers == 0; }));
    held.gate.release_one();
    closer.join();
    {
        std::lock_guard guard(held.gate.lock);
        CHECK(held.gate.started == 2);
    }
    // The eight come back to a new consumer, redelivered.
    std::mutex lock;
    std::condition_variable changed;
    int redelivered = 0;
    acemq::Consumer again = held.bus.consume<Order>("batches", [&](const acemq::Message<Order>& message) {
        std::lock_guard guard(lock);
        if (message.redelivered) ++redelivered;
        changed.notify_all();
        return acemq::accept();
    });
    std::unique_lock guard(lock);
    CHECK(changed.wait_for(guard, 10s, [&] { return redelivered == 8; }));
}
