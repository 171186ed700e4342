// The embedded broker's routing and queue semantics, each pinned to what RabbitMQ does.
// Deliveries are synchronous here (the DeliverFn runs inside publish/ack), so every check
// runs right after the call that made it true: no waiting.
#include <catch2/catch.hpp>

#include <thread>

#include <acemq/error.hpp>
#include "inbox.hpp"

using namespace acemq;
using namespace inproc_test;

namespace {

// Catch2 v2's Message matcher wants the whole text; this one wants a part of it.
class MessageContains : public Catch::MatcherBase<std::exception> {
public:
    explicit MessageContains(std::string part) : part_(std::move(part)) {}
    bool match(const std::exception& error) const override {
        return std::string(error.what()).find(part_) != std::string::npos;
    }
    std::string describe() const override { return "has a message containing \"" + part_ + "\""; }

private:
    std::string part_;
};

std::shared_ptr<Transport> connect(const std::string& name) { return open_transport("inproc://" + name); }

std::vector<std::string> bodies_of(Inbox& inbox) {
    std::vector<std::string> out;
    while (auto delivery = inbox.take()) out.push_back(text(delivery->message().body()));
    return out;
}

}  // namespace

TEST_CASE("topic patterns match keys word by word, as RabbitMQ does", "[inproc][topic]") {
    struct Case {
        std::string pattern;
        std::string key;
        bool matches;
    };
    const std::vector<Case> cases = {
        {"#", "", true},
        {"#", "a", true},
        {"#", "a.b.c", true},
        {"*", "", false},
        {"*", "a", true},
        {"*", "a.b", false},
        {"a.#", "a", true},
        {"a.#", "a.b", true},
        {"a.#", "a.b.c", true},
        {"a.#", "b.a", false},
        {"#.a", "a", true},
        {"#.a", "x.y.a", true},
        {"#.a", "a.x", false},
        {"*.b", "b", false},
        {"*.b", "a.b", true},
        {"*.b", "a.a.b", false},
        {"a.*.c", "a.b.c", true},
        {"a.*.c", "a.c", false},
        {"a.*.c", "a.b.b.c", false},
        {"a.#.c", "a.c", true},
        {"a.#.c", "a.b.b.c", true},
        {"a.#.c", "a.b.b.d", false},
        {"#.#", "", true},
        {"#.#", "a.b", true},
        {"", "", true},
        {"", "a", false},
        {"a", "", false},
        {"a.b", "a.b", true},
        {"a.b", "a.bb", false},
        {"orders.#", "orders", true},
        {"orders.*", "orders", false},
        {"*.*", "a.", true},  // "a." has two words, the second empty
        {"a.*", "a.", true},
        {"#.b.#", "b", true},
        {"#.b.#", "a.b.c", true},
        {"#.b.#", "a.c", false},
        {"*.#", "", false},
        {"*.#", "a", true},
    };
    const std::string name = unique_name("topic");
    auto transport = connect(name);
    Topology topology;
    topology.exchange("t", ExchangeKind::topic);
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const std::string queue = "q" + std::to_string(i);
        topology.queue(queue, classic());
        topology.bind(queue, "t", cases[i].pattern);
    }
    transport->declare(topology);
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const std::string queue = "q" + std::to_string(i);
        const auto before = transport->queue_depth(queue);
        transport->publish(message("t", cases[i].key));
        INFO("pattern \"" << cases[i].pattern << "\" key \"" << cases[i].key << "\"");
        CHECK(transport->queue_depth(queue) - before == (cases[i].matches ? 1u : 0u));
        while (auto pulled = transport->pull(queue)) pulled->ack();  // keep the next case's count clean
    }
}

TEST_CASE("a queue bound by several matching patterns gets one copy", "[inproc][topic]") {
    auto transport = connect(unique_name("topic-once"));
    transport->declare(Topology{}
                           .exchange("t", ExchangeKind::topic)
                           .queue("q", classic())
                           .bind("q", "t", "a.*")
                           .bind("q", "t", "#")
                           .bind("q", "t", "a.b"));
    transport->publish(message("t", "a.b"));
    CHECK(transport->queue_depth("q") == 1);
}

