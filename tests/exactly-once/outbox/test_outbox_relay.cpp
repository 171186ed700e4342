// The outbox record, the in-memory store and the relay on the embedded broker: the
// family's pinned behaviours (docs/patterns.md §8, items 27-43) that need no database.
#include "outbox_support.hpp"

#include <acemq/stores/memory_outbox_store.hpp>

#include <acemq/json_codec.hpp>

#include <atomic>
#include <future>

#include "../../support/handmade.hpp"

using namespace outbox_test;
using acemq::InMemoryOutboxStore;
using acemq::OutboxRelay;

namespace {

std::string body_text(std::span<const std::byte> body) {
    return std::string(reinterpret_cast<const char*>(body.data()), body.size());
}

// An in-memory store whose pending() throws the first time it is asked.
class FailsOnce final : public acemq::OutboxStore {
public:
    acemq::InMemoryOutboxStore inner;
    std::atomic<int> asked{0};
    std::vector<acemq::OutboxRecord> pending(std::size_t limit) override {
        if (asked.fetch_add(1) == 0) throw acemq::Error("the database went away for a moment");
        return inner.pending(limit);
    }
    void mark_published(std::string_view id) override { inner.mark_published(id); }
    void record_failure(std::string_view id, std::string_view error) override { inner.record_failure(id, error); }
    std::vector<acemq::OutboxRecord> retired() override { return inner.retired(); }
    std::size_t count() override { return inner.count(); }
};

}  // namespace

TEST_CASE("record encodes now, with the envelope's headers and the bus's origin (31)", "[outbox]") {
    Fixture fixture;
    const auto json = std::make_shared<acemq::JsonCodec>();
    const acemq::OutboxRecord made =
        acemq::record(fixture.bus, "shop", "order.placed", Order{"7", 250}, {.codec = json});
    CHECK(made.exchange == "shop");
    CHECK(made.routing_key == "order.placed");
    CHECK(body_text(made.body) == R"({"id":"7","cents":250})");
    CHECK(made.content_type == "application/json");
    CHECK(made.headers.at(acemq::header::type) == acemq::FieldValue("order.placed"));
    CHECK(made.headers.at(acemq::header::origin) == acemq::FieldValue("shop@test"));
    CHECK(made.headers.at(acemq::header::id) == acemq::FieldValue(made.id));
    CHECK(made.headers.at(acemq::header::version) == acemq::FieldValue(std::int32_t{1}));
    CHECK(made.headers.at(acemq::header::attempt) == acemq::FieldValue(std::int32_t{1}));
    CHECK(made.headers.at(acemq::header::first_seen).holds<std::int64_t>());
    CHECK(made.attempts == 0);
    CHECK(made.last_error.empty());
    CHECK(std::chrono::abs(acemq::epoch_millis_now() - made.created_at) < 5s);

    SECTION("the bus's default codec when none is given") {
        const acemq::OutboxRecord packed = acemq::record_to_queue(fixture.bus, "order.placed", Order{"7", 250});
        CHECK(packed.exchange.empty());  // the default exchange, which routes to the queue named by the key
        CHECK(packed.routing_key == "order.placed");
        const acemq::Publisher direct = fixture.bus.publisher_to_queue("order.placed");
        CHECK(direct.exchange().empty());
        CHECK(direct.routing_key() == "order.placed");
        CHECK(packed.content_type == "application/json");
        CHECK(body_text(packed.body) == R"({"id":"7","cents":250})");
        acemq::Bus msgpack_bus =
            acemq::connect("inproc://outbox-" + acemq::new_uuid(), {.codec = std::make_shared<acemq::MsgpackCodec>()});
        const acemq::OutboxRecord written = acemq::record_to_queue(msgpack_bus, "order.placed", Order{"7", 250});
        CHECK(written.content_type == "application/msgpack");
        CHECK(acemq::decode<Order>(*acemq::default_codec(), written.body, written.content_type).id == "7");
    }
    SECTION("a caller's envelope is honoured; its empty fields take a new message's defaults, origin excepted") {
        acemq::Envelope given;
        given.id = "order-1";
        given.causation = "cart-9";
        const acemq::OutboxRecord own =
            acemq::record(fixture.bus, "shop", "order.placed", Order{"7", 250}, {.envelope = given});
        CHECK(own.id == "order-1");
        CHECK(own.headers.at(acemq::header::id) == acemq::FieldValue("order-1"));
        CHECK(own.headers.at(acemq::header::causation) == acemq::FieldValue("cart-9"));
        CHECK(own.headers.at(acemq::header::correlation) == acemq::FieldValue("order-1"));
        CHECK(own.headers.at(acemq::header::type) == acemq::FieldValue("order.placed"));
        CHECK_FALSE(own.headers.contains(acemq::header::origin));
    }
}

