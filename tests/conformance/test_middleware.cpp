// Handler middleware that publishes or consumes through a bus (docs/patterns.md §4,
// §8 items 48–49): then(), and that middleware composed under Bus::consume, on whichever
// transport the suite runs against. The middleware's pure unit tests are in
// tests/engine/test_middleware_units.cpp.
#include "../support/handmade.hpp"
#include "conformance.hpp"

#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace conformance;
using acemq::Message;
using acemq::Outcome;

namespace {

struct Invoice {
    std::string order_id;
    std::int64_t cents = 0;
};

using handmade::CapturedLog;
using handmade::contains;
using handmade::message_of;

}  // namespace

TEST_CASE("49 then: publishes the step's result with the conversation carried over, and accepts") {
    Fixture f({.origin = "billing@test"});
    const std::string invoices = f.name("invoices");
    f.bus().declare(acemq::Topology{}.queue(invoices));
    auto handler = acemq::then<Order>(f.bus().publisher_to_queue(invoices), [](const Message<Order>& message) {
        return std::optional(Invoice{message.payload.id, message.payload.cents});
    });
    Message<Order> incoming = message_of(Order{"o-7", 4250});
    incoming.envelope.correlation = "corr-7";

    CHECK(handler(incoming) == acemq::accept());
    std::optional<acemq::Delivery> published = f.pull(invoices);
    REQUIRE(published);
    const acemq::Envelope envelope = envelope_of(*published);
    CHECK(envelope.correlation == "corr-7");
    CHECK(envelope.causation == incoming.envelope.id);
    CHECK(envelope.id != incoming.envelope.id);
    CHECK(envelope.origin == "billing@test");
    CHECK(envelope.type == invoices);
    const Invoice invoice = acemq::decode<Invoice>(*acemq::default_codec(), published->message().body(),
                                                   published->message().content_type());
    CHECK(invoice.order_id == "o-7");
    CHECK(invoice.cents == 4250);
    published->ack();
}

TEST_CASE("49 then: nullopt publishes nothing and accepts; a plain value always publishes") {
    Fixture f;
    const std::string invoices = f.name("invoices");
    f.bus().declare(acemq::Topology{}.queue(invoices));
    auto nothing = acemq::then<Order>(f.bus().publisher_to_queue(invoices),
                                      [](const Message<Order>&) { return std::optional<Invoice>{}; });
    CHECK(nothing(message_of(Order{"o-1", 0})) == acemq::accept());
    CHECK(f.transport().queue_depth(invoices) == 0);

    auto always = acemq::then<Order>(f.bus().publisher_to_queue(invoices), [](const Message<Order>& m) {
        return Invoice{m.payload.id, 1};
    });
    CHECK(always(message_of(Order{"o-2", 0})) == acemq::accept());
    CHECK(f.wait_depth(invoices, 1));
    std::optional<acemq::Delivery> published = f.pull(invoices);
    REQUIRE(published);
    CHECK(acemq::decode<Invoice>(*acemq::default_codec(), published->message().body(),
                                 published->message().content_type())
              .order_id == "o-2");
    published->ack();
}

TEST_CASE("49 then: a send that fails answers retry; a step that throws is not caught") {
    Fixture f;
    const std::string nowhere = f.name("nowhere");
    auto unroutable =
        acemq::then<Order>(f.bus().publisher_to_queue(nowhere, {.mandatory = true}), [](const Message<Order>& m) {
            return std::optional(Invoice{m.payload.id, 1});
        });
    const Message<Order> incoming = message_of(Order{"o-1", 0});
    const acemq::Ack ack = unroutable(incoming);
    REQUIRE(ack.kind() == acemq::AckKind::retry);
    CHECK(contains(acemq::describe(ack.failure()), "acemq: the work for message " + incoming.envelope.id +
                                                       " is done but the next message did not go out: "));
    CHECK(contains(acemq::describe(ack.failure()), "reached no queue"));

    auto throwing = acemq::then<Order>(
        f.bus().publisher_to_queue(nowhere),
        [](const Message<Order>&) -> std::optional<Invoice> { throw std::runtime_error("the step failed"); });
    CHECK_THROWS_WITH(throwing(incoming), "the step failed");
}

TEST_CASE("46-48 middleware composes with Bus::consume, which takes the payload type from the chain") {
    Fixture f;
    const std::string queue = f.source_queue("orders");
    std::atomic<int> handled{0};
    auto handle = [&](const Message<Order>& message) {
        ++handled;
        return message.payload.cents > 0 ? acemq::accept() : acemq::reject(std::invalid_argument("nothing to charge"));
    };
    CapturedLog log;
    {
        acemq::Consumer consumer =
            f.bus().consume(queue, acemq::chain(handle, acemq::with_logging(), acemq::with_timeout(10s)));
        acemq::Publisher orders = f.bus().publisher_to_queue(queue);
        orders.send(Order{"o-1", 100});
        orders.send(Order{"o-2", 0});
        CHECK(f.harness().wait_settled(queue, Outcome::acked, 1, 10s));
        CHECK(f.harness().wait_dead_lettered(queue, 1, 10s));
        CHECK(consumer.close());
    }
    CHECK(handled == 2);
    CHECK(f.wait_depth(acemq::dead_letter_queue(queue), 1));
    int decisions = 0;
    for (const auto& [level, line] : log.lines())
        if (level == acemq::LogLevel::info && contains(line, "type=" + queue)) ++decisions;
    CHECK(decisions == 2);
}