TEST_CASE("direct, fanout and the default exchange route as RabbitMQ does", "[inproc][routing]") {
    auto transport = connect(unique_name("routing"));
    transport->declare(Topology{}
                           .exchange("d", ExchangeKind::direct)
                           .exchange("f", ExchangeKind::fanout)
                           .queue("one", classic())
                           .queue("two", classic())
                           .bind("one", "d", "k1")
                           .bind("two", "d", "k2")
                           .bind("two", "d", "k1")
                           .bind("one", "f", "ignored")
                           .bind("two", "f", ""));

    transport->publish(message("d", "k1"));
    CHECK(transport->queue_depth("one") == 1);
    CHECK(transport->queue_depth("two") == 1);
    transport->publish(message("d", "k2"));
    CHECK(transport->queue_depth("one") == 1);
    CHECK(transport->queue_depth("two") == 2);
    transport->publish(message("f", "anything"));
    CHECK(transport->queue_depth("one") == 2);
    CHECK(transport->queue_depth("two") == 3);
    transport->publish(message("", "one"));
    CHECK(transport->queue_depth("one") == 3);
    CHECK(transport->queue_depth("two") == 3);

    auto delivery = transport->pull("one");
    REQUIRE(delivery);
    CHECK(delivery->message().exchange() == "d");
    CHECK(delivery->message().routing_key() == "k1");
    CHECK_FALSE(delivery->message().redelivered());
    delivery->ack();
}

TEST_CASE("a delivery carries what was published", "[inproc][routing]") {
    auto transport = connect(unique_name("fields"));
    transport->declare(Topology{}.queue("q", classic()));
    OutboundMessage out = message("", "q", "hello");
    out.content_type = "text/plain";
    out.message_id = "id-1";
    out.reply_to = "replies";
    out.headers = Headers{{"h", FieldValue(std::int32_t{7})}};
    transport->publish(std::move(out));
    auto in = transport->pull("q");
    REQUIRE(in);
    CHECK(text(in->message().body()) == "hello");
    CHECK(in->message().content_type() == "text/plain");
    CHECK(in->message().message_id() == "id-1");
    CHECK(in->message().reply_to() == "replies");
    CHECK(in->message().headers() == Headers{{"h", FieldValue(std::int32_t{7})}});
    CHECK(in->message().exchange().empty());
    CHECK(in->message().routing_key() == "q");
    in->ack();
}

TEST_CASE("mandatory to nowhere is returned; otherwise it is dropped and confirmed", "[inproc][routing]") {
    auto transport = connect(unique_name("mandatory"));
    transport->declare(Topology{}.exchange("d", ExchangeKind::direct));

    const PublishResult returned = transport->publish(message("d", "nobody", "m", true));
    CHECK(returned.confirmed);
    CHECK_FALSE(returned.routed);
    CHECK(returned.return_reason == "312 NO_ROUTE");

    const PublishResult to_missing_queue = transport->publish(message("", "no-such-queue", "m", true));
    CHECK_FALSE(to_missing_queue.routed);
    CHECK(to_missing_queue.return_reason == "312 NO_ROUTE");

    const PublishResult dropped = transport->publish(message("d", "nobody"));
    CHECK(dropped.confirmed);
    CHECK(dropped.routed);
    CHECK(dropped.return_reason.empty());
}

TEST_CASE("publishing to an exchange that does not exist is refused with RabbitMQ's 404", "[inproc][routing]") {
    auto transport = connect(unique_name("no-exchange"));
    const PublishResult refused = transport->publish(message("ghost", "k"));
    CHECK_FALSE(refused.confirmed);
    CHECK(refused.why == PublishResult::Unconfirmed::refused);
    CHECK_THAT(refused.return_reason, Catch::StartsWith("404 NOT_FOUND - no exchange 'ghost'"));
    // The connection goes on, as RabbitMQ's does once the channel is reopened.
    transport->declare(Topology{}.queue("q", classic()));
    CHECK(transport->publish(message("", "q")).confirmed);
}

