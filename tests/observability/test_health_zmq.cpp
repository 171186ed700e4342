// Health on the zmq transport: down when the acemq-broker process is killed, at once and with
// the reason once the client knows its session is lost (readiness too), up once the broker
// is back on the same endpoint; down with the broker's reason while its data file refuses
// commits; describe(). Every wait is bounded.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>

#include <httplib.h>

#include <acemq/acemq.hpp>
#include <acemq/zmq.hpp>
#include "../support/temp_dir.hpp"
#include "../support/wait.hpp"
#include "../zmq/broker_process.hpp"
#include "full_data_file.hpp"

using namespace std::chrono_literals;
using acemq::Health;

namespace {

using testing_support::eventually;

}  // namespace

TEST_CASE("zmq: down when the broker process is killed, up after it restarts") {
    zmq_test::BrokerProcess broker(ACEMQ_BROKER_PROGRAM,
                                   {"--listen", zmq_test::fresh_ipc_endpoint("health"), "--heartbeat-ms", "200"});
    auto transport = acemq::zmq::open(broker.url(), {.session = {.heartbeat = 200ms}});
    const Health up = transport->check_health(1s);
    CHECK(up.status == Health::Status::up);
    CHECK(up.round_trip > 0us);
    const acemq::TransportInfo info = transport->describe();
    CHECK(info.name == "zmq");
    CHECK(info.messaging_system == "acemq");
    CHECK(info.address == broker.endpoint());
    CHECK(info.capabilities == std::vector<std::string>{"confirms", "dead-letters", "ttl"});

    broker.stop(SIGKILL);
    const Health down = transport->check_health(1s);
    CHECK(down.status == Health::Status::down);
    CHECK_FALSE(down.detail.empty());

    broker.start();
    CHECK(eventually([&] { return transport->check_health(1s).status == Health::Status::up; }));
    transport->close();
    const Health closed = transport->check_health(1s);
    CHECK(closed.status == Health::Status::down);
    CHECK_THAT(closed.detail, Catch::Contains("is closed"));
}

TEST_CASE("zmq: once the session is known lost, health is down at once with the reason, and readiness is 503") {
    zmq_test::BrokerProcess broker(ACEMQ_BROKER_PROGRAM,
                                   {"--listen", zmq_test::fresh_ipc_endpoint("outage"), "--heartbeat-ms", "200"});
    auto lost = std::make_shared<std::atomic<bool>>(false);
    // Long timeouts for every call, so that an answer that waits for the broker cannot pass
    // for one that does not: the test's own waits below are much shorter.
    auto transport = acemq::zmq::open(
        broker.url(),
        {.session = {.call_timeout = 120s, .heartbeat = 200ms, .on_event = [lost](const acemq::ConnectionEvent& event) {
                         if (event.kind == acemq::ConnectionEvent::Kind::lost) *lost = true;
                     }}});
    acemq::Bus bus = acemq::connect(transport);
    bus.declare(acemq::Topology{}.queue("orders"));
    acemq::Consumer consumer =
        bus.consume_raw("orders", [](const acemq::Message<acemq::Bytes>&) { return acemq::accept(); });
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    acemq::TelemetryServer server = acemq::serve_telemetry(bus, metrics, {.port = 0, .health_deadline = 120s});
    REQUIRE(bus.health(10s).consumers == 1);

    broker.stop(SIGKILL);
    REQUIRE(eventually([&] { return lost->load(); }));

    auto asked = std::async(std::launch::async, [&bus] { return bus.health(120s); });
    REQUIRE(asked.wait_for(10s) == std::future_status::ready);
    const Health down = asked.get();
    CHECK(down.status == Health::Status::down);
    CHECK_THAT(down.detail, Catch::Contains("session") && Catch::Contains("lost") &&
                                Catch::Contains("sent nothing for 3 heartbeat intervals"));
    CHECK(down.consumers == 1);

    // A readiness probe with a short timeout of its own gets its answer, not a timeout.
    httplib::Client client("127.0.0.1", server.port());
    client.set_read_timeout(10, 0);
    const auto ready = client.Get("/acemq-health");
    REQUIRE(ready);
    CHECK(ready->status == 503);
    CHECK_THAT(ready->body,
               Catch::Contains("sent nothing for 3 heartbeat intervals") && Catch::Contains(R"("consumers":1)"));
    server.stop();
    consumer.close();
}

TEST_CASE("zmq: readiness counts the consumers while the broker is away") {
    zmq_test::BrokerProcess broker(ACEMQ_BROKER_PROGRAM,
                                   {"--listen", zmq_test::fresh_ipc_endpoint("counted"), "--heartbeat-ms", "200"});
    auto lost = std::make_shared<std::atomic<bool>>(false);
    auto transport = acemq::zmq::open(
        broker.url(), {.session = {.heartbeat = 200ms, .on_event = [lost](const acemq::ConnectionEvent& event) {
                                       if (event.kind == acemq::ConnectionEvent::Kind::lost) *lost = true;
                                   }}});
    acemq::Bus bus = acemq::connect(transport);
    bus.declare(acemq::Topology{}.queue("a").queue("b"));
    const auto accept = [](const acemq::Message<acemq::Bytes>&) { return acemq::accept(); };
    acemq::Consumer first = bus.consume_raw("a", accept);
    acemq::Consumer second = bus.consume_raw("b", accept);
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    // The default deadline (5 s), shorter than a call's (30 s), which asking the broker
    // about each consumer waited out before: the part then did not answer, "consumers":0.
    acemq::TelemetryServer server = acemq::serve_telemetry(bus, metrics, {.port = 0});
    broker.stop(SIGKILL);
    REQUIRE(eventually([&] { return lost->load(); }));
    httplib::Client client("127.0.0.1", server.port());
    client.set_read_timeout(10, 0);
    const auto ready = client.Get("/acemq-health");
    REQUIRE(ready);
    CHECK(ready->status == 503);
    CHECK_THAT(ready->body, Catch::Contains(R"("consumers":2)") && !Catch::Contains("did not answer"));
    server.stop();
    first.close();
    second.close();
}

TEST_CASE("zmq durable broker: down with the broker's reason while its data file refuses commits, up once it writes") {
    testing_support::TempDir directory;
    const std::string file = (directory.path() / "broker.db").string();
    auto broker = acemq::inproc::broker("zmq-full-" + acemq::new_uuid().substr(0, 8),
                                        {.data = file, .max_data_bytes = 256 * 1024});
    auto server = acemq::zmq::serve(broker, {zmq_test::fresh_ipc_endpoint("full")});
    auto transport = acemq::zmq::open("zmq+" + server->endpoints().front());
    REQUIRE(transport->check_health(10s).status == Health::Status::up);
    transport->declare(acemq::Topology{}.queue("q"));
    full_data_file::fill_and_check_down(*transport, file, 10s);
    full_data_file::ack_some(*transport);
    // Acks travel unanswered: the commit that frees the space comes when it comes.
    CHECK(eventually([&] { return transport->publish({.routing_key = "q", .body = full_data_file::body}).confirmed; }));
    CHECK(transport->check_health(10s).status == Health::Status::up);
    transport->close();
}
