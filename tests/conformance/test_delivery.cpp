// Routing, confirms, prefetch, concurrency, batches and a real retry ladder, through the
// Bus on whichever transport the suite runs against.
#include "conformance.hpp"

#include <algorithm>
#include <mutex>
#include <set>

using namespace conformance;
using acemq::Message;
using acemq::Outcome;

TEST_CASE("topic and fanout exchanges route as RabbitMQ does") {
    Fixture f;
    const std::string topic = f.name("orders"), fanout = f.name("audit");
    const std::string placed = f.name("placed"), europe = f.name("europe"), everything = f.name("all");
    const std::string audit_a = f.name("audit-a"), audit_b = f.name("audit-b");
    f.bus().declare(acemq::Topology{}
                        .exchange(topic, acemq::ExchangeKind::topic)
                        .exchange(fanout, acemq::ExchangeKind::fanout)
                        .queue(placed)
                        .queue(europe)
                        .queue(everything)
                        .queue(audit_a)
                        .queue(audit_b)
                        .bind(placed, topic, "order.placed")
                        .bind(europe, topic, "*.*.eu")
                        .bind(everything, topic, "order.#")
                        .bind(audit_a, fanout, "")
                        .bind(audit_b, fanout, "ignored"));
    auto to_topic = [&](const std::string& key) { f.bus().publisher(topic, key).send(Order{key, 1}); };
    to_topic("order.placed");
    to_topic("order.placed.eu");
    to_topic("order");
    to_topic("invoice.paid.eu");
    f.bus().publisher(fanout, "anything").send(Order{"audit", 1});

    CHECK(f.wait_depth(placed, 1));
    CHECK(f.wait_depth(europe, 2));
    CHECK(f.wait_depth(everything, 3));
    CHECK(f.wait_depth(audit_a, 1));
    CHECK(f.wait_depth(audit_b, 1));
}

TEST_CASE("a mandatory publish that reaches no queue is an error; without mandatory it is dropped") {
    Fixture f;
    const std::string exchange = f.name("events");
    f.bus().declare(acemq::Topology{}.exchange(exchange, acemq::ExchangeKind::direct));
    try {
        f.bus().publisher(exchange, "nobody.listens", {.mandatory = true}).send(Order{"o-1", 1});
        FAIL("an unroutable mandatory publish returned normally");
    } catch (const acemq::PublishError& error) {
        CHECK(error.reason() == acemq::PublishError::Reason::unroutable);
        CHECK_THAT(error.what(), Catch::Contains("reached no queue") && Catch::Contains("NO_ROUTE") &&
                                     Catch::Contains(error.message_id()));
    }
    const auto result = f.bus().publisher(exchange, "nobody.listens").send(Order{"o-2", 1});
    CHECK(result.confirmed);
}

TEST_CASE("send_all pipelines a batch; a failure names how many and the first") {
    Fixture f({.max_outstanding_publishes = 64});
    const std::string queue = f.source_queue("batch");
    std::vector<Order> orders;
    for (int i = 0; i < 300; ++i) orders.push_back(Order{"o-" + std::to_string(i), i});
    const auto results = f.bus().publisher_to_queue(queue).send_all(orders);
    CHECK(results.size() == 300);
    CHECK(std::all_of(results.begin(), results.end(), [](const auto& r) { return r.confirmed; }));
    std::set<std::string> ids;
    for (const auto& result : results) ids.insert(result.message_id);
    CHECK(ids.size() == 300);
    CHECK(f.wait_depth(queue, 300));
    // FIFO: the first one out is the first one in.
    auto first = f.pull(queue);
    REQUIRE(first.has_value());
    CHECK(acemq::decode<Order>(*acemq::default_codec(), first->message().body(), first->message().content_type()).id ==
          "o-0");
    first->ack();

    const std::string exchange = f.name("nowhere");
    f.bus().declare(acemq::Topology{}.exchange(exchange, acemq::ExchangeKind::direct));
    try {
        f.bus().publisher(exchange, "k", {.mandatory = true}).send_all(std::vector<Order>{{"a", 1}, {"b", 2}});
        FAIL("an unroutable batch returned normally");
    } catch (const acemq::BatchPublishError& error) {
        CHECK(error.total() == 2);
        CHECK(error.failed() == 2);
        CHECK(error.reason() == acemq::PublishError::Reason::unroutable);
        CHECK_THAT(error.what(),
                   Catch::StartsWith("2 of 2 messages were not confirmed; 0 were. The first failure was: "));
    }
}

