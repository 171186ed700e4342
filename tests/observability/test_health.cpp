// Health that means something (issue 13): the transport half on the embedded broker, the
// consumer half in Bus::health, to_json's parts, describe(). Every wait is bounded.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include <acemq/acemq.hpp>
#include <acemq/inproc.hpp>
#include <acemq/uuid.hpp>
#include "../support/temp_dir.hpp"
#include "../support/wait.hpp"
#include "full_data_file.hpp"

using namespace std::chrono_literals;
using acemq::Health;

namespace {

std::string unique(std::string_view name) { return std::string(name) + "-" + acemq::new_uuid().substr(0, 8); }

using testing_support::eventually;

}  // namespace

TEST_CASE("to_json: every part, stoppedReading as an array, detail left out when empty") {
    Health health{.round_trip = 412us, .consumers = 2, .in_flight = 5, .stopped_reading = {"orders", "a\"b"}};
    CHECK(acemq::to_json(health, std::chrono::system_clock::time_point{}) ==
          "{\"status\":\"up\",\"checked\":\"1970-01-01T00:00:00Z\",\"parts\":{\"blocked\":false,"
          "\"roundTripMillis\":0.412,\"consumers\":2,\"inFlight\":5,\"stoppedReading\":[\"orders\",\"a\\\"b\"]}}");
    health.status = Health::Status::degraded;
    health.detail = "why";
    health.stopped_reading.clear();
    CHECK(acemq::to_json(health, std::chrono::system_clock::time_point{}) ==
          "{\"status\":\"degraded\",\"detail\":\"why\",\"checked\":\"1970-01-01T00:00:00Z\",\"parts\":{"
          "\"blocked\":false,\"roundTripMillis\":0.412,\"consumers\":2,\"inFlight\":5,\"stoppedReading\":[]}}");
}

TEST_CASE("inproc: up with a round trip, down once the transport is closed") {
    auto transport = acemq::open_transport("inproc://" + unique("health"));
    const Health up = transport->check_health(1s);
    CHECK(up.status == Health::Status::up);
    CHECK(up.detail.empty());
    transport->close();
    const Health down = transport->check_health(1s);
    CHECK(down.status == Health::Status::down);
    CHECK(down.detail == "the transport is closed");
}

TEST_CASE("inproc: describe names the broker, and the data file when durable") {
    const std::string name = unique("describe");
    const acemq::TransportInfo memory = acemq::open_transport("inproc://" + name)->describe();
    CHECK(memory.name == "inproc");
    CHECK(memory.messaging_system == "acemq");
    CHECK(memory.address == "inproc://" + name);
    CHECK(memory.capabilities == std::vector<std::string>{"confirms", "dead-letters", "ttl"});
    testing_support::TempDir directory;
    const std::string file = (directory.path() / "broker.db").string();
    const acemq::TransportInfo durable = acemq::open_transport("inproc://" + name + "-d?data=" + file)->describe();
    CHECK(durable.address == "inproc://" + name + "-d?data=" + file);
    CHECK(durable.capabilities == std::vector<std::string>{"confirms", "dead-letters", "ttl", "durable"});
}

TEST_CASE("inproc durable: down while the data file refuses commits, up again once it writes") {
    testing_support::TempDir directory;
    const std::string file = (directory.path() / "broker.db").string();
    const std::string name = unique("full");
    auto broker = acemq::inproc::broker(name, {.data = file, .max_data_bytes = 256 * 1024});
    auto transport = acemq::open_transport("inproc://" + name + "?data=" + file);
    transport->declare(acemq::Topology{}.queue("q"));
    full_data_file::fill_and_check_down(*transport, file, 1s);
    full_data_file::ack_some(*transport);
    REQUIRE(transport->publish({.routing_key = "q", .body = full_data_file::body}).confirmed);
    CHECK(transport->check_health(1s).status == Health::Status::up);
}

TEST_CASE("consumer half: degraded when its queue is deleted under it") {
    acemq::Bus bus = acemq::connect("inproc://" + unique("deleted"));
    bus.declare(acemq::Topology{}.queue("orders"));
    acemq::Consumer consumer =
        bus.consume_raw("orders", [](const acemq::Message<acemq::Bytes>&) { return acemq::accept(); });
    const Health up = bus.health();
    CHECK(up.status == Health::Status::up);
    CHECK(up.consumers == 1);
    bus.transport().delete_queue("orders");
    const Health degraded = bus.health();
    CHECK(degraded.status == Health::Status::degraded);
    CHECK(degraded.detail == "these consumers have stopped reading: orders");
    CHECK(degraded.stopped_reading == std::vector<std::string>{"orders"});
    consumer.close();
    CHECK(bus.health().status == Health::Status::up);
    CHECK(bus.health().consumers == 0);
}

TEST_CASE("consumer half: degraded when its only worker is stuck in a handler past stall_after") {
    acemq::Bus bus = acemq::connect("inproc://" + unique("stuck"));
    bus.declare(acemq::Topology{}.queue("slow"));
    std::atomic<bool> release{false};
    std::atomic<int> started{0};
    acemq::Consumer consumer = bus.consume_raw("slow",
                                               [&](const acemq::Message<acemq::Bytes>&) {
                                                   ++started;
                                                   for (int i = 0; i < 1000 && !release.load(); ++i)
                                                       std::this_thread::sleep_for(10ms);
                                                   return acemq::accept();
                                               },
                                               {.concurrency = 1, .stall_after = 200ms});
    auto publisher = bus.publisher_to_queue("slow");
    publisher.send_raw({.body = {std::byte{'1'}}, .content_type = "text/plain"});
    REQUIRE(eventually([&] { return started.load() == 1; }));
    publisher.send_raw({.body = {std::byte{'2'}}, .content_type = "text/plain"});
    REQUIRE(eventually([&] { return bus.health().in_flight == 2; }));
    CHECK(bus.health().status == Health::Status::up);  // not yet past stall_after
    REQUIRE(eventually([&] { return bus.health().status == Health::Status::degraded; }));
    const Health stalled = bus.health();
    CHECK(stalled.detail == "these consumers have stopped reading: slow");
    CHECK(stalled.consumers == 1);
    release = true;
    REQUIRE(eventually([&] { return bus.health().status == Health::Status::up; }));
    consumer.close();
}

TEST_CASE("a closed transport under the bus: down wins over the consumers") {
    acemq::Bus bus = acemq::connect("inproc://" + unique("closed"));
    bus.declare(acemq::Topology{}.queue("q"));
    acemq::Consumer consumer =
        bus.consume_raw("q", [](const acemq::Message<acemq::Bytes>&) { return acemq::accept(); });
    bus.transport().delete_queue("q");
    bus.transport().close();
    const Health health = bus.health();
    CHECK(health.status == Health::Status::down);
    CHECK(health.detail == "the transport is closed");
    consumer.close(0ms);
}
