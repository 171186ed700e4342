// The client's connection metrics (docs/observability.md, "Connection metrics"): an
// acemq-broker process killed and restarted under a bus, and the state gauge, the loss and
// recovery counters and the outage's duration follow. Every wait is bounded.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>
#include <acemq/zmq.hpp>
#include "../support/wait.hpp"
#include "../zmq/broker_process.hpp"

using namespace std::chrono_literals;

namespace {

double state(const acemq::InMemoryMetrics& metrics, const char* which) {
    return metrics.gauge_value(acemq::metric::connection_state, {{"state", which}, {"transport", "zmq"}});
}

}  // namespace

TEST_CASE("zmq: a broker restarted under a bus moves its connection state, losses, recoveries and outage time") {
    zmq_test::BrokerProcess broker(ACEMQ_BROKER_PROGRAM,
                                   {"--listen", zmq_test::fresh_ipc_endpoint("connection"), "--heartbeat-ms", "200"});
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    acemq::Bus bus =
        acemq::connect(acemq::zmq::open(broker.url(), {.session = {.heartbeat = 200ms}}), {.metrics = metrics});
    const acemq::Labels zmq{{"transport", "zmq"}};
    CHECK(state(*metrics, "connected") == 1);
    CHECK(state(*metrics, "reconnecting") == 0);
    CHECK(metrics->counter(acemq::metric::connection_lost_total, zmq) == 0);

    broker.stop(SIGKILL);
    REQUIRE(testing_support::eventually([&] { return state(*metrics, "reconnecting") == 1; }));
    CHECK(state(*metrics, "connected") == 0);
    CHECK(metrics->counter(acemq::metric::connection_lost_total, zmq) == 1);
    CHECK(metrics->counter(acemq::metric::connection_recoveries_total, zmq) == 0);

    broker.start();
    REQUIRE(testing_support::eventually([&] { return state(*metrics, "connected") == 1; }));
    CHECK(state(*metrics, "reconnecting") == 0);
    CHECK(metrics->counter(acemq::metric::connection_recoveries_total, zmq) == 1);
    const auto outage = metrics->summary(acemq::metric::connection_disconnected_duration, zmq);
    CHECK(outage.count == 1);
    CHECK(outage.sum > 0);
    CHECK_THAT(metrics->prometheus_text(),
               Catch::Contains("acemq_connection_state{state=\"connected\",transport=\"zmq\"} 1") &&
                   Catch::Contains("acemq_connection_recoveries_total{transport=\"zmq\"} 1"));
    bus.close();
}

TEST_CASE("a bus on the embedded broker has no connection to measure") {
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    acemq::Bus bus = acemq::connect("inproc://connection-metrics", {.metrics = metrics});
    CHECK_THAT(metrics->prometheus_text(), !Catch::Contains("acemq_connection"));
}
