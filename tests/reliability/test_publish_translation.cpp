// One translation of a publish the broker did not take, for every publish of the engine: a
// send, the outbox relay and replay say the same thing for the same answer of the
// transport, with the same PublishError::Reason. A blocked connection is "publishing is
// paused", a lost confirm is "unknown whether it arrived", and only a nack is "the broker
// refused to confirm it".
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>
#include <acemq/outbox.hpp>
#include <acemq/replay.hpp>
#include <acemq/stores/memory_outbox_store.hpp>

#include <optional>
#include <string>
#include <vector>

#include "../support/forwarding_transport.hpp"
#include "../support/messages.hpp"

namespace {

using test_messages::Order;

using Unconfirmed = acemq::PublishResult::Unconfirmed;

// The embedded broker, except for a publish whose routing key contains ".paused" (refused
// at once, as on a connection the broker blocked, with the broker's reason), ".lost" (no
// confirm: the connection went), ".nacked" (the broker said no), ".too_large" (the
// transport cannot encode it) or ".unsent" (the transport is closed).
class AnsweringTransport final : public testing_support::ForwardingTransport {
public:
    using ForwardingTransport::ForwardingTransport;
    acemq::PublishResult publish(acemq::OutboundMessage message) override {
        const auto has = [&](const char* part) { return message.routing_key.find(part) != std::string::npos; };
        if (has(".paused"))
            return acemq::PublishResult{
                .confirmed = false, .return_reason = "low on memory", .why = Unconfirmed::paused};
        if (has(".lost")) return acemq::PublishResult{.confirmed = false, .why = Unconfirmed::lost};
        if (has(".nacked")) return acemq::PublishResult{.confirmed = false, .why = Unconfirmed::refused};
        if (has(".too_large"))
            return acemq::PublishResult{
                .confirmed = false, .return_reason = "the message id is 300 bytes long", .why = Unconfirmed::too_large};
        if (has(".unsent"))
            return acemq::PublishResult{
                .confirmed = false, .return_reason = "the transport is closed", .why = Unconfirmed::unsent};
        return ForwardingTransport::publish(std::move(message));
    }
};

// A bus on the embedded broker `name` behind an AnsweringTransport.
acemq::Bus answering_bus(const std::string& name) {
    acemq::register_transport("answering", [](std::string_view url) -> std::shared_ptr<acemq::Transport> {
        const std::string broker(url.substr(std::string_view("answering://").size()));
        return std::make_shared<AnsweringTransport>(acemq::open_transport("inproc://" + broker));
    });
    return acemq::connect("answering://" + name);
}

using Reason = acemq::PublishError::Reason;

struct Answer {
    std::string queue;  // its name makes the transport answer
    std::string says;   // what every error for it must say
    Reason reason;
};

const std::vector<Answer> answers{
    {"orders.paused", "publishing is paused because the broker blocked this connection (low on memory)",
     Reason::paused},
    {"orders.lost", "no confirm came from the broker, so it is unknown whether it arrived", Reason::in_doubt},
    {"orders.nacked", "the broker refused to confirm it", Reason::refused},
    {"orders.too_large", "the message id is 300 bytes long. Nothing was written; make it smaller", Reason::too_large},
    {"orders.unsent", "it was not sent, nothing was written (the transport is closed)", Reason::not_sent},
};

}  // namespace

TEST_CASE("a send reports each unconfirmed publish with its reason", "[reliability]") {
    acemq::Bus bus = answering_bus("translation-" + acemq::new_uuid());
    for (const Answer& answer : answers) {
        INFO(answer.queue);
        try {
            bus.publisher_to_queue(answer.queue).send(Order{"o-1", 1});
            FAIL("an unconfirmed publish returned normally");
        } catch (const acemq::PublishError& error) {
            CHECK_THAT(error.what(), Catch::Contains(answer.says));
            CHECK(error.reason() == answer.reason);
        }
    }
}

TEST_CASE("a mandatory send that reaches no queue has the reason unroutable", "[reliability]") {
    acemq::Bus bus = answering_bus("translation-" + acemq::new_uuid());
    try {
        bus.publisher_to_queue("nobody.listens", {.mandatory = true}).send(Order{"o-1", 1});
        FAIL("an unroutable mandatory publish returned normally");
    } catch (const acemq::PublishError& error) {
        CHECK_THAT(error.what(), Catch::Contains("reached no queue"));
        CHECK(error.reason() == Reason::unroutable);
    }
}