TEST_CASE("prefetch bounds what one consumer holds; concurrency bounds what runs at once") {
    Fixture f;
    const std::string queue = f.source_queue("prefetch");
    Gate gate;
    std::atomic<int> running{0}, most{0};
    auto handler = [&](const Message<Order>&) {
        const int now = ++running;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {}
        gate.pass();
        --running;
        return acemq::accept();
    };
    for (int i = 0; i < 10; ++i) f.bus().publisher_to_queue(queue).send(Order{"o", i});
    auto consumer = f.bus().consume<Order>(queue, handler, {.prefetch = 2, .concurrency = 4});
    REQUIRE(gate.wait_waiting(2));
    CHECK(f.wait_depth(queue, 8));  // two handed out, eight still in the queue
    CHECK(gate.waiting() == 2);     // four workers, but only two deliveries to work on
    gate.open();
    REQUIRE(f.harness().wait_settled(queue, Outcome::acked, 10, 10s));
    CHECK(consumer.close());
    CHECK(most <= 2);

    Gate second_gate;
    std::atomic<int> started{0};
    for (int i = 0; i < 6; ++i) f.bus().publisher_to_queue(queue).send(Order{"p", i});
    auto wide = f.bus().consume<Order>(queue,
                                       [&](const Message<Order>&) {
                                           ++started;
                                           second_gate.pass();
                                           return acemq::accept();
                                       },
                                       {.prefetch = 10, .concurrency = 3});
    REQUIRE(second_gate.wait_waiting(3));
    CHECK(started == 3);  // three workers busy; the other deliveries wait their turn
    second_gate.open();
    REQUIRE(f.harness().wait_settled(queue, Outcome::acked, 16, 10s));
    CHECK(wide.close());
}

