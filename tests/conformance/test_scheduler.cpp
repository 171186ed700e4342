// Delayed delivery through a real broker (docs/scheduling.md; docs/patterns.md §8 item 60):
// the rungs' TTL and dead-lettering are the broker's own, so each transport runs them for
// real. One message waits 1.5 s; the rest is delivered at once or refused. The scheduler's
// queues are the family's fixed names, shared by every test on one broker: each test pulls
// what it left behind, and recognises its own messages by id.
#include "conformance.hpp"

#include "../support/wait.hpp"

#include <algorithm>
#include <vector>

using namespace conformance;
using testing_support::eventually;

namespace {

acemq::Headers schedule_headers(std::string_view exchange, std::string_view routing_key, acemq::FieldValue due_at) {
    acemq::Headers headers;
    headers.insert_or_assign(std::string(acemq::header::schedule_exchange), acemq::FieldValue(exchange));
    headers.insert_or_assign(std::string(acemq::header::schedule_routing_key), acemq::FieldValue(routing_key));
    headers.insert_or_assign(std::string(acemq::header::schedule_due_at), std::move(due_at));
    return headers;
}

// Publishes straight onto the control queue, as another library (or a hostile client) might.
std::string put_on_control_queue(Fixture& f, acemq::Headers headers, std::string_view body = "{}") {
    acemq::Envelope envelope = acemq::Envelope::for_new_message("acemq.schedule.due", "hostile@test");
    for (auto& [name, value] : headers) acemq::set_header(envelope, name, value);
    const acemq::PublishResult result = f.transport().publish(
        acemq::OutboundMessage{.routing_key = std::string(acemq::schedule_due_queue),
                               .body = acemq::Bytes(reinterpret_cast<const std::byte*>(body.data()),
                                                    reinterpret_cast<const std::byte*>(body.data() + body.size())),
                               .content_type = "application/octet-stream",
                               .message_id = envelope.id,
                               .headers = acemq::render_headers(envelope),
                               .mandatory = true});
    INFO(result.return_reason << " for " << envelope.id);
    INFO(result.return_reason);
    REQUIRE(result.confirmed);
    REQUIRE(result.routed);
    return envelope.id;
}

// Takes the message with id `id` off `queue` (acked), putting back whatever else it finds.
std::optional<acemq::InboundMessage> take(Fixture& f, const std::string& queue, const std::string& id) {
    std::vector<acemq::Delivery> others;
    std::optional<acemq::InboundMessage> found;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!found && std::chrono::steady_clock::now() < deadline) {
        std::optional<acemq::Delivery> delivery = f.pull(queue, 200ms);
        if (!delivery) continue;
        if (delivery->message().message_id() == id) {
            found = delivery->message();
            delivery->ack();
        } else {
            others.push_back(std::move(*delivery));
        }
    }
    for (acemq::Delivery& other : others) other.requeue();
    return found;
}

bool has_schedule_or_death_header(const acemq::Headers& headers) {
    for (const auto& [name, value] : headers)
        if (name.starts_with("x-schedule-") || name.starts_with("x-death") || name.starts_with("x-first-death") ||
            name.starts_with("x-last-death"))
            return true;
    return false;
}

}  // namespace

