// The crash drill (broker_drill.hpp) through RabbitMQ: RabbitMQ redelivers what a killed
// worker held.
//
// Needs ACEMQ_TEST_AMQP_URL (scripts/test sets it); fails, never skips, without it.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "../support/rabbitmq.hpp"
#include "broker_drill.hpp"

namespace {

using testing_support::amqp_url;

using crash::trials_per_point;

}  // namespace

TEST_CASE("killed at every dangerous point with RabbitMQ redelivering, every payment is charged once and announced") {
    crash::BrokerDrill shop(amqp_url());
    crash::run_every_point(shop, "crash-amqp", trials_per_point);
}

// Why the drill takes the step-6 form around the commit, and proof that it sees a second
// charge: idempotent() alone confirms after the handler's commit, so a kill in between
// leaves a claim whose lease runs out and the redelivery charges again.
TEST_CASE(
    "idempotent() alone is a guard: killed after the commit and before its confirm, the redelivery charges again") {
    crash::BrokerDrill shop(amqp_url());
    const crash::Point point{drill::after_commit_before_ack, drill::guard_form, false};
    constexpr int trials = 3;
    int killed = 0, charged_twice = 0;
    for (int i = 0; i < trials; ++i) {
        const std::string id = "guard-" + std::to_string(i);
        killed += crash::run_trial(shop, point, id);
        const std::int64_t charges = shop.charges(id);
        CHECK(charges == 2);
        charged_twice += charges == 2;
    }
    std::printf("crash-amqp %-24s %d trials with idempotent() alone: killed %d, charged twice %d\n",
                std::string(point.where).c_str(), trials, killed, charged_twice);
}
