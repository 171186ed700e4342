// Health and describe() on RabbitMQ (docs/wire-contract.md §11). Needs the test broker: ACEMQ_TEST_AMQP_URL
// (`set -a; source /tmp/acemq-servers.env`); without it every test fails, never skips.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <thread>

#include <acemq/acemq.hpp>
#include <acemq/amqp.hpp>
#include <acemq/uuid.hpp>
#include "../support/rabbitmq.hpp"

using namespace std::chrono_literals;
using acemq::Health;

namespace {

using testing_support::amqp_url;

}  // namespace

TEST_CASE("amqp: up with a round trip; down, \"the connection has been closed\", once closed") {
    auto transport = acemq::amqp::open(amqp_url(), {.session = {.name = "acemq-observability-health"}});
    const Health up = transport->check_health(3s);
    CHECK(up.status == Health::Status::up);
    CHECK_FALSE(up.blocked);
    CHECK(up.round_trip > 0us);
    transport->close();
    const Health closed = transport->check_health(3s);
    CHECK(closed.status == Health::Status::down);
    CHECK(closed.detail == "the connection has been closed");
}

TEST_CASE("amqp: describe() gives the URL without user or password") {
    auto transport = acemq::amqp::open(amqp_url(), {.session = {.name = "acemq-observability-describe"}});
    const acemq::TransportInfo info = transport->describe();
    CHECK(info.name == "amqp");
    CHECK(info.messaging_system == "rabbitmq");
    CHECK(info.address.starts_with("amqp://"));
    CHECK(info.address.find('@') == std::string::npos);
    CHECK(info.capabilities == std::vector<std::string>{"confirms", "quorum-queues", "blocked-connections"});
}

TEST_CASE("amqp: a consumer whose queue is deleted under it: the bus is degraded, naming the queue once") {
    auto transport = acemq::amqp::open(amqp_url(), {.session = {.name = "acemq-observability-degraded"}});
    acemq::Bus bus = acemq::connect(transport);
    const std::string queue = "observability-degraded-" + acemq::new_uuid().substr(0, 8);
    bus.declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic}));
    acemq::Consumer consumer =
        bus.consume_raw(queue, [](const acemq::Message<acemq::Bytes>&) { return acemq::accept(); }, {.declare = false});
    CHECK(bus.health().status == Health::Status::up);
    CHECK(bus.health().consumers == 1);
    auto other = acemq::amqp::open(amqp_url(), {.session = {.name = "acemq-observability-operator"}});
    other->delete_queue(queue);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (acemq::amqp::state(*transport).stopped_queues.empty() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    const Health health = bus.health();
    CHECK(health.status == Health::Status::degraded);
    CHECK(health.detail == "these consumers have stopped reading: " + queue);
    CHECK(health.stopped_reading == std::vector<std::string>{queue});
    consumer.close();
}