TEST_CASE("60 a message scheduled 1.5 s ahead arrives once, not before it is due, as it was sent") {
    Fixture f;
    const std::string queue = f.source_queue("reminders");
    acemq::Scheduler scheduler{f.bus()};
    const acemq::Encoded expected = acemq::encode(*f.bus().codec(), Order{"o-1", 4250});

    const acemq::EpochMillis asked = acemq::epoch_millis_now();
    const acemq::SendResult sent = scheduler.after(1500ms, "", queue, Order{"o-1", 4250},
                                                   {.correlation = "cart-7", .headers = {{"tenant", "t-1"}}});
    CHECK(scheduler.scheduled() == 1);
    CHECK(scheduler.hops() == 1);  // the 1 s rung: the largest no longer than 1.5 s

    std::optional<acemq::Delivery> delivery = f.pull(queue, 15s);
    REQUIRE(delivery.has_value());
    const acemq::EpochMillis arrived = acemq::epoch_millis_now();
    CHECK(arrived >= asked + 1500ms);  // never early: the last half second is waited out
    const acemq::InboundMessage& message = delivery->message();
    CHECK(std::ranges::equal(message.body(), expected.body));
    CHECK(message.content_type() == expected.content_type);
    CHECK(message.message_id() == sent.message_id);
    CHECK_FALSE(has_schedule_or_death_header(message.headers().table()));
    const acemq::Envelope envelope = envelope_of(*delivery);
    CHECK(envelope.type == "ScheduledMessage");
    CHECK(envelope.id == sent.message_id);
    CHECK(envelope.correlation == "cart-7");
    CHECK(envelope.attempt == 1);
    CHECK(envelope.headers.find("tenant")->second.as_text() == "t-1");
    delivery->ack();

    REQUIRE(eventually([&] { return scheduler.delivered() == 1; }, 5s));
    CHECK(scheduler.to_string() ==
          "Scheduler(rungs=['1h', '10m', '1m', '10s', '1s'], scheduled=1, delivered=1, hops=1)");
    scheduler.close();
    CHECK(f.transport().queue_depth(queue) == 0);  // once
    CHECK(f.transport().queue_depth("acemq.schedule.1s") == 0);
}

TEST_CASE("60 a wait of 1 s or less is delivered at once, without a rung") {
    Fixture f;
    const std::string queue = f.source_queue("now");
    acemq::Scheduler scheduler{f.bus()};
    const acemq::SendResult sent = scheduler.after(1s, "", queue, Order{"o-2", 1});
    CHECK(sent.confirmed);
    CHECK(scheduler.scheduled() == 1);
    CHECK(scheduler.delivered() == 1);
    CHECK(scheduler.hops() == 0);
    std::optional<acemq::Delivery> delivery = f.pull(queue, 5s);
    REQUIRE(delivery.has_value());
    CHECK(envelope_of(*delivery).type == "ScheduledMessage");
    CHECK_FALSE(has_schedule_or_death_header(delivery->message().headers().table()));
    delivery->ack();
}

TEST_CASE("60 a control message without its headers, or with a due time that is no number, is dead-lettered") {
    Fixture f;
    acemq::Scheduler scheduler{f.bus()};
    acemq::Headers no_due_at;
    no_due_at.insert_or_assign(std::string(acemq::header::schedule_routing_key), acemq::FieldValue("somewhere"));
    const std::string missing = put_on_control_queue(f, no_due_at);
    const std::string not_a_number = put_on_control_queue(f, schedule_headers("", "somewhere", "tomorrow"));

    const std::string dlq = acemq::dead_letter_queue(std::string(acemq::schedule_due_queue));
    const std::optional<acemq::InboundMessage> first = take(f, dlq, missing);
    REQUIRE(first.has_value());
    const std::string why = acemq::read_envelope(*first).error;
    CHECK_THAT(why, Catch::Contains("x-schedule-exchange is missing, x-schedule-due-at is missing"));
    CHECK_THAT(why, Catch::Contains("Schedule messages with acemq::Scheduler"));
    const std::optional<acemq::InboundMessage> second = take(f, dlq, not_a_number);
    REQUIRE(second.has_value());
    CHECK_THAT(acemq::read_envelope(*second).error,
               Catch::Contains("x-schedule-due-at is \"tomorrow\", not an integer of epoch milliseconds"));
    CHECK(scheduler.delivered() == 0);
    CHECK(scheduler.hops() == 0);
}

