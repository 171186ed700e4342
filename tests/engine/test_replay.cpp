// Replay (patterns §5.4, §8 items 52–56; wire contract §10.3) on the embedded broker.
#include <catch2/catch.hpp>

#include <acemq/bus.hpp>
#include <acemq/replay.hpp>
#include <acemq/uuid.hpp>

#include <atomic>
#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

struct Order {
    std::string id;
    std::int64_t cents = 0;
};

// A fresh embedded broker with "orders.new" and its dead-letter half declared.
struct Shop {
    acemq::Bus bus = acemq::connect("inproc://replay-" + acemq::new_uuid());

    Shop() { bus.declare(acemq::Topology{}.queue("orders.new", {.dead_letter = true})); }

    std::uint64_t depth(std::string_view queue) { return bus.transport().queue_depth(queue); }

    // Puts a message on `queue` the way the engine sets one aside: through the default
    // exchange with the set-aside queue's name as its routing key.
    acemq::Envelope set_aside(std::string_view queue, std::string_view payload_id, acemq::Envelope envelope = {}) {
        if (envelope.id.empty()) envelope = acemq::Envelope::for_new_message("orders.new", "shop@test");
        if (envelope.error.empty()) envelope.error = "the handler rejected it: std::invalid_argument: no sku";
        const acemq::Encoded body = acemq::encode(*acemq::default_codec(), Order{std::string(payload_id), 100});
        const acemq::PublishResult result = bus.transport().publish(
            acemq::OutboundMessage{"", std::string(queue), body.body, body.content_type, envelope.id,
                                   acemq::render_headers(envelope), "", true, true});
        REQUIRE(result.confirmed);
        REQUIRE(result.routed);
        return envelope;
    }

    // Takes every message off `queue` (acking them) and returns them in order.
    std::vector<acemq::InboundMessage> take_all(std::string_view queue) {
        std::vector<acemq::InboundMessage> taken;
        while (std::optional<acemq::Delivery> delivery = bus.transport().pull(queue)) {
            taken.push_back(delivery->message());
            delivery->ack();
        }
        return taken;
    }
};

acemq::Envelope envelope_of(const acemq::InboundMessage& message) {
    return acemq::read_envelope(message.headers, message.routing_key, message.message_id);
}

Order payload_of(const acemq::InboundMessage& message) {
    return acemq::decode<Order>(*acemq::default_codec(), message.body, message.content_type);
}

std::optional<acemq::FieldValue> header(const acemq::InboundMessage& message, std::string_view name) {
    const auto found = message.headers.find(name);
    if (found == message.headers.end()) return std::nullopt;
    return found->second;
}

}  // namespace