TEST_CASE("publish_batch answers for each message in order", "[inproc][routing]") {
    auto transport = connect(unique_name("batch"));
    transport->declare(Topology{}.queue("q", classic()));
    std::vector<OutboundMessage> batch;
    batch.push_back(message("", "q", "a", true));
    batch.push_back(message("", "nowhere", "b", true));
    const auto results = transport->publish_batch(std::move(batch));
    REQUIRE(results.size() == 2);
    CHECK(results[0].routed);
    CHECK_FALSE(results[1].routed);
}

TEST_CASE("a message whose short texts a delivery cannot hold is refused, and a batch goes on", "[inproc][routing]") {
    auto transport = connect(unique_name("too-long"));
    transport->declare(Topology{}.exchange("f", ExchangeKind::fanout).queue("q", classic()).bind("q", "f", ""));
    // 65,536 bytes of short texts in all: one past what a message holds.
    OutboundMessage to_queue = message("", "q", "a");
    to_queue.reply_to.assign(65536 - to_queue.routing_key.size() - to_queue.message_id.size(), 'r');
    OutboundMessage through_exchange = message("f", "any", "b");
    through_exchange.content_type.assign(65536 - through_exchange.exchange.size() -
                                             through_exchange.routing_key.size() - through_exchange.message_id.size(),
                                         'c');
    for (OutboundMessage* refused_one : {&to_queue, &through_exchange}) {
        const PublishResult refused = transport->publish(*refused_one);
        CHECK_FALSE(refused.confirmed);
        CHECK(refused.why == PublishResult::Unconfirmed::refused);
        CHECK_THAT(refused.return_reason, Catch::Contains("come to 65536 bytes; at most 65535 in all"));
    }
    std::vector<OutboundMessage> batch;
    batch.push_back(message("", "q", "before"));
    batch.push_back(std::move(to_queue));
    batch.push_back(message("f", "", "after"));
    const auto results = transport->publish_batch(std::move(batch));
    REQUIRE(results.size() == 3);
    CHECK(results[0].confirmed);
    CHECK_FALSE(results[1].confirmed);
    CHECK(results[2].confirmed);
    const std::optional<Delivery> first = transport->pull("q");
    const std::optional<Delivery> second = transport->pull("q");
    REQUIRE(first);
    REQUIRE(second);
    CHECK(text(first->message().body()) == "before");
    CHECK(text(second->message().body()) == "after");
    CHECK_FALSE(transport->pull("q"));
}

TEST_CASE("a batch longer than one hold of the lock keeps its order and each answer, a consumer settling meanwhile",
          "[inproc][routing][threads]") {
    auto transport = connect(unique_name("long-batch"));
    transport->declare(Topology{}.queue("q", classic()));
    Inbox inbox;
    auto subscription = transport->consume("q", with_prefetch(5), inbox.deliver());
    std::vector<std::string> received;
    std::thread settling([&] {
        while (received.size() < 171) {  // 200 sent, every 7th (29) to nowhere
            std::optional<Delivery> delivery = inbox.take(std::chrono::seconds(10));
            if (!delivery) break;
            received.push_back(std::string(delivery->message().message_id()));
            delivery->ack();
        }
    });
    std::vector<OutboundMessage> batch;
    for (int i = 0; i < 200; ++i) batch.push_back(message("", i % 7 == 0 ? "nowhere" : "q", std::to_string(i), true));
    const auto results = transport->publish_batch(std::move(batch));
    settling.join();
    REQUIRE(results.size() == 200);
    std::vector<std::string> expected;
    for (int i = 0; i < 200; ++i) {
        CHECK(results[i].confirmed);
        CHECK(results[i].routed == (i % 7 != 0));
        if (i % 7 != 0) expected.push_back(std::to_string(i));
    }
    CHECK(received == expected);
}

