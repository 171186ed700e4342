// The scheduler's pinned values (docs/patterns.md §8 item 60; docs/scheduling.md §1):
// the topology byte for byte, written out here by hand rather than derived, the rung
// selection and the rung names. Its behaviour on a broker is tests/conformance/test_scheduler.cpp
// and, on a clock a test drives, tests/engine/test_scheduler_clock.cpp.
#include <catch2/catch.hpp>

#include <acemq/naming.hpp>
#include <acemq/scheduler.hpp>

using namespace acemq;
using namespace std::chrono_literals;

namespace {

FieldTable rung_arguments(std::int64_t ttl_ms) {
    return FieldTable{{"x-message-ttl", FieldValue(ttl_ms)},
                      {"x-dead-letter-exchange", FieldValue("acemq.schedule")},
                      {"x-dead-letter-routing-key", FieldValue("acemq.schedule.due")}};
}

QueueDeclaration classic(std::string name, FieldTable arguments) {
    return QueueDeclaration{.name = std::move(name),
                            .type = QueueType::classic,
                            .durable = true,
                            .exclusive = false,
                            .auto_delete = false,
                            .arguments = std::move(arguments)};
}

BindingDeclaration bound(std::string queue) {
    return BindingDeclaration{.queue = queue, .exchange = "acemq.schedule", .routing_key = queue, .arguments = {}};
}

}  // namespace

TEST_CASE("60 the scheduler's topology is the family's, byte for byte") {
    const Topology topology = scheduler_topology();
    CHECK(topology.exchanges() == std::vector<ExchangeDeclaration>{ExchangeDeclaration{.name = "acemq.schedule",
                                                                                       .kind = ExchangeKind::direct,
                                                                                       .durable = true,
                                                                                       .auto_delete = false,
                                                                                       .arguments = {}}});
    // Rungs longest first, each with exactly three arguments, the TTL a signed 64-bit integer
    // (FieldValue compares the width too); the control queue classic, without arguments.
    CHECK(topology.queues() == std::vector<QueueDeclaration>{
                                   classic("acemq.schedule.1h", rung_arguments(3'600'000)),
                                   classic("acemq.schedule.10m", rung_arguments(600'000)),
                                   classic("acemq.schedule.1m", rung_arguments(60'000)),
                                   classic("acemq.schedule.10s", rung_arguments(10'000)),
                                   classic("acemq.schedule.1s", rung_arguments(1'000)),
                                   classic("acemq.schedule.due", {}),
                               });
    for (const QueueDeclaration& queue : topology.queues()) {
        CHECK_FALSE(queue.arguments.contains("x-queue-type"));
        if (queue.name != "acemq.schedule.due") {
            REQUIRE(queue.arguments.size() == 3);
            CHECK(queue.arguments.find("x-message-ttl")->second.holds<std::int64_t>());
        }
    }
    CHECK(topology.bindings() ==
          std::vector<BindingDeclaration>{bound("acemq.schedule.1h"), bound("acemq.schedule.10m"),
                                          bound("acemq.schedule.1m"), bound("acemq.schedule.10s"),
                                          bound("acemq.schedule.1s"), bound("acemq.schedule.due")});
    CHECK_NOTHROW(topology.validate());
}

TEST_CASE("60 the names the scheduler writes are the family's") {
    CHECK(schedule_exchange == "acemq.schedule");
    CHECK(schedule_due_queue == "acemq.schedule.due");
    CHECK(scheduled_message_type == "ScheduledMessage");
    CHECK(header::schedule_exchange == "x-schedule-exchange");
    CHECK(header::schedule_routing_key == "x-schedule-routing-key");
    CHECK(header::schedule_due_at == "x-schedule-due-at");
    CHECK(header::schedule_content_type == "x-schedule-content-type");
    CHECK(default_schedule_prefetch == 50);
}

TEST_CASE("60 rung naming: whole hours Nh, whole minutes Nm, else Ns") {
    CHECK(schedule_rung_queue(1h) == "acemq.schedule.1h");
    CHECK(schedule_rung_queue(10min) == "acemq.schedule.10m");
    CHECK(schedule_rung_queue(1min) == "acemq.schedule.1m");
    CHECK(schedule_rung_queue(10s) == "acemq.schedule.10s");
    CHECK(schedule_rung_queue(1s) == "acemq.schedule.1s");
    CHECK(schedule_rung_queue(2h) == "acemq.schedule.2h");
    CHECK(schedule_rung_queue(90min) == "acemq.schedule.90m");
    CHECK(schedule_rung_queue(90s) == "acemq.schedule.90s");
}

TEST_CASE("60 rung selection: the largest rung no longer than what is left; 1 s or less is delivered now") {
    // The family's pinned cases.
    CHECK(schedule_rung_for(4h) == 1h);
    CHECK(schedule_rung_for(90min) == 1h);
    CHECK(schedule_rung_for(45s) == 10s);
    CHECK(schedule_rung_for(3s) == 1s);
    // "≤1 s delivered immediately".
    CHECK(schedule_rung_for(1s) == std::nullopt);
    CHECK(schedule_rung_for(999ms) == std::nullopt);
    CHECK(schedule_rung_for(0ms) == std::nullopt);
    CHECK(schedule_rung_for(-5s) == std::nullopt);
    // Each edge.
    CHECK(schedule_rung_for(1001ms) == 1s);
    CHECK(schedule_rung_for(9999ms) == 1s);
    CHECK(schedule_rung_for(10s) == 10s);
    CHECK(schedule_rung_for(59s) == 10s);
    CHECK(schedule_rung_for(1min) == 1min);
    CHECK(schedule_rung_for(10min) == 10min);
    CHECK(schedule_rung_for(59min) == 10min);
    CHECK(schedule_rung_for(1h) == 1h);
    // The year 9999 is the 1h rung, again and again.
    CHECK(schedule_rung_for(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::years(7970))) == 1h);
    CHECK(schedule_rungs == std::array<std::chrono::milliseconds, 5>{1h, 10min, 1min, 10s, 1s});
}