TEST_CASE("replay drains a dead-letter queue back to the queue it came from, stamped") {
    Shop shop;
    std::vector<acemq::Envelope> sent;
    for (const char* id : {"o-1", "o-2", "o-3"}) sent.push_back(shop.set_aside("orders.new.dlq", id));

    const acemq::ReplayResult result = acemq::replay(shop.bus, "orders.new.dlq");

    CHECK(result == acemq::ReplayResult{3, 0, acemq::ReplayStop::drained});
    CHECK(result.to_string() == "moved 3, skipped 0 (drained)");
    CHECK(shop.depth("orders.new.dlq") == 0);
    const std::vector<acemq::InboundMessage> back = shop.take_all("orders.new");
    REQUIRE(back.size() == 3);
    for (std::size_t i = 0; i < back.size(); ++i) {
        const acemq::InboundMessage& message = back[i];
        const acemq::Envelope envelope = envelope_of(message);
        CHECK(message.routing_key == "orders.new");
        CHECK(message.message_id == sent[i].id);
        CHECK(envelope.id == sent[i].id);
        CHECK(envelope.correlation == sent[i].correlation);
        CHECK(envelope.first_seen == sent[i].first_seen);
        CHECK(payload_of(message).id == std::vector<std::string>{"o-1", "o-2", "o-3"}[i]);
        CHECK(message.content_type == acemq::default_codec()->content_type());
        CHECK(header(message, acemq::header::replayed_from) == acemq::FieldValue("orders.new.dlq"));
        CHECK(header(message, acemq::header::replay_count) == acemq::FieldValue(std::int32_t{1}));
        const auto at = header(message, acemq::header::replayed_at);
        REQUIRE(at);
        const std::string text = at->as_text().value_or("");
        CHECK(std::regex_match(text, std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)")));
    }
}

TEST_CASE("replay reads the previous count leniently and adds one") {
    Shop shop;
    acemq::Envelope as_number = acemq::Envelope::for_new_message("orders.new");
    acemq::set_header(as_number, std::string(acemq::header::replay_count), std::int64_t{4});
    acemq::Envelope as_text = acemq::Envelope::for_new_message("orders.new");
    acemq::set_header(as_text, std::string(acemq::header::replay_count), "4");
    acemq::Envelope as_nonsense = acemq::Envelope::for_new_message("orders.new");
    acemq::set_header(as_nonsense, std::string(acemq::header::replay_count), "often");
    shop.set_aside("orders.new.dlq", "o-1", as_number);
    shop.set_aside("orders.new.dlq", "o-2", as_text);
    shop.set_aside("orders.new.dlq", "o-3", as_nonsense);

    CHECK(acemq::replay(shop.bus, "orders.new.dlq").moved == 3);
    const std::vector<acemq::InboundMessage> back = shop.take_all("orders.new");
    REQUIRE(back.size() == 3);
    CHECK(header(back[0], acemq::header::replay_count) == acemq::FieldValue(std::int32_t{5}));
    CHECK(header(back[1], acemq::header::replay_count) == acemq::FieldValue(std::int32_t{5}));
    CHECK(header(back[2], acemq::header::replay_count) == acemq::FieldValue(std::int32_t{1}));
}

TEST_CASE("replay restarts the attempt and drops the error unless told to keep them") {
    Shop shop;
    acemq::Envelope tired = acemq::Envelope::for_new_message("orders.new");
    tired.attempt = 3;
    tired.error = "exhausted 3 attempts: std::runtime_error: the warehouse is not answering";

    SECTION("restart (the default)") {
        shop.set_aside("orders.new.dlq", "o-1", tired);
        CHECK(acemq::replay(shop.bus, "orders.new.dlq").moved == 1);
        const std::vector<acemq::InboundMessage> back = shop.take_all("orders.new");
        REQUIRE(back.size() == 1);
        CHECK(envelope_of(back[0]).attempt == 1);
        CHECK(envelope_of(back[0]).error.empty());
        CHECK_FALSE(header(back[0], acemq::header::error));
    }
    SECTION("restart = false") {
        shop.set_aside("orders.new.dlq", "o-1", tired);
        CHECK(acemq::replay(shop.bus, "orders.new.dlq", {.restart = false}).moved == 1);
        const std::vector<acemq::InboundMessage> back = shop.take_all("orders.new");
        REQUIRE(back.size() == 1);
        CHECK(envelope_of(back[0]).attempt == 3);
        CHECK(envelope_of(back[0]).error == tired.error);
    }
}

TEST_CASE("replay with a filter moves what it accepts and puts the rest back on the source queue") {
    Shop shop;
    for (const char* id : {"o-1", "o-2", "o-3"}) shop.set_aside("orders.new.dlq", id);

    acemq::ReplayOptions options;
    options.only = [](const acemq::Envelope&, std::span<const std::byte> body) {
        return acemq::decode<Order>(*acemq::default_codec(), body, acemq::content_types::msgpack).id == "o-2";
    };
    const acemq::ReplayResult result = acemq::replay(shop.bus, "orders.new.dlq", options);

    CHECK(result == acemq::ReplayResult{1, 2, acemq::ReplayStop::drained});
    CHECK(result.to_string() == "moved 1, skipped 2 (drained)");
    const std::vector<acemq::InboundMessage> moved = shop.take_all("orders.new");
    REQUIRE(moved.size() == 1);
    CHECK(payload_of(moved[0]).id == "o-2");
    const std::vector<acemq::InboundMessage> declined = shop.take_all("orders.new.dlq");
    REQUIRE(declined.size() == 2);
    CHECK(payload_of(declined[0]).id == "o-1");
    CHECK(payload_of(declined[1]).id == "o-3");
    CHECK_FALSE(header(declined[0], acemq::header::replayed_from));
}

TEST_CASE("a filter that throws puts every held message back and the exception goes on") {
    Shop shop;
    for (const char* id : {"o-1", "o-2", "o-3"}) shop.set_aside("orders.new.dlq", id);
    int seen = 0;
    acemq::ReplayOptions options;
    options.only = [&](const acemq::Envelope&, std::span<const std::byte>) {
        if (++seen == 2) throw std::runtime_error("the filter broke");
        return false;
    };
    CHECK_THROWS_WITH(acemq::replay(shop.bus, "orders.new.dlq", options), "the filter broke");
    CHECK(shop.depth("orders.new.dlq") == 3);
    CHECK(shop.depth("orders.new") == 0);
}

TEST_CASE("replay stops at its limit and at its deadline") {
    Shop shop;
    for (int i = 0; i < 10; ++i) shop.set_aside("orders.new.dlq", "o-" + std::to_string(i));

    const acemq::ReplayResult limited = acemq::replay(shop.bus, "orders.new.dlq", {.limit = 4});
    CHECK(limited == acemq::ReplayResult{4, 0, acemq::ReplayStop::limit});
    CHECK(limited.to_string() == "moved 4, skipped 0 (limit)");
    CHECK(shop.depth("orders.new") == 4);
    CHECK(shop.depth("orders.new.dlq") == 6);

    const acemq::ReplayResult out_of_time = acemq::replay(shop.bus, "orders.new.dlq", {.deadline = 0ms});
    CHECK(out_of_time.to_string() == "moved 0, skipped 0 (deadline)");
    CHECK(shop.depth("orders.new.dlq") == 6);

    CHECK(acemq::replay(shop.bus, "orders.new.dlq", {.deadline = 10s}) ==
          acemq::ReplayResult{6, 0, acemq::ReplayStop::drained});
}

TEST_CASE("replay from a parked queue goes home too; an explicit routing key sends everything there") {
    Shop shop;
    shop.bus.declare(acemq::Topology{}.queue("orders.review"));
    shop.set_aside("orders.new.parked", "o-1");
    shop.set_aside("orders.new.parked", "o-2");

    CHECK(acemq::replay(shop.bus, "orders.new.parked", {.limit = 1}).moved == 1);
    CHECK(shop.depth("orders.new") == 1);

    CHECK(acemq::replay(shop.bus, "orders.new.parked", {.routing_key = "orders.review"}).moved == 1);
    CHECK(shop.depth("orders.review") == 1);
    CHECK(shop.depth("orders.new.parked") == 0);
}

TEST_CASE("replay through an exchange uses each message's own routing key") {
    Shop shop;
    shop.bus.declare(acemq::Topology{}
                         .exchange("shop", acemq::ExchangeKind::direct)
                         .exchange("shop.replay", acemq::ExchangeKind::direct)
                         .queue("audit")
                         .queue("orders.placed")
                         .bind("audit", "shop", "order.placed")
                         .bind("orders.placed", "shop.replay", "order.placed"));
    REQUIRE(shop.bus.publisher("shop", "order.placed").send(Order{"o-1", 100}).routed);

    CHECK(acemq::replay(shop.bus, "audit", {.exchange = "shop.replay"}).moved == 1);
    const std::vector<acemq::InboundMessage> moved = shop.take_all("orders.placed");
    REQUIRE(moved.size() == 1);
    CHECK(moved[0].routing_key == "order.placed");
    CHECK(payload_of(moved[0]).id == "o-1");
}

TEST_CASE("a message whose own key leads back into the replayed queue stops the replay") {
    Shop shop;
    shop.bus.declare(acemq::Topology{}.queue("audit"));
    REQUIRE(shop.bus.publisher("", "audit").send(Order{"o-1", 100}).routed);

    try {
        acemq::replay(shop.bus, "audit");
        FAIL("replay from audit back into audit went on");
    } catch (const acemq::ReplayError& error) {
        CHECK(Catch::Contains("cannot republish").match(error.what()));
        CHECK(Catch::Contains("leads straight back").match(error.what()));
        CHECK(error.result().to_string() == "moved 0, skipped 0 (failed)");
    }
    CHECK(shop.depth("audit") == 1);
}

TEST_CASE("a replay whose republish is unroutable stops with ReplayError and loses nothing") {
    Shop shop;
    for (const char* id : {"o-1", "o-2"}) shop.set_aside("orders.new.dlq", id);

    try {
        acemq::replay(shop.bus, "orders.new.dlq", {.routing_key = "nobody.listens"});
        FAIL("replay to an unbound key did not throw");
    } catch (const acemq::ReplayError& error) {
        CHECK(Catch::Contains("cannot republish").match(error.what()));
        CHECK(Catch::Contains("reached no queue").match(error.what()));
        CHECK(error.result().moved == 0);
        CHECK(error.result().reason == acemq::ReplayStop::failed);
    }
    CHECK(shop.depth("orders.new.dlq") == 2);
    CHECK(shop.depth("orders.new") == 0);

    // A filtered-out message held at the time of the failure goes back too.
    acemq::ReplayOptions options{.routing_key = "nobody.listens"};
    options.only = [first = true](const acemq::Envelope&, std::span<const std::byte>) mutable {
        return !std::exchange(first, false);
    };
    CHECK_THROWS_AS(acemq::replay(shop.bus, "orders.new.dlq", options), acemq::ReplayError);
    CHECK(shop.depth("orders.new.dlq") == 2);
}

TEST_CASE("replay refuses what cannot work before touching anything") {
    Shop shop;
    shop.set_aside("orders.new.dlq", "o-1");
    CHECK_THROWS_AS(acemq::replay(shop.bus, ""), acemq::InvalidArgument);
    CHECK_THROWS_WITH(acemq::replay(shop.bus, ""), Catch::Contains("needs a queue"));
    CHECK_THROWS_AS(acemq::replay(shop.bus, "orders.new.dlq", {.deadline = -1ms}), acemq::InvalidArgument);
    CHECK_THROWS_AS(acemq::replay(shop.bus, "orders.new.dlq", {.routing_key = "orders.new.dlq"}), acemq::InvalidArgument);
    CHECK_THROWS_AS(acemq::replay(shop.bus, "orders.new.dlq", {.routing_key = ""}), acemq::InvalidArgument);
    CHECK(shop.depth("orders.new.dlq") == 1);
}

TEST_CASE("tutorial: a rejected order is replayed once the cause is fixed and then handled") {
    Shop shop;
    std::atomic<bool> fixed{false};
    std::atomic<int> accepted{0};
    acemq::Consumer consumer = shop.bus.consume<Order>("orders.new", [&](const acemq::Message<Order>& message) {
        if (!fixed) return acemq::reject(std::invalid_argument("unknown sku in " + message.payload.id));
        if (message.envelope.headers.contains(std::string(acemq::header::replayed_from))) ++accepted;
        return acemq::accept();
    });
    shop.bus.publisher("", "orders.new").send(Order{"o-1", 100});

    const auto wait_for = [](auto condition) {
        const auto give_up = std::chrono::steady_clock::now() + 10s;
        while (!condition() && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(5ms);
        return condition();
    };
    REQUIRE(wait_for([&] { return shop.depth("orders.new.dlq") == 1; }));
    fixed = true;
    CHECK(acemq::replay(shop.bus, "orders.new.dlq").to_string() == "moved 1, skipped 0 (drained)");
    CHECK(wait_for([&] { return accepted == 1; }));
}