TEST_CASE("redeclaring with other settings fails with PRECONDITION_FAILED naming each difference",
          "[inproc][topology]") {
    auto transport = connect(unique_name("redeclare"));
    transport->declare(Topology{}
                           .exchange("x", ExchangeKind::topic)
                           .queue("orders", classic({{"x-message-ttl", FieldValue(std::int64_t{60000})}})));

    SECTION("an identical redeclaration is fine, 32- and 64-bit integers alike") {
        CHECK_NOTHROW(
            transport->declare(Topology{}
                                   .exchange("x", ExchangeKind::topic)
                                   .queue("orders", classic({{"x-message-ttl", FieldValue(std::int32_t{60000})}}))));
    }
    SECTION("an argument differs") {
        CHECK_THROWS_MATCHES(
            transport->declare(Topology{}.queue("orders", classic({{"x-message-ttl", FieldValue(std::int64_t{30000})},
                                                                   {"x-max-length", FieldValue(std::int64_t{5})}}))),
            TopologyError,
            Catch::Message("acemq: cannot declare queue \"orders\": PRECONDITION_FAILED - x-max-length: existing "
                           "(absent), asked 5; x-message-ttl: existing 60000, asked 30000; it exists with other "
                           "settings: declare it as it is, or delete it first"));
    }
    SECTION("a flag differs") {
        QueueOptions transient = classic({{"x-message-ttl", FieldValue(std::int64_t{60000})}});
        transient.durable = false;
        CHECK_THROWS_WITH(transport->declare(Topology{}.queue("orders", transient)),
                          Catch::Contains("PRECONDITION_FAILED - durable: existing true, asked false"));
    }
    SECTION("the queue type differs") {
        CHECK_THROWS_WITH(transport->declare(Topology{}.queue("orders", {})),
                          Catch::Contains("x-queue-type: existing (absent), asked quorum"));
    }
    SECTION("an exchange's kind differs") {
        CHECK_THROWS_MATCHES(transport->declare(Topology{}.exchange("x", ExchangeKind::direct)), TopologyError,
                             MessageContains("cannot declare exchange \"x\": PRECONDITION_FAILED - type: existing "
                                             "topic, asked direct"));
    }
}

TEST_CASE("declarations the broker refuses", "[inproc][topology]") {
    auto b = inproc::broker(unique_name("refusals"));
    const auto connection = b->open_connection();
    CHECK_THROWS_MATCHES(b->declare_exchange({"h", ExchangeKind::headers, true, false, {}}), TopologyError,
                         MessageContains("does not route headers exchanges"));
    b->declare_queue(connection, {"q", QueueType::classic, true, false, false, {}});
    CHECK_THROWS_MATCHES(b->bind(connection, {"q", "", "q", {}}), TopologyError,
                         MessageContains("default exchange cannot be bound"));
    CHECK_THROWS_MATCHES(b->bind(connection, {"q", "missing", "k", {}}), TopologyError,
                         MessageContains("NOT_FOUND - no exchange \"missing\""));
    b->declare_exchange({"d", ExchangeKind::direct, true, false, {}});
    CHECK_THROWS_MATCHES(b->bind(connection, {"missing", "d", "k", {}}), TopologyError,
                         MessageContains("NOT_FOUND - no queue \"missing\""));
    CHECK_THROWS_MATCHES(
        b->declare_queue(connection,
                         {"bad", QueueType::classic, true, false, false, {{"x-message-ttl", FieldValue("5m")}}}),
        TopologyError, MessageContains("invalid x-message-ttl 5m"));
    CHECK_THROWS_MATCHES(
        b->declare_queue(
            connection,
            {"bad", QueueType::classic, true, false, false, {{"x-dead-letter-routing-key", FieldValue("k")}}}),
        TopologyError, MessageContains("together with x-dead-letter-exchange"));
    CHECK_FALSE(b->queue_exists(connection, "bad"));
    b->close_connection(connection);
}

TEST_CASE("consuming or pulling from a queue that does not exist is an error", "[inproc][consume]") {
    auto transport = connect(unique_name("no-queue"));
    Inbox inbox;
    CHECK_THROWS_WITH(transport->consume("ghost", {}, inbox.deliver()), Catch::Contains("NOT_FOUND"));
    CHECK_THROWS_WITH(transport->pull("ghost"), Catch::Contains("NOT_FOUND"));
    CHECK_THROWS_WITH(transport->queue_depth("ghost"), Catch::Contains("NOT_FOUND"));
    CHECK_FALSE(transport->queue_exists("ghost"));
}

