// Replay (docs/wire-contract.md §9; docs/patterns.md §8 items 52–56), through the Bus on
// whichever transport the suite runs against.
//
// A broker settles and requeues asynchronously: every count of a queue is waited for
// (f.wait_depth), and every message read back is pulled with f.pull's bounded wait.
#include "conformance.hpp"

#include <atomic>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

using namespace conformance;
using acemq::Message;
using acemq::Outcome;

namespace {

// A fresh bus with a source queue and its dead-letter half ({queue}.dlq, {queue}.parked).
struct Shop {
    Fixture f;
    const std::string queue = f.source_queue("orders");
    const std::string dlq = acemq::dead_letter_queue(queue);
    const std::string parked = acemq::parked_queue(queue);

    // Puts a message on `target` the way the engine sets one aside: through the default
    // exchange with the set-aside queue's name as its routing key, confirmed and routed.
    acemq::Envelope set_aside(const std::string& target, std::string_view payload_id, acemq::Envelope envelope = {}) {
        if (envelope.id.empty()) envelope = acemq::Envelope::for_new_message(queue, "shop@test");
        if (envelope.error.empty()) envelope.error = "the handler rejected it: std::invalid_argument: no sku";
        const acemq::Encoded body = acemq::encode(*acemq::default_codec(), Order{std::string(payload_id), 100});
        const acemq::PublishResult result =
            f.transport().publish(acemq::OutboundMessage{.routing_key = target,
                                                         .body = body.body,
                                                         .content_type = body.content_type,
                                                         .message_id = envelope.id,
                                                         .headers = acemq::render_headers(envelope),
                                                         .mandatory = true});
        REQUIRE(result.confirmed);
        REQUIRE(result.routed);
        return envelope;
    }

    // Waits until `target` holds exactly `expected` ready messages, takes them off in order
    // (acking them) and checks nothing is left.
    std::vector<acemq::InboundMessage> take_all(const std::string& target, std::size_t expected) {
        CHECK(f.wait_depth(target, expected));
        std::vector<acemq::InboundMessage> taken;
        while (taken.size() < expected) {
            std::optional<acemq::Delivery> delivery = f.pull(target);
            if (!delivery) break;
            taken.push_back(delivery->message());
            delivery->ack();
        }
        CHECK(f.transport().queue_depth(target) == 0);
        return taken;
    }
};

acemq::Envelope envelope_of(const acemq::InboundMessage& message) { return acemq::read_envelope(message); }

Order payload_of(const acemq::InboundMessage& message) {
    return acemq::decode<Order>(*acemq::default_codec(), message.body(), message.content_type());
}

std::optional<acemq::FieldValue> header(const acemq::InboundMessage& message, std::string_view name) {
    const auto found = message.headers().find(name);
    if (found == message.headers().end()) return std::nullopt;
    return found->second;
}

}  // namespace

