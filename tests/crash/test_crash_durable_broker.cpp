// The crash drill (broker_drill.hpp) through a durable acemq-broker instead of RabbitMQ: the
// broker redelivers what a killed worker held. Once, mid-drill, the broker itself is killed
// with SIGKILL, between a worker killed after its commit and before its ack and the worker
// after it, and started again on its data file and port: the payment comes back from the
// file and the next worker finds it charged already.
#include <catch2/catch.hpp>

#include <signal.h>

#include <optional>

#include "../support/temp_dir.hpp"
#include "../zmq/broker_process.hpp"
#include "broker_drill.hpp"

namespace {

using crash::trials_per_point;
// The payment the broker dies under: the middle one killed after its commit and before its ack.
const int broker_killed_at = 2 * trials_per_point + trials_per_point / 2;

}  // namespace

TEST_CASE("killed at every dangerous point, and the durable broker once, every payment is charged once and announced") {
    testing_support::TempDir directory("crash-durable-broker");
    const std::string file = (directory.path() / "broker.db").string();
    std::optional<zmq_test::BrokerProcess> broker;
    broker.emplace(ACEMQ_BROKER_PROGRAM, std::vector<std::string>{"--data", file, "--listen", "tcp://127.0.0.1:0"});
    const std::string endpoint = broker->endpoint();
    crash::BrokerDrill shop(broker->url());
    int broker_kills = 0;
    crash::run_every_point(shop, "crash-durable-broker", trials_per_point, [&](int payment) {
        if (payment != broker_killed_at) return;
        broker->stop(SIGKILL);
        broker.reset();
        broker.emplace(ACEMQ_BROKER_PROGRAM, std::vector<std::string>{"--data", file, "--listen", endpoint});
        REQUIRE(broker->endpoint() == endpoint);
        shop.reconnect();
        REQUIRE(shop.payments_waiting() == 1);  // the killed worker's payment, never acked, back from the file
        ++broker_kills;
    });
    CHECK(broker_kills == 1);
    std::printf("crash-durable-broker: the broker killed with SIGKILL %d time(s) and restarted on %s\n", broker_kills,
                endpoint.c_str());
}