TEST_CASE("a consumer gets at most its prefetch unacked", "[inproc][consume]") {
    auto transport = connect(unique_name("prefetch"));
    transport->declare(Topology{}.queue("q", classic()));
    for (int i = 0; i < 5; ++i) transport->publish(message("", "q", std::to_string(i)));
    Inbox inbox;
    auto subscription = transport->consume("q", with_prefetch(2), inbox.deliver());
    CHECK(inbox.size() == 2);
    CHECK(transport->queue_depth("q") == 3);

    auto first = inbox.take();
    REQUIRE(first);
    CHECK(text(first->message().body()) == "0");
    first->ack();
    CHECK(inbox.size() == 2);  // "1" still held, "2" just came
    CHECK(transport->queue_depth("q") == 2);

    transport->publish(message("", "q", "5"));
    CHECK(inbox.size() == 2);  // full: the new one waits in the queue
    CHECK(transport->queue_depth("q") == 3);
    subscription->close();
}

TEST_CASE("prefetch 0 means no limit", "[inproc][consume]") {
    auto transport = connect(unique_name("unlimited"));
    transport->declare(Topology{}.queue("q", classic()));
    for (int i = 0; i < 100; ++i) transport->publish(message("", "q"));
    Inbox inbox;
    auto subscription = transport->consume("q", with_prefetch(0), inbox.deliver());
    CHECK(inbox.size() == 100);
    CHECK(transport->queue_depth("q") == 0);
}

TEST_CASE("consumers of one queue take turns", "[inproc][consume]") {
    auto transport = connect(unique_name("round-robin"));
    transport->declare(Topology{}.queue("q", classic()));
    Inbox a, b, c;
    auto sa = transport->consume("q", with_prefetch(0), a.deliver());
    auto sb = transport->consume("q", with_prefetch(0), b.deliver());
    auto sc = transport->consume("q", with_prefetch(0), c.deliver());
    for (int i = 0; i < 9; ++i) transport->publish(message("", "q", std::to_string(i)));
    CHECK(bodies_of(a) == std::vector<std::string>{"0", "3", "6"});
    CHECK(bodies_of(b) == std::vector<std::string>{"1", "4", "7"});
    CHECK(bodies_of(c) == std::vector<std::string>{"2", "5", "8"});
}

TEST_CASE("a full consumer is skipped, not waited for", "[inproc][consume]") {
    auto transport = connect(unique_name("skip-full"));
    transport->declare(Topology{}.queue("q", classic()));
    Inbox a, b;
    auto sa = transport->consume("q", with_prefetch(1), a.deliver());
    auto sb = transport->consume("q", with_prefetch(0), b.deliver());
    for (int i = 0; i < 4; ++i) transport->publish(message("", "q", std::to_string(i)));
    CHECK(bodies_of(a) == std::vector<std::string>{"0"});
    CHECK(bodies_of(b) == std::vector<std::string>{"1", "2", "3"});
}

TEST_CASE("nack with requeue puts the message back at the head, redelivered", "[inproc][settle]") {
    auto transport = connect(unique_name("requeue"));
    transport->declare(Topology{}.queue("q", classic()));
    for (const char* body : {"a", "b", "c"}) transport->publish(message("", "q", body));

    auto a = transport->pull("q");
    REQUIRE(a);
    CHECK_FALSE(a->message().redelivered());
    a->requeue();
    CHECK(transport->queue_depth("q") == 3);

    auto again = transport->pull("q");
    REQUIRE(again);
    CHECK(text(again->message().body()) == "a");
    CHECK(again->message().redelivered());
    again->ack();

    Inbox inbox;
    auto subscription = transport->consume("q", with_prefetch(1), inbox.deliver());
    auto b = inbox.take();
    REQUIRE(b);
    CHECK(text(b->message().body()) == "b");
    b->requeue();  // back at the head, and straight out again to the only consumer
    auto b_again = inbox.take();
    REQUIRE(b_again);
    CHECK(text(b_again->message().body()) == "b");
    CHECK(b_again->message().redelivered());
    b_again->ack();
    auto c = inbox.take();
    REQUIRE(c);
    CHECK(text(c->message().body()) == "c");
    c->ack();
}