TEST_CASE("an empty record id is refused (39)", "[outbox]") {
    InMemoryOutboxStore store;
    acemq::OutboxRecord nameless;
    CHECK_THAT(what_of<acemq::InvalidArgument>([&] { store.add(nameless); }),
               Catch::Matchers::Contains("an outbox record needs an id"));
    CHECK(store.count() == 0);
    CHECK_THAT(what_of<acemq::InvalidArgument>([&] { InMemoryOutboxStore(0); }),
               Catch::Matchers::Contains("max_attempts must be at least 1"));
}

TEST_CASE("the in-memory store: first write kept, oldest first, removal, failures and retirement (27-30)", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store{3};
    const auto newest = order_record(fixture.bus, fixture.queue, "c", 1s);
    const auto oldest = order_record(fixture.bus, fixture.queue, "a", 3s);
    auto tie_first = order_record(fixture.bus, fixture.queue, "b1", 2s);
    auto tie_second = order_record(fixture.bus, fixture.queue, "b2");
    tie_second.created_at = tie_first.created_at;
    for (const auto& made : {newest, oldest, tie_first, tie_second}) store.add(made);

    auto changed = oldest;
    changed.body.clear();
    store.add(changed);  // the same id again: the first is kept
    CHECK(store.count() == 4);
    CHECK(store.pending(0).at(0) == oldest);

    CHECK(ids_of(store.pending(0)) == std::vector{oldest.id, tie_first.id, tie_second.id, newest.id});
    CHECK(ids_of(store.pending(2)) == std::vector{oldest.id, tie_first.id});

    store.mark_published(tie_first.id);
    store.mark_published(tie_first.id);  // twice is fine
    CHECK(store.count() == 3);

    for (int i = 0; i < 2; ++i) store.record_failure(oldest.id, "nacked");
    CHECK(store.pending(1).at(0).attempts == 2);
    CHECK(store.pending(1).at(0).last_error == "nacked");
    store.record_failure(oldest.id, "nacked again");
    CHECK(ids_of(store.pending(0)) == std::vector{tie_second.id, newest.id});
    REQUIRE(store.retired().size() == 1);
    CHECK(store.retired().at(0).id == oldest.id);
    CHECK(store.retired().at(0).attempts == 3);
    CHECK(store.retired().at(0).last_error == "nacked again");
    CHECK(store.count() == 3);  // retired, not removed
}

TEST_CASE("a relay refuses a non-positive interval and an empty batch", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store;
    CHECK_THAT(what_of<acemq::InvalidArgument>([&] { OutboxRelay(fixture.bus, store, {.interval = 0ms}); }),
               Catch::Matchers::Contains("a relay interval must be positive"));
    CHECK_THAT(what_of<acemq::InvalidArgument>([&] { OutboxRelay(fixture.bus, store, {.batch = 0}); }),
               Catch::Matchers::Contains("a relay batch must be at least 1"));
}

TEST_CASE("a sweep publishes persistent, mandatory copies of the records and removes them (32, 27)", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store;
    const auto first = order_record(fixture.bus, fixture.queue, "o-1");
    store.add(first);
    store.add(first);  // added twice: one publish
    store.add(order_record(fixture.bus, fixture.queue, "o-2"));
    OutboxRelay relay{fixture.bus, store};
    CHECK(relay.sweep() == 2);
    CHECK(store.count() == 0);
    CHECK(relay.published() == 2);
    CHECK(relay.sweep() == 0);

    const auto sent = fixture.transport().sent();
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].persistent);
    CHECK(sent[0].mandatory);
    CHECK(sent[0].message_id == first.id);
    CHECK(sent[0].headers == first.headers);
    CHECK(sent[0].body == first.body);
    CHECK(sent[0].content_type == first.content_type);
    CHECK(sent[0].reply_to.empty());

    const auto delivered = fixture.drain();
    REQUIRE(delivered.size() == 2);
    CHECK(delivered[0].message_id() == first.id);
    CHECK(acemq::read_envelope(delivered[0]).id == first.id);
    CHECK(order_id_of(delivered[0]) == "o-1");
}

