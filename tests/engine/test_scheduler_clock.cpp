// The scheduler's ladder on the embedded broker with a ManualClock: the rungs' TTLs and the
// scheduler's "now" both follow the test's clock, so an hour's wait runs in milliseconds and
// every step is checked exactly, the last second (waited out in the scheduler) included.
#include <catch2/catch.hpp>

#include <algorithm>

#include <acemq/acemq.hpp>

#include <acemq/inproc.hpp>

#include "../support/messages.hpp"
#include "../support/wait.hpp"

using namespace std::chrono_literals;
using testing_support::eventually;

namespace {

using test_messages::Order;

struct Ladder {
    std::string name = "schedule-" + acemq::new_uuid();
    std::shared_ptr<acemq::ManualClock> clock = std::make_shared<acemq::ManualClock>();
    std::shared_ptr<acemq::inproc::Broker> broker = acemq::inproc::broker(name, clock);
    acemq::Bus bus = acemq::connect("inproc://" + name, {.clock = clock});

    Ladder() { bus.declare(acemq::Topology{}.queue("reminders", {.type = acemq::QueueType::classic})); }
    std::uint64_t depth(std::string_view queue) { return bus.transport().queue_depth(queue); }
};

}  // namespace

TEST_CASE("60 an hour, a minute and 1.5 s ride the 1h, 1m and 1s rungs and arrive exactly when due") {
    Ladder ladder;
    const acemq::EpochMillis before = acemq::epoch_millis_now();
    acemq::Scheduler scheduler{ladder.bus};
    const std::size_t idle_waiters = ladder.clock->waiters();
    const acemq::SendResult sent = scheduler.after(1h + 1min + 1500ms, "", "reminders", Order{"o-1", 4250});
    const acemq::EpochMillis after = acemq::epoch_millis_now();
    CHECK(scheduler.hops() == 1);
    REQUIRE(ladder.depth("acemq.schedule.1h") == 1);

    {  // On the rung: the family's headers, epoch-ms due time, bytes between rungs.
        std::optional<acemq::Delivery> waiting = ladder.bus.transport().pull("acemq.schedule.1h");
        REQUIRE(waiting.has_value());
        const acemq::InboundMessage& message = waiting->message();
        const acemq::Headers& headers = message.headers().table();
        CHECK(message.content_type() == "application/octet-stream");
        CHECK(message.message_id() == sent.message_id);
        CHECK(headers.find("x-schedule-exchange")->second == acemq::FieldValue(""));
        CHECK(headers.find("x-schedule-routing-key")->second == acemq::FieldValue("reminders"));
        CHECK(headers.find("x-schedule-content-type")->second == acemq::FieldValue("application/json"));
        const acemq::FieldValue& due = headers.find("x-schedule-due-at")->second;
        REQUIRE(due.holds<std::int64_t>());
        CHECK(std::get<std::int64_t>(due.get()) >= (before + 3'661'500ms).time_since_epoch().count());
        CHECK(std::get<std::int64_t>(due.get()) <= (after + 3'661'500ms).time_since_epoch().count());
        CHECK(acemq::read_envelope(headers, message.routing_key(), message.message_id()).type == "ScheduledMessage");
        waiting->requeue();  // back at the head, its TTL counted from when it was first queued
    }

    ladder.clock->advance(59min + 59s);
    CHECK(ladder.depth("acemq.schedule.1h") == 1);
    ladder.clock->advance(1s);  // 61.5 s left: the 1m rung
    REQUIRE(eventually([&] { return scheduler.hops() == 2; }, 5s));
    CHECK(ladder.depth("acemq.schedule.1m") == 1);
    ladder.clock->advance(1min);  // 1.5 s left: the 1s rung
    REQUIRE(eventually([&] { return scheduler.hops() == 3; }, 5s));
    CHECK(ladder.depth("acemq.schedule.1s") == 1);
    ladder.clock->advance(1s);  // 0.5 s left: no rung is that short, so the scheduler waits it out
    REQUIRE(eventually([&] { return ladder.clock->waiters() == idle_waiters + 1; }, 5s));
    ladder.clock->advance(499ms);
    CHECK(ladder.clock->waiters() == idle_waiters + 1);
    CHECK(ladder.depth("reminders") == 0);
    CHECK(scheduler.delivered() == 0);
    ladder.clock->advance(1ms);
    REQUIRE(eventually([&] { return scheduler.delivered() == 1; }, 5s));

    std::optional<acemq::Delivery> delivery = ladder.bus.transport().pull("reminders");
    REQUIRE(delivery.has_value());
    const acemq::InboundMessage& message = delivery->message();
    CHECK(message.content_type() == "application/json");
    CHECK(std::ranges::equal(message.body(), acemq::encode(*acemq::default_codec(), Order{"o-1", 4250}).body));
    const acemq::Envelope envelope = acemq::read_envelope(message);
    CHECK(envelope.type == "ScheduledMessage");
    CHECK(envelope.id == sent.message_id);
    CHECK(envelope.attempt == 1);
    CHECK(envelope.headers.empty());  // no x-schedule-*, no x-death
    delivery->ack();
    CHECK(scheduler.to_string() ==
          "Scheduler(rungs=['1h', '10m', '1m', '10s', '1s'], scheduled=1, delivered=1, hops=3)");
    for (std::string_view queue : {"acemq.schedule.1h", "acemq.schedule.1m", "acemq.schedule.1s", "acemq.schedule.due"})
        CHECK(ladder.depth(queue) == 0);
}