TEST_CASE("nack without requeue and without a dead-letter exchange drops the message", "[inproc][settle]") {
    auto transport = connect(unique_name("drop"));
    transport->declare(Topology{}.queue("q", classic()));
    transport->publish(message("", "q"));
    auto delivery = transport->pull("q");
    REQUIRE(delivery);
    delivery->reject();
    CHECK(transport->queue_depth("q") == 0);
    CHECK_FALSE(transport->pull("q"));
}

TEST_CASE("settling twice is refused by the Delivery; a closed subscription's tags are unknown", "[inproc][settle]") {
    auto transport = connect(unique_name("double-settle"));
    transport->declare(Topology{}.queue("q", classic()));
    transport->publish(message("", "q"));
    Inbox inbox;
    auto subscription = transport->consume("q", {}, inbox.deliver());
    auto delivery = inbox.take();
    REQUIRE(delivery);
    subscription->close();
    CHECK(transport->queue_depth("q") == 1);
    CHECK_THROWS_WITH(delivery->ack(), Catch::Contains("unknown delivery tag"));
    CHECK_THROWS_WITH(delivery->ack(), Catch::Contains("already settled"));
}

TEST_CASE("a closing subscription hands its unacked deliveries back in order", "[inproc][consume]") {
    auto transport = connect(unique_name("hand-back"));
    transport->declare(Topology{}.queue("q", classic()));
    for (const char* body : {"a", "b", "c", "d", "e"}) transport->publish(message("", "q", body));
    Inbox inbox;
    auto subscription = transport->consume("q", with_prefetch(3), inbox.deliver());
    auto a = inbox.take();
    REQUIRE(a);
    a->ack();  // "d" arrives; "b", "c", "d" stay unacked
    REQUIRE(inbox.size() == 3);
    subscription->close();
    subscription->close();  // idempotent
    CHECK(transport->queue_depth("q") == 4);

    std::vector<std::pair<std::string, bool>> seen;
    while (auto next = transport->pull("q")) {
        seen.emplace_back(text(next->message().body()), next->message().redelivered());
        next->ack();
    }
    CHECK(seen == std::vector<std::pair<std::string, bool>>{{"b", true}, {"c", true}, {"d", true}, {"e", false}});
}

TEST_CASE("stop ends new deliveries; handed-out ones can still be settled", "[inproc][consume]") {
    auto transport = connect(unique_name("stop"));
    transport->declare(Topology{}.queue("q", classic()));
    Inbox inbox;
    auto subscription = transport->consume("q", with_prefetch(1), inbox.deliver());
    transport->publish(message("", "q", "a"));
    transport->publish(message("", "q", "b"));
    subscription->stop();
    auto a = inbox.take();
    REQUIRE(a);
    a->ack();  // frees prefetch, but the subscription is stopped
    CHECK(inbox.size() == 0);
    transport->publish(message("", "q", "c"));
    CHECK(inbox.size() == 0);
    CHECK(transport->queue_depth("q") == 2);
    subscription->close();
}

TEST_CASE("pull takes the head unsettled; ack and nack work as for deliveries", "[inproc][pull]") {
    auto transport = connect(unique_name("pull"));
    transport->declare(Topology{}.queue("q", classic()));
    CHECK_FALSE(transport->pull("q"));
    transport->publish(message("", "q", "a"));
    transport->publish(message("", "q", "b"));
    auto a = transport->pull("q");
    auto b = transport->pull("q");  // pulls count against no prefetch
    REQUIRE(a);
    REQUIRE(b);
    CHECK(transport->queue_depth("q") == 0);
    b->requeue();
    CHECK(transport->queue_depth("q") == 1);
    a->ack();
    CHECK(transport->queue_depth("q") == 1);
}

