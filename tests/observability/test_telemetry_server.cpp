// The telemetry endpoint and aggregate health, asked by a real HTTP client.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include <httplib.h>

#include <atomic>
#include <memory>

#include "../support/wait.hpp"

using namespace std::chrono_literals;

namespace {

acemq::HealthCheck answering(std::string name, acemq::Health::Status status, std::string detail = {}) {
    return {std::move(name),
            [status, detail](std::chrono::milliseconds) { return acemq::Health{.status = status, .detail = detail}; }};
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("aggregate health: the worst part wins, every part that spoke is named") {
    const auto report =
        acemq::aggregate_health({answering("broker", acemq::Health::Status::up, "blocked: low on memory"),
                                 answering("db", acemq::Health::Status::degraded, "slow")});
    CHECK(report.status == acemq::Health::Status::degraded);
    CHECK(report.detail == "degraded: broker: blocked: low on memory; db: slow");
    REQUIRE(report.parts.size() == 2);
    const std::string json = acemq::to_json(report, std::chrono::system_clock::now());
    CHECK(contains(json, R"("status":"degraded")"));
    CHECK(contains(json, R"("parts":{"broker":{"status":"up")"));
    CHECK(contains(json, R"("db":{"status":"degraded","detail":"slow")"));
}

TEST_CASE("aggregate health: a check that does not answer is down by name, and does not hold the caller") {
    // Shared with the stuck check, which outlives the report: it waits for the release, up
    // to a minute, and says when it has returned.
    auto release = std::make_shared<std::atomic<bool>>(false);
    auto returned = std::make_shared<std::atomic<bool>>(false);
    const auto report = acemq::aggregate_health(
        {{"stuck",
          [release, returned](std::chrono::milliseconds) {
              testing_support::eventually([&] { return release->load(); }, 60s, 5ms);
              *returned = true;
              return acemq::Health{};
          }},
         {"throws", [](std::chrono::milliseconds) -> acemq::Health { throw std::runtime_error("no database"); }},
         answering("broker", acemq::Health::Status::up)},
        200ms);
    CHECK_FALSE(*returned);  // the report came while the check was still stuck
    *release = true;
    CHECK(testing_support::eventually([&] { return returned->load(); }));
    CHECK(report.status == acemq::Health::Status::down);
    CHECK(contains(report.detail, "stuck: did not answer within 200 ms"));
    CHECK(contains(report.detail, "throws: the check threw: no database"));
    CHECK(report.parts[2].second.status == acemq::Health::Status::up);
}

TEST_CASE("aggregate health: a check that uses all the time it is given is still heard, consumers and all") {
    // As Bus::health on a broker that does not answer: the ping waits out its whole timeout.
    const auto report = acemq::aggregate_health(
        {{"broker",
          [](std::chrono::milliseconds deadline) {
              std::this_thread::sleep_for(deadline);
              return acemq::Health{.status = acemq::Health::Status::down, .detail = "no answer", .consumers = 1};
          }}},
        3s);
    REQUIRE(report.parts.size() == 1);
    CHECK(report.parts[0].second.detail == "no answer");
    CHECK(report.parts[0].second.consumers == 1);
}

TEST_CASE("the endpoint serves metrics, health, liveness and info") {
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    acemq::Bus bus = acemq::connect("inproc://telemetry-server-" + acemq::new_uuid(), {.metrics = metrics});
    bus.declare(acemq::Topology{}.queue("q"));
    bus.publisher_to_queue("q").send_raw(acemq::Encoded{{std::byte{1}}, "application/octet-stream"});
    acemq::TelemetryServer server = acemq::serve_telemetry(bus, metrics, {.port = 0});
    REQUIRE(server.port() != 0);
    httplib::Client client("127.0.0.1", server.port());
    client.set_read_timeout(10, 0);

    auto scraped = client.Get("/acemq-metrics");
    REQUIRE(scraped);
    CHECK(scraped->status == 200);
    CHECK(contains(scraped->get_header_value("Content-Type"), "text/plain; version=0.0.4"));
    CHECK(contains(scraped->body, R"(acemq_publish_total{exchange="",outcome="confirmed",routing_key="q"} 1)"));

    auto health = client.Get("/acemq-health");
    REQUIRE(health);
    CHECK(health->status == 200);
    CHECK(contains(health->body, R"("parts":{"broker":{"status":"up")"));

    auto info = client.Get("/acemq-info");
    REQUIRE(info);
    CHECK(info->status == 200);
    CHECK(contains(info->body, R"("library":"acemq-cpp")"));
    CHECK(contains(info->body, R"("name":"inproc")"));

    CHECK(client.Get("/elsewhere")->status == 404);

    SECTION("a second server on the same port says which and what to do") {
        CHECK_THROWS_WITH(acemq::serve_telemetry(bus, metrics, {.port = server.port()}),
                          Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(server.port())) &&
                              Catch::Contains("pick another port, or 0"));
    }
}

TEST_CASE("readiness is 503 when a part is down; liveness stays 200 and asks nothing") {
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    acemq::Bus bus = acemq::connect("inproc://telemetry-down-" + acemq::new_uuid());
    auto asked = std::make_shared<std::atomic<int>>(0);
    acemq::TelemetryServer server = acemq::serve_telemetry(
        bus, metrics, {.port = 0, .checks = {{"db", [asked](std::chrono::milliseconds) {
                                                  ++*asked;
                                                  return acemq::Health{.status = acemq::Health::Status::down,
                                                                       .detail = "no database"};
                                              }}}});
    httplib::Client client("127.0.0.1", server.port());
    client.set_read_timeout(10, 0);
    auto live = client.Get("/acemq-health/liveness");
    REQUIRE(live);
    CHECK(live->status == 200);
    CHECK(*asked == 0);
    auto ready = client.Get("/acemq-health");
    REQUIRE(ready);
    CHECK(ready->status == 503);
    CHECK(contains(ready->body, "db: no database"));
    CHECK(*asked == 1);
    server.stop();
    server.stop();
    CHECK_FALSE(client.Get("/acemq-health/liveness"));
}