TEST_CASE("records go out in created_at order whatever the order they were added in (33)", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store;
    store.add(order_record(fixture.bus, fixture.queue, "third", 1s));
    store.add(order_record(fixture.bus, fixture.queue, "first", 3s));
    store.add(order_record(fixture.bus, fixture.queue, "second", 2s));
    OutboxRelay relay{fixture.bus, store};
    CHECK(relay.sweep() == 3);
    std::vector<std::string> order;
    for (const auto& message : fixture.drain()) order.push_back(order_id_of(message));
    CHECK(order == std::vector<std::string>{"first", "second", "third"});
}

TEST_CASE("a sweep takes one batch (34)", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store;
    for (int i = 0; i < 5; ++i)
        store.add(order_record(fixture.bus, fixture.queue, "o-" + std::to_string(i), std::chrono::seconds(10 - i)));
    OutboxRelay relay{fixture.bus, store, {.batch = 2}};
    CHECK(relay.sweep() == 2);
    CHECK(store.count() == 3);
}

TEST_CASE("a transport error stops the sweep, keeps the record and counts it failed, without a lag (35)", "[outbox]") {
    Fixture fixture{"orders.broken"};
    InMemoryOutboxStore store;
    const auto made = order_record(fixture.bus, fixture.queue, "o-1");
    store.add(made);
    auto events = std::make_shared<Events>();
    OutboxRelay relay{fixture.bus, store, {.observer = events}};
    CHECK_THAT(what_of<acemq::Error>([&] { relay.sweep(); }),
               Catch::Matchers::Contains("connection to the broker was lost"));
    CHECK(store.count() == 1);
    CHECK(store.pending(0).at(0).attempts == 1);
    CHECK(store.pending(0).at(0).last_error == "acemq: the connection to the broker was lost");
    CHECK(relay.failed() == 1);
    CHECK(relay.published() == 0);
    const auto seen = events->seen();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].outcome == acemq::RelayOutcome::failed);
    CHECK(seen[0].routing_key == "orders.broken");
    CHECK(seen[0].exchange.empty());
    CHECK_FALSE(seen[0].lag_seconds.has_value());
}

TEST_CASE("a running relay publishes on its own and nothing after close (36)", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store;
    OutboxRelay relay{fixture.bus, store, {.interval = 10ms}};
    relay.start();
    store.add(order_record(fixture.bus, fixture.queue, "o-1"));
    REQUIRE(fixture.wait_depth(fixture.queue, 1));
    relay.close();
    relay.close();  // idempotent
    store.add(order_record(fixture.bus, fixture.queue, "o-2"));
    std::this_thread::sleep_for(60ms);  // six intervals: proving that nothing comes takes waiting
    CHECK(fixture.bus.transport().queue_depth(fixture.queue) == 1);
    CHECK(store.count() == 1);
    CHECK_THAT(what_of<acemq::Error>([&] { relay.start(); }), Catch::Matchers::Contains("make a new one"));
}

TEST_CASE("the first sweep of a running relay comes one interval after start", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store;
    store.add(order_record(fixture.bus, fixture.queue, "o-1"));
    OutboxRelay relay{fixture.bus, store, {.interval = 1h}};
    relay.start();
    std::this_thread::sleep_for(30ms);  // proving that nothing comes takes waiting
    CHECK(fixture.bus.transport().queue_depth(fixture.queue) == 0);
    // Prompt: the loop waits on the stop signal, not in a sleep of an hour.
    auto closing = std::async(std::launch::async, [&] { relay.close(); });
    REQUIRE(closing.wait_for(20s) == std::future_status::ready);
    closing.get();
    CHECK(fixture.bus.transport().queue_depth(fixture.queue) == 0);  // no sweep on the way out
    CHECK(store.count() == 1);
}