TEST_CASE("a closing transport returns what it pulled and did not settle", "[inproc][pull]") {
    const std::string name = unique_name("pull-close");
    auto keeper = connect(name);
    keeper->declare(Topology{}.queue("q", classic()));
    keeper->publish(message("", "q", "a"));
    auto puller = connect(name);
    auto pulled = puller->pull("q");
    REQUIRE(pulled);
    CHECK(keeper->queue_depth("q") == 0);
    puller->close();
    puller->close();  // idempotent
    CHECK(keeper->queue_depth("q") == 1);
    CHECK_THROWS_WITH(puller->pull("q"), Catch::Contains("closed"));
    // A publish is answered, not thrown, as on RabbitMQ: certainly not sent.
    const PublishResult after_close = puller->publish(message("", "q"));
    CHECK_FALSE(after_close.confirmed);
    CHECK(after_close.why == PublishResult::Unconfirmed::unsent);
    CHECK_THAT(after_close.return_reason, Catch::Contains("closed"));
    CHECK(keeper->queue_depth("q") == 1);
}

TEST_CASE("delete_queue drops messages, cancels consumers and is idempotent", "[inproc][admin]") {
    auto transport = connect(unique_name("delete"));
    transport->declare(Topology{}.exchange("d", ExchangeKind::direct).queue("q", classic()).bind("q", "d", "k"));
    transport->publish(message("", "q", "a"));
    transport->publish(message("", "q", "b"));
    Inbox inbox;
    auto subscription = transport->consume("q", with_prefetch(1), inbox.deliver());
    auto a = inbox.take();
    REQUIRE(a);

    transport->delete_queue("q");
    CHECK_FALSE(transport->queue_exists("q"));
    CHECK_NOTHROW(transport->delete_queue("q"));
    CHECK_NOTHROW(a->requeue());                                              // settles, and goes nowhere
    CHECK(transport->publish(message("d", "k", "c", true)).routed == false);  // its binding went with it

    transport->declare(Topology{}.queue("q", classic()));
    transport->publish(message("", "q", "fresh"));
    CHECK(inbox.size() == 0);  // the old subscription was cancelled
    CHECK(transport->queue_depth("q") == 1);
    subscription->close();
    CHECK(transport->queue_depth("q") == 1);
}

TEST_CASE("an exclusive queue belongs to the connection that declared it", "[inproc][exclusive]") {
    const std::string name = unique_name("exclusive");
    auto owner = connect(name);
    auto other = connect(name);
    owner->declare(Topology{}.queue("mine", {.exclusive = true}));
    Inbox inbox;
    CHECK_THROWS_WITH(other->consume("mine", {}, inbox.deliver()), Catch::Contains("RESOURCE_LOCKED"));
    CHECK_THROWS_WITH(other->pull("mine"), Catch::Contains("RESOURCE_LOCKED"));
    CHECK_THROWS_WITH(other->declare(Topology{}.queue("mine", {.exclusive = true})),
                      Catch::Contains("RESOURCE_LOCKED"));
    CHECK_THROWS_WITH(other->delete_queue("mine"), Catch::Contains("RESOURCE_LOCKED"));
    CHECK(other->publish(message("", "mine", "to it", true)).routed);  // publishing to it is allowed
    CHECK(owner->queue_depth("mine") == 1);

    owner->close();
    CHECK_FALSE(other->queue_exists("mine"));
}

TEST_CASE("an auto-delete queue goes when its last consumer does, not before it had one", "[inproc][auto-delete]") {
    auto transport = connect(unique_name("auto-delete"));
    transport->declare(Topology{}.queue("q", {.auto_delete = true}));
    transport->publish(message("", "q"));
    CHECK(transport->queue_exists("q"));
    Inbox a, b;
    auto first = transport->consume("q", {}, a.deliver());
    auto second = transport->consume("q", {}, b.deliver());
    first->close();
    CHECK(transport->queue_exists("q"));
    second->close();
    CHECK_FALSE(transport->queue_exists("q"));
}