TEST_CASE("60 a due time in the year 9999 rides the 1h rung; a negative one is delivered now, as JSON") {
    Fixture f;
    const std::string queue = f.source_queue("edges");
    acemq::Scheduler scheduler{f.bus()};
    // 9999-12-31T00:00:00Z, and a time before the epoch written as text, its routing key as
    // bytes (as some clients send strings). Neither has x-schedule-content-type.
    const std::string far = put_on_control_queue(f, schedule_headers("", queue, std::int64_t{253'402'214'400'000}));
    acemq::Headers past_headers = schedule_headers("", "", "-5");
    past_headers.insert_or_assign(
        std::string(acemq::header::schedule_routing_key),
        acemq::FieldValue(acemq::Bytes(reinterpret_cast<const std::byte*>(queue.data()),
                                       reinterpret_cast<const std::byte*>(queue.data() + queue.size()))));
    const std::string past = put_on_control_queue(f, past_headers, R"({"id":"o-3"})");

    std::optional<acemq::Delivery> delivered = f.pull(queue, 5s);
    REQUIRE(delivered.has_value());
    CHECK(delivered->message().message_id() == past);
    CHECK(delivered->message().content_type() == "application/json");
    delivered->ack();

    REQUIRE(eventually([&] { return scheduler.hops() == 1 && scheduler.delivered() == 1; }, 5s));
    const std::optional<acemq::InboundMessage> waiting = take(f, "acemq.schedule.1h", far);
    REQUIRE(waiting.has_value());  // nothing lost: on the 1h rung, to come round again in an hour
    CHECK(waiting->headers().find(acemq::header::schedule_due_at)->second.as_integer() == 253'402'214'400'000);
    CHECK(waiting->content_type() == "application/octet-stream");
    CHECK(f.transport().queue_depth(queue) == 0);
}

TEST_CASE("60 a due message its destination does not take waits in acemq.schedule.due.dlq; replay delivers it") {
    Fixture f;
    const std::string later = f.name("later");
    const std::string dlq = acemq::dead_letter_queue(std::string(acemq::schedule_due_queue));
    // Due now, on the control queue before a scheduler reads it. Its delivery keeps this id,
    // and the AMQP transport matches a returned message to its publish by id: answered on
    // this connection while this publish still awaited its confirm, the delivery's return
    // would be taken for this publish's.
    f.bus().declare(acemq::scheduler_topology());
    const std::string id = put_on_control_queue(
        f, schedule_headers("", later, std::int64_t{acemq::epoch_millis_now().time_since_epoch().count() - 1000}));
    acemq::Scheduler scheduler{f.bus()};

    // Not acked into nowhere, but dead-lettered with why.
    REQUIRE(f.wait_depth(dlq, 1, 10s));
    CHECK(scheduler.delivered() == 0);
    {
        std::optional<acemq::Delivery> parked = f.pull(dlq);
        REQUIRE(parked.has_value());
        CHECK(parked->message().message_id() == id);
        CHECK_THAT(envelope_of(*parked).error, Catch::Contains("reached no queue"));
        parked->requeue();
    }

    // Once the destination exists, a replay puts it back on the control queue and it goes out.
    f.source_queue("later");
    CHECK(acemq::replay(f.bus(), dlq).moved == 1);
    std::optional<acemq::Delivery> delivery = f.pull(later, 10s);
    REQUIRE(delivery.has_value());
    CHECK(delivery->message().message_id() == id);
    delivery->ack();
    CHECK(eventually([&] { return scheduler.delivered() == 1; }, 5s));

    // At once: the caller hears of it, and nothing is scheduled.
    try {
        scheduler.after(200ms, "", f.name("nowhere"), Order{"o-4", 1});
        FAIL("an unroutable message was scheduled");
    } catch (const acemq::PublishError& error) {
        CHECK(error.reason() == acemq::PublishError::Reason::unroutable);
    }
    CHECK(scheduler.scheduled() == 0);
    CHECK(scheduler.delivered() == 1);
}