TEST_CASE("a failed sweep does not stop the loop (37)", "[outbox]") {
    Fixture fixture;
    FailsOnce store;
    store.inner.add(order_record(fixture.bus, fixture.queue, "o-1"));
    handmade::CapturedLog log;
    OutboxRelay relay{fixture.bus, store, {.interval = 10ms}};
    relay.start();
    CHECK(fixture.wait_depth(fixture.queue, 1));
    relay.close();
    CHECK(store.asked.load() >= 2);
    CHECK(store.count() == 0);
    const auto lines = log.lines();
    REQUIRE_FALSE(lines.empty());
    CHECK(lines[0].first == acemq::LogLevel::warning);
    CHECK(lines[0].second ==
          "a sweep of the outbox failed; every record is still in it: the database went away for a moment");
}

TEST_CASE("start twice is one sweeper: one message, not two (38)", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store;
    store.add(order_record(fixture.bus, fixture.queue, "o-1"));
    OutboxRelay relay{fixture.bus, store, {.interval = 10ms}};
    relay.start();
    relay.start();
    REQUIRE(fixture.wait_depth(fixture.queue, 1));
    std::this_thread::sleep_for(50ms);  // a second sweeper would have had five chances
    relay.close();
    CHECK(fixture.bus.transport().queue_depth(fixture.queue) == 1);
    CHECK(fixture.transport().sent().size() == 1);
}

TEST_CASE("close waits for the sweep in flight, which finishes its batch", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store;
    store.add(order_record(fixture.bus, fixture.queue, "o-1", 2s));
    store.add(order_record(fixture.bus, fixture.queue, "o-2", 1s));
    fixture.transport().hold(true);
    OutboxRelay relay{fixture.bus, store, {.interval = 10ms}};
    relay.start();
    REQUIRE(fixture.transport().wait_entered(1, 5s));
    std::atomic<bool> released{false};
    auto closing = std::async(std::launch::async, [&] {
        relay.close();
        return released.load();
    });
    // Time for close to begin waiting; a close that does not wait returns in it.
    std::this_thread::sleep_for(50ms);
    released = true;
    fixture.transport().hold(false);
    REQUIRE(closing.wait_for(20s) == std::future_status::ready);
    CHECK(closing.get());       // close returned only after the publish in flight was let go
    CHECK(store.count() == 0);  // published and removed, not cut off in between
    CHECK(fixture.bus.transport().queue_depth(fixture.queue) == 2);
}

TEST_CASE("the relay's counts and lag: published per record, lag from created_at, never negative (40)", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store;
    store.add(order_record(fixture.bus, fixture.queue, "old", 1h));
    auto future = order_record(fixture.bus, fixture.queue, "future");
    future.created_at += 1h;
    store.add(future);
    auto events = std::make_shared<Events>();
    OutboxRelay relay{fixture.bus, store, {.observer = events}};
    CHECK(relay.sweep() == 2);
    const auto seen = events->seen();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].outcome == acemq::RelayOutcome::published);
    CHECK(seen[0].routing_key == fixture.queue);
    REQUIRE(seen[0].lag_seconds.has_value());
    CHECK(*seen[0].lag_seconds == Approx(3600.0).margin(5.0));
    REQUIRE(seen[1].lag_seconds.has_value());
    CHECK(*seen[1].lag_seconds == 0.0);
    CHECK(relay.published() == 2);
    CHECK(relay.failed() == 0);
}

TEST_CASE("the relay reports acemq.outbox.total and acemq.outbox.lag under the family's names", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store;
    store.add(order_record(fixture.bus, fixture.queue, "a", 1h));
    store.add(order_record(fixture.bus, fixture.queue, "b", 1h));
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    OutboxRelay relay{fixture.bus, store, {.observer = acemq::outbox_metrics(metrics)}};
    CHECK(relay.sweep() == 2);
    const acemq::Labels published{{"exchange", ""}, {"routing.key", fixture.queue}, {"outcome", "published"}};
    CHECK(metrics->counter("acemq.outbox.total", published) == 2);
    const auto lag = metrics->summary("acemq.outbox.lag", published);
    CHECK(lag.count == 2);
    CHECK(lag.min == Approx(3600.0).margin(5.0));
    CHECK_THAT(metrics->prometheus_text(),
               Catch::Contains("acemq_outbox_total{exchange=\"\",outcome=\"published\",routing_key=\"" + fixture.queue +
                               "\"} 2\n") &&
                   Catch::Contains("acemq_outbox_lag_count{exchange=\"\",outcome=\"published\",routing_key=\"" +
                                   fixture.queue + "\"} 2\n"));
    CHECK_THROWS_AS(acemq::outbox_metrics(nullptr), acemq::InvalidArgument);
}