TEST_CASE("a batch keeps each failure's reason, held by value, and reports the first one's", "[reliability]") {
    // Once a subclass (PublishingPausedError) said paused, and a failure held by value in
    // failures() lost it; the reason is part of every PublishError, so a copy keeps it.
    acemq::Bus bus = answering_bus("translation-" + acemq::new_uuid());
    for (const Answer& answer : answers) {
        INFO(answer.queue);
        try {
            bus.publisher_to_queue(answer.queue).send_all(std::vector<Order>{{"o-1", 1}, {"o-2", 2}});
            FAIL("an unconfirmed batch returned normally");
        } catch (const acemq::BatchPublishError& error) {
            CHECK(error.reason() == answer.reason);
            REQUIRE(error.failures().size() == 2);
            for (const auto& failure : error.failures()) {
                REQUIRE(failure.has_value());
                CHECK(failure->reason() == answer.reason);
                const std::optional<acemq::PublishError> copy = failure;
                CHECK(copy->reason() == answer.reason);
            }
            CHECK(error.message_id() == error.failures().front()->message_id());
        }
    }
}

TEST_CASE("the outbox relay reports each unconfirmed publish with its reason", "[reliability]") {
    acemq::Bus bus = answering_bus("translation-" + acemq::new_uuid());
    for (const Answer& answer : answers) {
        INFO(answer.queue);
        acemq::InMemoryOutboxStore store;
        const acemq::OutboxRecord made = acemq::record_to_queue(bus, answer.queue, Order{"o-1", 1});
        store.add(made);
        acemq::OutboxRelay relay{bus, store};
        try {
            relay.sweep();
            FAIL("a sweep whose publish was not confirmed returned normally");
        } catch (const acemq::PublishError& error) {
            CHECK_THAT(error.what(), Catch::Contains(answer.says));
            // paused: nothing was sent
            if (answer.reason != Reason::paused) CHECK_THAT(error.what(), Catch::Contains(made.id));
            CHECK(error.message_id() == made.id);
            CHECK(error.reason() == answer.reason);
        }
        const auto kept = store.pending(0);
        REQUIRE(kept.size() == 1);
        CHECK(kept[0].attempts == 1);
        CHECK_THAT(kept[0].last_error, Catch::Contains(answer.says));
    }
}

TEST_CASE("replay reports each unconfirmed republish as what it is, and keeps the message", "[reliability]") {
    const std::string name = "translation-" + acemq::new_uuid();
    acemq::Bus bus = answering_bus(name);
    auto direct = acemq::open_transport("inproc://" + name);  // past the answers, to set messages aside
    for (const Answer& answer : answers) {
        INFO(answer.queue);
        const std::string dlq = answer.queue + ".dlq";
        bus.declare(acemq::Topology{}.queue(answer.queue).queue(dlq));
        const acemq::Envelope envelope = acemq::Envelope::for_new_message(answer.queue);
        const acemq::PublishResult seeded =
            direct->publish(acemq::OutboundMessage{.routing_key = dlq,
                                                   .body = acemq::encode(acemq::MsgpackCodec{}, Order{"o-9", 9}).body,
                                                   .content_type = "application/msgpack",
                                                   .message_id = envelope.id,
                                                   .headers = acemq::render_headers(envelope),
                                                   .mandatory = true});
        REQUIRE(seeded.confirmed);
        try {
            acemq::replay(bus, dlq);
            FAIL("a replay whose republish was not confirmed returned normally");
        } catch (const acemq::ReplayError& error) {
            CHECK_THAT(error.what(), Catch::Contains("cannot republish message " + envelope.id + " from " + dlq) &&
                                         Catch::Contains(answer.says) && Catch::Contains("It is back on " + dlq));
            CHECK(error.result().moved == 0);
        }
        CHECK(bus.transport().queue_depth(dlq) == 1);
        CHECK(bus.transport().queue_depth(answer.queue) == 0);
    }
}