TEST_CASE("52 replay drains a dead-letter queue back to the queue it came from, stamped") {
    Shop shop;
    std::vector<acemq::Envelope> sent;
    for (const char* id : {"o-1", "o-2", "o-3"}) sent.push_back(shop.set_aside(shop.dlq, id));
    REQUIRE(shop.f.wait_depth(shop.dlq, 3));

    const acemq::ReplayResult result = acemq::replay(shop.f.bus(), shop.dlq);

    CHECK(result == acemq::ReplayResult{3, 0, acemq::ReplayStop::drained});
    CHECK(result.to_string() == "moved 3, skipped 0 (drained)");
    CHECK(shop.f.wait_depth(shop.dlq, 0));
    const std::vector<acemq::InboundMessage> back = shop.take_all(shop.queue, 3);
    REQUIRE(back.size() == 3);
    for (std::size_t i = 0; i < back.size(); ++i) {
        const acemq::InboundMessage& message = back[i];
        const acemq::Envelope envelope = envelope_of(message);
        CHECK(message.routing_key() == shop.queue);
        CHECK(message.message_id() == sent[i].id);
        CHECK(envelope.id == sent[i].id);
        CHECK(envelope.correlation == sent[i].correlation);
        CHECK(envelope.first_seen == sent[i].first_seen);
        CHECK(payload_of(message).id == std::vector<std::string>{"o-1", "o-2", "o-3"}[i]);
        CHECK(message.content_type() == acemq::default_codec()->content_type());
        CHECK(header(message, acemq::header::replayed_from) == acemq::FieldValue(shop.dlq));
        CHECK(header(message, acemq::header::replay_count) == acemq::FieldValue(std::int32_t{1}));
        const auto at = header(message, acemq::header::replayed_at);
        REQUIRE(at);
        const std::string text = at->as_text().value_or("");
        CHECK(std::regex_match(text, std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)")));
    }
}

TEST_CASE("52 replay reads the previous count leniently and adds one") {
    Shop shop;
    acemq::Envelope as_number = acemq::Envelope::for_new_message(shop.queue);
    acemq::set_header(as_number, std::string(acemq::header::replay_count), std::int64_t{4});
    acemq::Envelope as_text = acemq::Envelope::for_new_message(shop.queue);
    acemq::set_header(as_text, std::string(acemq::header::replay_count), "4");
    acemq::Envelope as_nonsense = acemq::Envelope::for_new_message(shop.queue);
    acemq::set_header(as_nonsense, std::string(acemq::header::replay_count), "often");
    shop.set_aside(shop.dlq, "o-1", as_number);
    shop.set_aside(shop.dlq, "o-2", as_text);
    shop.set_aside(shop.dlq, "o-3", as_nonsense);
    REQUIRE(shop.f.wait_depth(shop.dlq, 3));

    CHECK(acemq::replay(shop.f.bus(), shop.dlq).moved == 3);
    const std::vector<acemq::InboundMessage> back = shop.take_all(shop.queue, 3);
    REQUIRE(back.size() == 3);
    CHECK(header(back[0], acemq::header::replay_count) == acemq::FieldValue(std::int32_t{5}));
    CHECK(header(back[1], acemq::header::replay_count) == acemq::FieldValue(std::int32_t{5}));
    CHECK(header(back[2], acemq::header::replay_count) == acemq::FieldValue(std::int32_t{1}));
}

TEST_CASE("53 replay restarts the attempt and drops the error unless told to keep them") {
    Shop shop;
    acemq::Envelope tired = acemq::Envelope::for_new_message(shop.queue);
    tired.attempt = 3;
    tired.error = "exhausted 3 attempts: std::runtime_error: the warehouse is not answering";

    SECTION("restart (the default)") {
        shop.set_aside(shop.dlq, "o-1", tired);
        REQUIRE(shop.f.wait_depth(shop.dlq, 1));
        CHECK(acemq::replay(shop.f.bus(), shop.dlq).moved == 1);
        const std::vector<acemq::InboundMessage> back = shop.take_all(shop.queue, 1);
        REQUIRE(back.size() == 1);
        CHECK(envelope_of(back[0]).attempt == 1);
        CHECK(envelope_of(back[0]).error.empty());
        CHECK_FALSE(header(back[0], acemq::header::error));
    }
    SECTION("restart = false") {
        shop.set_aside(shop.dlq, "o-1", tired);
        REQUIRE(shop.f.wait_depth(shop.dlq, 1));
        CHECK(acemq::replay(shop.f.bus(), shop.dlq, {.restart = false}).moved == 1);
        const std::vector<acemq::InboundMessage> back = shop.take_all(shop.queue, 1);
        REQUIRE(back.size() == 1);
        CHECK(envelope_of(back[0]).attempt == 3);
        CHECK(envelope_of(back[0]).error == tired.error);
    }
}

TEST_CASE("54 replay with a filter moves what it accepts and puts the rest back on the source queue") {
    Shop shop;
    for (const char* id : {"o-1", "o-2", "o-3"}) shop.set_aside(shop.dlq, id);
    REQUIRE(shop.f.wait_depth(shop.dlq, 3));

    acemq::ReplayOptions options;
    options.only = [](const acemq::Envelope&, std::span<const std::byte> body) {
        return acemq::decode<Order>(*acemq::default_codec(), body, acemq::content_types::json).id == "o-2";
    };
    const acemq::ReplayResult result = acemq::replay(shop.f.bus(), shop.dlq, options);

    CHECK(result == acemq::ReplayResult{1, 2, acemq::ReplayStop::drained});
    CHECK(result.to_string() == "moved 1, skipped 2 (drained)");
    const std::vector<acemq::InboundMessage> moved = shop.take_all(shop.queue, 1);
    REQUIRE(moved.size() == 1);
    CHECK(payload_of(moved[0]).id == "o-2");
    const std::vector<acemq::InboundMessage> declined = shop.take_all(shop.dlq, 2);
    REQUIRE(declined.size() == 2);
    CHECK(payload_of(declined[0]).id == "o-1");
    CHECK(payload_of(declined[1]).id == "o-3");
    CHECK_FALSE(header(declined[0], acemq::header::replayed_from));
}

TEST_CASE("54 a filter that throws puts every held message back and the exception goes on") {
    Shop shop;
    for (const char* id : {"o-1", "o-2", "o-3"}) shop.set_aside(shop.dlq, id);
    REQUIRE(shop.f.wait_depth(shop.dlq, 3));
    int seen = 0;  // the filter runs on this thread, inside replay()
    acemq::ReplayOptions options;
    options.only = [&](const acemq::Envelope&, std::span<const std::byte>) {
        if (++seen == 2) throw std::runtime_error("the filter broke");
        return false;
    };
    CHECK_THROWS_WITH(acemq::replay(shop.f.bus(), shop.dlq, options), "the filter broke");
    CHECK(shop.f.wait_depth(shop.dlq, 3));
    CHECK(shop.f.transport().queue_depth(shop.queue) == 0);
}

TEST_CASE("55 replay stops at its limit and at its deadline") {
    Shop shop;
    for (int i = 0; i < 10; ++i) shop.set_aside(shop.dlq, "o-" + std::to_string(i));
    REQUIRE(shop.f.wait_depth(shop.dlq, 10));

    const acemq::ReplayResult limited = acemq::replay(shop.f.bus(), shop.dlq, {.limit = 4});
    CHECK(limited == acemq::ReplayResult{4, 0, acemq::ReplayStop::limit});
    CHECK(limited.to_string() == "moved 4, skipped 0 (limit)");
    CHECK(shop.f.wait_depth(shop.queue, 4));
    CHECK(shop.f.wait_depth(shop.dlq, 6));

    const acemq::ReplayResult out_of_time = acemq::replay(shop.f.bus(), shop.dlq, {.deadline = 0ms});
    CHECK(out_of_time.to_string() == "moved 0, skipped 0 (deadline)");
    CHECK(shop.f.wait_depth(shop.dlq, 6));

    CHECK(acemq::replay(shop.f.bus(), shop.dlq, {.deadline = 10s}) ==
          acemq::ReplayResult{6, 0, acemq::ReplayStop::drained});
}

TEST_CASE("56 replay from a parked queue goes home too; an explicit routing key sends everything there") {
    Shop shop;
    const std::string review = shop.f.name("orders.review");
    shop.f.bus().declare(acemq::Topology{}.queue(review));
    shop.set_aside(shop.parked, "o-1");
    shop.set_aside(shop.parked, "o-2");
    REQUIRE(shop.f.wait_depth(shop.parked, 2));

    CHECK(acemq::replay(shop.f.bus(), shop.parked, {.limit = 1}).moved == 1);
    CHECK(shop.f.wait_depth(shop.queue, 1));

    CHECK(acemq::replay(shop.f.bus(), shop.parked, {.routing_key = review}).moved == 1);
    CHECK(shop.f.wait_depth(review, 1));
    CHECK(shop.f.wait_depth(shop.parked, 0));
}

TEST_CASE("52 replay through an exchange uses each message's own routing key") {
    Fixture f;
    const std::string shop = f.name("shop"), shop_replay = f.name("shop.replay");
    const std::string audit = f.name("audit"), placed = f.name("orders.placed");
    f.bus().declare(acemq::Topology{}
                        .exchange(shop, acemq::ExchangeKind::direct)
                        .exchange(shop_replay, acemq::ExchangeKind::direct)
                        .queue(audit)
                        .queue(placed)
                        .bind(audit, shop, "order.placed")
                        .bind(placed, shop_replay, "order.placed"));
    REQUIRE(f.bus().publisher(shop, "order.placed").send(Order{"o-1", 100}).routed);
    REQUIRE(f.wait_depth(audit, 1));

    CHECK(acemq::replay(f.bus(), audit, {.exchange = shop_replay}).moved == 1);
    CHECK(f.wait_depth(placed, 1));
    std::optional<acemq::Delivery> moved = f.pull(placed);
    REQUIRE(moved);
    CHECK(moved->message().routing_key() == "order.placed");
    CHECK(payload_of(moved->message()).id == "o-1");
    moved->ack();
    CHECK(f.transport().queue_depth(placed) == 0);
    CHECK(f.transport().queue_depth(audit) == 0);
}

TEST_CASE("56 a message whose own key leads back into the replayed queue stops the replay") {
    Fixture f;
    const std::string audit = f.name("audit");
    f.bus().declare(acemq::Topology{}.queue(audit));
    REQUIRE(f.bus().publisher_to_queue(audit).send(Order{"o-1", 100}).routed);
    REQUIRE(f.wait_depth(audit, 1));

    try {
        acemq::replay(f.bus(), audit);
        FAIL("replay from audit back into audit went on");
    } catch (const acemq::ReplayError& error) {
        CHECK(Catch::Contains("cannot republish").match(error.what()));
        CHECK(Catch::Contains("leads straight back").match(error.what()));
        CHECK(error.result().to_string() == "moved 0, skipped 0 (failed)");
    }
    CHECK(f.wait_depth(audit, 1));
}

TEST_CASE("56 a replay whose republish is unroutable stops with ReplayError and loses nothing") {
    Shop shop;
    const std::string nobody = shop.f.name("nobody.listens");
    for (const char* id : {"o-1", "o-2"}) shop.set_aside(shop.dlq, id);
    REQUIRE(shop.f.wait_depth(shop.dlq, 2));

    try {
        acemq::replay(shop.f.bus(), shop.dlq, {.routing_key = nobody});
        FAIL("replay to an unbound key did not throw");
    } catch (const acemq::ReplayError& error) {
        CHECK(Catch::Contains("cannot republish").match(error.what()));
        CHECK(Catch::Contains("reached no queue").match(error.what()));
        CHECK(error.result().moved == 0);
        CHECK(error.result().reason == acemq::ReplayStop::failed);
    }
    CHECK(shop.f.wait_depth(shop.dlq, 2));
    CHECK(shop.f.transport().queue_depth(shop.queue) == 0);

    // A filtered-out message held at the time of the failure goes back too.
    acemq::ReplayOptions options{.routing_key = nobody};
    options.only = [first = true](const acemq::Envelope&, std::span<const std::byte>) mutable {
        return !std::exchange(first, false);
    };
    CHECK_THROWS_AS(acemq::replay(shop.f.bus(), shop.dlq, options), acemq::ReplayError);
    CHECK(shop.f.wait_depth(shop.dlq, 2));
    CHECK(shop.f.transport().queue_depth(shop.queue) == 0);
}

TEST_CASE("56 replay refuses what cannot work before touching anything") {
    Shop shop;
    shop.set_aside(shop.dlq, "o-1");
    REQUIRE(shop.f.wait_depth(shop.dlq, 1));
    CHECK_THROWS_AS(acemq::replay(shop.f.bus(), ""), acemq::InvalidArgument);
    CHECK_THROWS_WITH(acemq::replay(shop.f.bus(), ""), Catch::Contains("needs a queue"));
    CHECK_THROWS_AS(acemq::replay(shop.f.bus(), shop.dlq, {.deadline = -1ms}), acemq::InvalidArgument);
    CHECK_THROWS_AS(acemq::replay(shop.f.bus(), shop.dlq, {.routing_key = shop.dlq}), acemq::InvalidArgument);
    CHECK_THROWS_AS(acemq::replay(shop.f.bus(), shop.dlq, {.routing_key = ""}), acemq::InvalidArgument);
    CHECK(shop.f.transport().queue_depth(shop.dlq) == 1);
}

TEST_CASE("52 tutorial: a rejected order is replayed once the cause is fixed and then handled") {
    Shop shop;
    std::atomic<bool> fixed{false};
    std::atomic<int> accepted{0};
    acemq::Consumer consumer = shop.f.bus().consume<Order>(shop.queue, [&](const Message<Order>& message) {
        if (!fixed) return acemq::reject(std::invalid_argument("unknown sku in " + message.payload.id));
        if (message.envelope.headers.contains(std::string(acemq::header::replayed_from))) ++accepted;
        return acemq::accept();
    });
    shop.f.bus().publisher_to_queue(shop.queue).send(Order{"o-1", 100});

    REQUIRE(shop.f.harness().wait_dead_lettered(shop.queue, 1, 10s));
    REQUIRE(shop.f.wait_depth(shop.dlq, 1));
    fixed = true;
    CHECK(acemq::replay(shop.f.bus(), shop.dlq).to_string() == "moved 1, skipped 0 (drained)");
    CHECK(shop.f.harness().wait_settled(shop.queue, Outcome::acked, 1, 10s));
    CHECK(consumer.close());
    CHECK(accepted == 1);
}