TEST_CASE("a nacked poison record retires after max_attempts and stops blocking the rest (41, 43)", "[outbox]") {
    Fixture fixture;
    fixture.bus.declare(acemq::Topology{}.queue("orders.nacked"));
    InMemoryOutboxStore store{3};
    const auto poison = order_record(fixture.bus, "orders.nacked", "poison", 3s);
    store.add(poison);
    store.add(order_record(fixture.bus, fixture.queue, "good-1", 2s));
    store.add(order_record(fixture.bus, fixture.queue, "good-2", 1s));
    OutboxRelay relay{fixture.bus, store};
    for (int sweep = 0; sweep < 3; ++sweep) {
        try {
            relay.sweep();
            FAIL("a sweep over a nacked record returned normally");
        } catch (const acemq::PublishError& error) {
            CHECK(error.reason() == acemq::PublishError::Reason::refused);
            CHECK(error.message_id() == poison.id);
            CHECK_THAT(error.what(), Catch::Matchers::Contains("the broker refused to confirm it"));
        }
        CHECK(fixture.bus.transport().queue_depth(fixture.queue) == 0);  // nothing overtakes it
    }
    CHECK(relay.sweep() == 2);
    std::vector<std::string> order;
    for (const auto& message : fixture.drain()) order.push_back(order_id_of(message));
    CHECK(order == std::vector<std::string>{"good-1", "good-2"});
    const auto retired = store.retired();
    REQUIRE(retired.size() == 1);
    CHECK(retired[0].id == poison.id);
    CHECK(retired[0].attempts == 3);
    CHECK_THAT(retired[0].last_error, Catch::Matchers::Contains("the broker refused to confirm it"));
    CHECK(store.count() == 1);
    CHECK(relay.failed() == 3);
}

TEST_CASE("an unroutable record is an unroutable PublishError, counted, and retires with the reason (42)", "[outbox]") {
    Fixture fixture;
    InMemoryOutboxStore store{2};
    const auto lost = order_record(fixture.bus, "nobody.listens", "o-1");
    store.add(lost);
    OutboxRelay relay{fixture.bus, store};
    for (int sweep = 0; sweep < 2; ++sweep) {
        try {
            relay.sweep();
            FAIL("a sweep over an unroutable record returned normally");
        } catch (const acemq::PublishError& error) {
            CHECK(error.reason() == acemq::PublishError::Reason::unroutable);
            CHECK_THAT(error.what(), Catch::Matchers::Contains("reached no queue"));
        }
    }
    CHECK(fixture.transport().sent().at(0).mandatory);
    REQUIRE(store.retired().size() == 1);
    CHECK(store.retired().at(0).attempts == 2);
    CHECK_THAT(store.retired().at(0).last_error, Catch::Matchers::Contains("reached no queue"));
    CHECK(relay.sweep() == 0);
}

TEST_CASE("a confirmed record is removed, a nacked one kept (43)", "[outbox]") {
    Fixture fixture;
    fixture.bus.declare(acemq::Topology{}.queue("orders.nacked"));
    InMemoryOutboxStore store;
    store.add(order_record(fixture.bus, fixture.queue, "good", 2s));
    const auto nacked = order_record(fixture.bus, "orders.nacked", "bad", 1s);
    store.add(nacked);
    OutboxRelay relay{fixture.bus, store};
    CHECK_THROWS_AS(relay.sweep(), acemq::PublishError);
    CHECK(ids_of(store.pending(0)) == std::vector{nacked.id});
    CHECK(fixture.bus.transport().queue_depth(fixture.queue) == 1);
}