TEST_CASE("inproc://NAME in two places is one broker, and a fresh one after all let go", "[inproc][instances]") {
    const std::string name = unique_name("shared");
    {
        auto one = connect(name);
        auto two = connect(name);
        one->declare(Topology{}.queue("q", classic()));
        two->publish(message("", "q"));
        CHECK(one->queue_depth("q") == 1);
        CHECK(inproc::broker(name) == std::dynamic_pointer_cast<inproc::InprocTransport>(one)->broker());
        CHECK_FALSE(connect(unique_name("other"))->queue_exists("q"));
    }
    auto later = connect(name);
    CHECK_FALSE(later->queue_exists("q"));
}

TEST_CASE("a broker made with a clock is the one open_transport finds; another clock is refused",
          "[inproc][instances]") {
    const std::string name = unique_name("clocked");
    auto clock = std::make_shared<ManualClock>();
    auto made = inproc::broker(name, clock);
    auto transport = std::dynamic_pointer_cast<inproc::InprocTransport>(connect(name));
    REQUIRE(transport);
    CHECK(transport->broker() == made);
    CHECK(made->clock() == clock);
    CHECK(inproc::broker(name, clock) == made);
    CHECK_THROWS_AS(inproc::broker(name, std::make_shared<ManualClock>()), InvalidArgument);
}

TEST_CASE("inproc::open opens the broker its URL names, in the shape every transport opens with",
          "[inproc][instances]") {
    const std::string name = unique_name("opened");
    std::shared_ptr<Transport> opened = inproc::open("inproc://" + name, {.acks_wait = false});
    auto other = connect(name);
    opened->declare(Topology{}.queue("q", classic()));
    other->publish(message("", "q"));
    CHECK(opened->queue_depth("q") == 1);
    CHECK(std::dynamic_pointer_cast<inproc::InprocTransport>(opened)->broker() == inproc::broker(name));
    CHECK_THROWS_WITH(inproc::open("zmq+ipc:///run/" + name), Catch::Contains("write inproc://NAME"));
}

TEST_CASE("inproc URLs need a name", "[inproc][instances]") {
    CHECK_THROWS_AS(open_transport("inproc://"), InvalidArgument);
}

TEST_CASE("a DeliverFn that calls back into the broker gets an error, not a deadlock", "[inproc][threads]") {
    auto transport = connect(unique_name("reentry"));
    transport->declare(Topology{}.queue("q", classic()));
    std::string refusal;
    std::optional<Delivery> held;
    auto subscription = transport->consume("q", {}, [&](Delivery delivery) {
        try {
            transport->publish(message("", "q"));
        } catch (const Error& error) {
            refusal = error.what();
        }
        held = std::move(delivery);
    });
    transport->publish(message("", "q"));
    CHECK_THAT(refusal, Catch::Contains("from inside a DeliverFn"));
    REQUIRE(held);
    held->ack();
    CHECK(transport->queue_depth("q") == 0);
}

TEST_CASE("a DeliverFn that throws is stopped; its delivery comes back on close", "[inproc][threads]") {
    auto transport = connect(unique_name("throws"));
    transport->declare(Topology{}.queue("q", classic()));
    int calls = 0;
    auto subscription = transport->consume("q", {}, [&](Delivery) {
        ++calls;
        throw std::runtime_error("broken consumer");
    });
    CHECK(transport->publish(message("", "q", "a")).routed);  // the publisher never sees the consumer's error
    transport->publish(message("", "q", "b"));
    CHECK(calls == 1);
    CHECK(transport->queue_depth("q") == 1);
    subscription->close();
    CHECK(transport->queue_depth("q") == 2);
    auto first = transport->pull("q");
    REQUIRE(first);
    CHECK(text(first->message().body()) == "a");
    CHECK(first->message().redelivered());
}

TEST_CASE("a consumer tag is unique on its connection", "[inproc][consume]") {
    auto transport = connect(unique_name("tags"));
    transport->declare(Topology{}.queue("q", classic()));
    Inbox inbox;
    auto first = transport->consume("q", with_tag("worker"), inbox.deliver());
    CHECK_THROWS_WITH(transport->consume("q", with_tag("worker"), inbox.deliver()), Catch::Contains("NOT_ALLOWED"));
    first->close();
    CHECK_NOTHROW(transport->consume("q", with_tag("worker"), inbox.deliver()));
}