TEST_CASE("60 at() in the year 9999 goes round the 1h rung, neither lost nor stuck") {
    Ladder ladder;
    acemq::Scheduler scheduler{ladder.bus};
    scheduler.at(std::chrono::sys_days{std::chrono::year{9999} / 12 / 31}, "", "reminders", Order{"o-2", 1});
    CHECK(scheduler.hops() == 1);
    ladder.clock->advance(1h);
    REQUIRE(eventually([&] { return scheduler.hops() == 2; }, 5s));
    CHECK(ladder.depth("acemq.schedule.1h") == 1);
    CHECK(ladder.depth("acemq.schedule.due") == 0);
    CHECK(scheduler.delivered() == 0);
}

TEST_CASE("60 closing the scheduler delivers the message it was waiting out, and deletes nothing") {
    Ladder ladder;
    acemq::Scheduler scheduler{ladder.bus};
    const std::size_t idle_waiters = ladder.clock->waiters();
    scheduler.after(1500ms, "", "reminders", Order{"o-3", 1});
    scheduler.after(1h, "", "reminders", Order{"o-4", 1});
    ladder.clock->advance(1s);
    REQUIRE(eventually([&] { return ladder.clock->waiters() == idle_waiters + 1; }, 5s));
    scheduler.close();
    CHECK(scheduler.delivered() == 1);
    CHECK(ladder.depth("reminders") == 1);
    CHECK(ladder.depth("acemq.schedule.1h") == 1);  // waits for the next scheduler
    CHECK_THROWS_AS(scheduler.after(1h, "", "reminders", Order{"o-5", 1}), acemq::UsageError);
}

TEST_CASE("60 what a scheduled message cannot carry is refused, naming it") {
    Ladder ladder;
    acemq::Scheduler scheduler{ladder.bus};
    CHECK_THROWS_WITH(scheduler.after(1h, "", "reminders", Order{"o-6", 1}, {.type = "reminder"}),
                      Catch::Contains("SendOptions::type"));
    CHECK_THROWS_WITH(scheduler.after(1h, "", "reminders", Order{"o-6", 1}, {.attempt = 2}),
                      Catch::Contains("SendOptions::attempt"));
    CHECK_THROWS_WITH(
        scheduler.after(1h, "", "reminders", Order{"o-6", 1}, {.headers = {{"x-schedule-due-at", std::int64_t{0}}}}),
        Catch::Contains("x-schedule-due-at is the scheduler's own"));
    CHECK_THROWS_AS(scheduler.after(1h, "", "reminders", Order{"o-6", 1}, {.headers = {{"x-acemq-id", "forged"}}}),
                    acemq::ReservedHeaderError);
    CHECK(scheduler.scheduled() == 0);
    CHECK(ladder.depth("acemq.schedule.1h") == 0);
}