TEST_CASE("several consumers of one queue share its messages, each delivered once") {
    Fixture f;
    const std::string queue = f.source_queue("shared");
    std::mutex lock;
    std::vector<std::int64_t> handled;
    auto record = [&](const Message<Order>& message) {
        std::lock_guard guard(lock);
        handled.push_back(message.payload.cents);
        return acemq::accept();
    };
    auto first = f.bus().consume<Order>(queue, record, {.prefetch = 5, .concurrency = 2});
    auto second = f.bus().consume<Order>(queue, record, {.prefetch = 5, .concurrency = 2});
    std::vector<Order> orders;
    for (int i = 0; i < 200; ++i) orders.push_back(Order{"o", i});
    f.bus().publisher_to_queue(queue).send_all(orders);
    REQUIRE(f.harness().wait_settled(queue, Outcome::acked, 200, 10s));
    first.close();
    second.close();
    std::sort(handled.begin(), handled.end());
    REQUIRE(handled.size() == 200);
    for (int i = 0; i < 200; ++i) CHECK(handled[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("closing hands back deliveries that arrived but never started") {
    Fixture f;
    const std::string queue = f.source_queue("unstarted");
    Gate gate;
    std::atomic<int> started{0};
    for (int i = 0; i < 5; ++i) f.bus().publisher_to_queue(queue).send(Order{"o", i});
    auto consumer = f.bus().consume<Order>(queue,
                                           [&](const Message<Order>&) {
                                               ++started;
                                               gate.pass();
                                               return acemq::accept();
                                           },
                                           {.prefetch = 5, .concurrency = 1});
    REQUIRE(gate.wait_waiting(1));
    CHECK(f.wait_depth(queue, 0));  // all five handed to the consumer
    std::thread release([&] {
        std::this_thread::sleep_for(50ms);
        gate.open();
    });
    CHECK(consumer.close(5s));  // the running one finishes; the four others go back
    release.join();
    CHECK(started == 1);
    CHECK(f.wait_depth(queue, 4));
    auto back = f.pull(queue);
    REQUIRE(back.has_value());
    CHECK(back->message().redelivered());
    back->requeue();
}

TEST_CASE("a retry ladder whose waits pass through real rung queues") {
    Fixture f;
    const std::string queue = f.source_queue("ladder");
    // Every wait of a second or more rides a rung; the broker's TTL brings it home.
    const acemq::RetryPolicy policy = acemq::fixed_retry(3, 1s).wait_in_broker_from(1s);
    std::mutex lock;
    std::vector<acemq::Envelope> attempts;
    std::vector<bool> came_through_rung;
    auto consumer =
        f.bus().consume<Order>(queue,
                               [&](const Message<Order>& message) -> acemq::Ack {
                                   std::lock_guard guard(lock);
                                   attempts.push_back(message.envelope);
                                   came_through_rung.push_back(message.envelope.headers.contains("x-death"));
                                   throw std::runtime_error("the warehouse is not answering");
                               },
                               {.retry = policy});
    CHECK(f.transport().queue_exists(acemq::rung_queue(queue, 1s)));
    const auto sent = f.bus().publisher_to_queue(queue).send(Order{"o-ladder", 1});
    REQUIRE(f.harness().wait_dead_lettered(queue, 1, 15s));
    consumer.close();
    std::lock_guard guard(lock);
    REQUIRE(attempts.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(attempts[i].attempt == static_cast<std::int32_t>(i + 1));
        CHECK(attempts[i].id == sent.message_id);
    }
    CHECK_FALSE(came_through_rung[0]);
    CHECK(came_through_rung[1]);
    CHECK(came_through_rung[2]);
    auto copy = f.pull(acemq::dead_letter_queue(queue));
    REQUIRE(copy.has_value());
    CHECK(envelope_of(*copy).error == "exhausted 3 attempts: std::runtime_error: the warehouse is not answering");
    copy->ack();
}

TEST_CASE("interceptors: publish ones run first-registered outermost and may refuse; consume ones see the envelope") {
    std::mutex lock;
    std::vector<std::string> trace;
    auto note = [&](std::string step) {
        std::lock_guard guard(lock);
        trace.push_back(std::move(step));
    };
    acemq::BusOptions options;
    options.publish_interceptors.push_back([&](acemq::PublishContext& context, const acemq::PublishNext& next) {
        note("outer in");
        if (context.envelope.headers.contains("x-refuse")) throw std::runtime_error("refused by policy");
        acemq::set_header(context.envelope, "x-stamped", "yes");
        next(context);
        note("outer out");
    });
    options.publish_interceptors.push_back([&](acemq::PublishContext& context, const acemq::PublishNext& next) {
        note("inner in");
        next(context);
        note("inner out");
    });
    options.consume_interceptors.push_back([&](acemq::ConsumeContext& context, const acemq::ConsumeNext& next) {
        context.envelope.headers["x-seen-by"] = acemq::FieldValue("interceptor");
        return next(context);
    });
    Fixture f(options);
    const std::string queue = f.source_queue("intercepted");
    std::vector<acemq::Envelope> seen;
    auto consumer = f.bus().consume<Order>(queue, [&](const Message<Order>& message) {
        std::lock_guard guard(lock);
        seen.push_back(message.envelope);
        return acemq::accept();
    });
    f.bus().publisher_to_queue(queue).send(Order{"o", 1});
    CHECK_THROWS_WITH(
        f.bus().publisher_to_queue(queue).send(Order{"o", 2}, {.headers = {{"x-refuse", acemq::FieldValue("1")}}}),
        "refused by policy");
    REQUIRE(f.harness().wait_consumed(queue, 1, 5s));
    consumer.close();
    std::lock_guard guard(lock);
    CHECK(trace == std::vector<std::string>{"outer in", "inner in", "inner out", "outer out", "outer in"});
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].headers.at("x-stamped").as_text() == "yes");
    CHECK(seen[0].headers.at("x-seen-by").as_text() == "interceptor");
    CHECK(f.transport().queue_depth(queue) == 0);
}

TEST_CASE("health: up while the transport answers, creating nothing; down once the bus is closed") {
    Fixture f;
    const std::string queue = f.source_queue("health");
    const acemq::Health health = f.bus().health(3s);
    CHECK(health.status == acemq::Health::Status::up);
    CHECK_FALSE(health.blocked);
    CHECK(f.transport().queue_exists(queue));
    const std::string json = acemq::to_json(health, std::chrono::system_clock::time_point{});
    CHECK(json.starts_with("{\"status\":\"up\",\"checked\":\"1970-01-01T00:00:00Z\",\"parts\":{\"blocked\":false"));
    f.bus().close();
    const acemq::Health after = f.bus().health(3s);
    CHECK(after.status == acemq::Health::Status::down);
    CHECK(after.detail == "the bus is closed");
}

TEST_CASE("a consumer on the default codec reads JSON, msgpack and text by content type") {
    Fixture f;
    const std::string orders = f.source_queue("any-format"), notes = f.source_queue("notes");
    std::mutex lock;
    std::vector<std::pair<std::string, Order>> seen_orders;
    std::vector<std::string> seen_notes;
    auto order_consumer = f.bus().consume<Order>(orders, [&](const Message<Order>& message) {
        std::lock_guard guard(lock);
        seen_orders.emplace_back(message.content_type, message.payload);
        return acemq::accept();
    });
    auto note_consumer = f.bus().consume<std::string>(notes, [&](const Message<std::string>& message) {
        std::lock_guard guard(lock);
        seen_notes.push_back(message.payload);
        return acemq::accept();
    });
    f.bus().publisher_to_queue(orders).send(Order{"o-json", 1});
    f.bus().publisher_to_queue(orders, {.codec = std::make_shared<acemq::MsgpackCodec>()}).send(Order{"o-msgpack", 2});
    f.bus().publisher_to_queue(notes, {.codec = std::make_shared<acemq::TextCodec>()}).send(std::string("hello"));
    REQUIRE(f.harness().wait_settled(orders, Outcome::acked, 2, 5s));
    REQUIRE(f.harness().wait_settled(notes, Outcome::acked, 1, 5s));
    order_consumer.close();
    note_consumer.close();
    std::lock_guard guard(lock);
    std::sort(seen_orders.begin(), seen_orders.end(),
              [](const auto& a, const auto& b) { return a.second.id < b.second.id; });
    REQUIRE(seen_orders.size() == 2);
    CHECK(seen_orders[0].first == "application/json");
    CHECK(seen_orders[0].second.id == "o-json");
    CHECK(seen_orders[0].second.cents == 1);
    CHECK(seen_orders[1].first == "application/msgpack");
    CHECK(seen_orders[1].second.id == "o-msgpack");
    CHECK(seen_orders[1].second.cents == 2);
    CHECK(seen_notes == std::vector<std::string>{"hello"});
}
