// Stream queues in the embedded broker, as RabbitMQ serves them over AMQP 0-9-1: an
// append-only log that reading does not take from, each consumer starting where its
// x-stream-offset says, each delivery carrying its offset, settlements that only return
// credit, and retention by bytes and by age on a ManualClock.
#include <catch2/catch.hpp>

#include <limits>

#include <acemq/error.hpp>
#include <acemq/management.hpp>
#include <acemq/naming.hpp>
#include "../support/thrown.hpp"
#include "inbox.hpp"

using namespace acemq;
using namespace inproc_test;
using std::chrono::seconds;
using testing_support::what_of;

namespace {

constexpr std::string_view offset_argument = "x-stream-offset";

struct StreamBroker {
    std::string name = unique_name("streams");
    std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
    std::shared_ptr<inproc::Broker> broker = inproc::broker(name, clock);
    inproc::Broker::ConnectionId connection = broker->open_connection();

    void declare(std::string stream, StreamOptions options = {}) {
        broker->declare(connection, Topology{}.stream(stream, options));
    }
    void publish(const std::string& stream, std::string_view body) {
        REQUIRE(broker->publish(message("", stream, body)).confirmed);
    }
    std::unique_ptr<Subscription> read(const std::string& stream, Inbox& inbox, std::optional<FieldValue> offset,
                                       std::uint16_t prefetch = 100) {
        ConsumeSpec spec = with_prefetch(prefetch);
        if (offset) spec.arguments.emplace(std::string(offset_argument), *offset);
        return broker->consume(connection, stream, spec, inbox.deliver());
    }
};

// The offset header of a delivery; fails the test when it is missing or not a signed 64-bit.
std::int64_t offset_of(const Delivery& delivery) {
    const auto found = delivery.message().headers().find(offset_argument);
    REQUIRE(found != delivery.message().headers().end());
    REQUIRE(found->second.holds<std::int64_t>());
    return std::get<std::int64_t>(found->second.get());
}

// Every delivery the inbox holds now, acked: body and offset.
std::vector<std::pair<std::string, std::int64_t>> drain(Inbox& inbox) {
    std::vector<std::pair<std::string, std::int64_t>> read;
    while (auto delivery = inbox.take()) {
        read.emplace_back(text(delivery->message().body()), offset_of(*delivery));
        delivery->ack();
    }
    return read;
}

using Read = std::vector<std::pair<std::string, std::int64_t>>;

}  // namespace

TEST_CASE("a stream keeps what it delivers: every reader from first gets the whole log, offsets in headers") {
    StreamBroker s;
    s.declare("events");
    for (const char* body : {"a", "b", "c"}) s.publish("events", body);
    Inbox one, two;
    auto first = s.read("events", one, FieldValue("first"));
    auto second = s.read("events", two, FieldValue("first"));
    const Read all{{"a", 0}, {"b", 1}, {"c", 2}};
    CHECK(drain(one) == all);
    CHECK(drain(two) == all);
    CHECK(s.broker->queue_depth(s.connection, "events") == 3);
    // A reader that is caught up gets what is appended next, at the next offset.
    s.publish("events", "d");
    CHECK(drain(one) == Read{{"d", 3}});
    CHECK(drain(two) == Read{{"d", 3}});
}

TEST_CASE("x-stream-offset: next (the default), first, last and an exact offset") {
    StreamBroker s;
    s.declare("events");
    for (const char* body : {"a", "b", "c"}) s.publish("events", body);
    Inbox by_default, next, last, exact, exact_64, exact_unsigned;
    auto subscriptions = std::vector<std::unique_ptr<Subscription>>{};
    subscriptions.push_back(s.read("events", by_default, std::nullopt));
    subscriptions.push_back(s.read("events", next, FieldValue("next")));
    subscriptions.push_back(s.read("events", last, FieldValue("last")));
    subscriptions.push_back(s.read("events", exact, FieldValue(std::int32_t{1})));
    subscriptions.push_back(s.read("events", exact_64, FieldValue(std::int64_t{2})));
    subscriptions.push_back(s.read("events", exact_unsigned, FieldValue(std::uint64_t{1})));
    CHECK(drain(by_default).empty());
    CHECK(drain(next).empty());
    CHECK(drain(last) == Read{{"c", 2}});  // each message is a chunk of its own here
    CHECK(drain(exact) == Read{{"b", 1}, {"c", 2}});
    CHECK(drain(exact_64) == Read{{"c", 2}});
    CHECK(drain(exact_unsigned) == Read{{"b", 1}, {"c", 2}});
    s.publish("events", "d");
    CHECK(drain(by_default) == Read{{"d", 3}});
    CHECK(drain(next) == Read{{"d", 3}});
}

TEST_CASE("x-stream-offset \"last\" on an empty stream waits for the first message") {
    StreamBroker s;
    s.declare("events");
    Inbox last;
    auto subscription = s.read("events", last, FieldValue("last"));
    CHECK(drain(last).empty());
    s.publish("events", "a");
    CHECK(drain(last) == Read{{"a", 0}});
}

TEST_CASE("x-stream-offset as a timestamp or an interval starts at the first message appended at or after it") {
    StreamBroker s;
    s.declare("events");
    s.publish("events", "old 1");
    s.publish("events", "old 2");
    s.clock->advance(seconds(100));
    s.publish("events", "new");
    Inbox since_time, since_interval, long_ago, future, far_future;
    const auto now = std::chrono::time_point_cast<seconds>(std::chrono::system_clock::now());
    auto a = s.read("events", since_time, FieldValue(FieldTimestamp(now - seconds(50))));
    auto b = s.read("events", since_interval, FieldValue("50s"));
    auto c = s.read("events", long_ago, FieldValue(FieldTimestamp(now - seconds(3600))));
    auto d = s.read("events", future, FieldValue(FieldTimestamp(now + seconds(3600))));
    // Hostile: the year 9999 and an instant before 1900 must neither overflow nor throw.
    auto e = s.read("events", far_future, FieldValue(FieldTimestamp(seconds(253402300799))));
    Inbox before_epoch;
    auto f = s.read("events", before_epoch, FieldValue(FieldTimestamp(seconds(-2208988800))));
    CHECK(drain(since_time) == Read{{"new", 2}});
    CHECK(drain(since_interval) == Read{{"new", 2}});
    CHECK(drain(long_ago) == Read{{"old 1", 0}, {"old 2", 1}, {"new", 2}});
    CHECK(drain(future).empty());  // a time to come: only what is appended from now on
    CHECK(drain(far_future).empty());
    CHECK(drain(before_epoch).size() == 3);
    s.publish("events", "later");
    CHECK(drain(future) == Read{{"later", 3}});
}

TEST_CASE("hostile offsets: beyond the end waits for the log to reach it, negative reads from the first") {
    StreamBroker s;
    s.declare("events");
    for (const char* body : {"a", "b"}) s.publish("events", body);
    Inbox beyond, negative, huge, most_negative;
    auto a = s.read("events", beyond, FieldValue(std::int64_t{1000}));
    auto b = s.read("events", negative, FieldValue(std::int32_t{-5}));
    auto c = s.read("events", huge, FieldValue(std::numeric_limits<std::uint64_t>::max()));
    auto d = s.read("events", most_negative, FieldValue(std::numeric_limits<std::int64_t>::min()));
    CHECK(drain(beyond).empty());
    CHECK(drain(huge).empty());
    CHECK(drain(negative) == Read{{"a", 0}, {"b", 1}});
    CHECK(drain(most_negative) == Read{{"a", 0}, {"b", 1}});
    s.publish("events", "c");
    // As on RabbitMQ 3.10: what is appended below the offset asked for is not this reader's.
    CHECK(drain(beyond).empty());
    CHECK(drain(huge).empty());
    Inbox at_four;
    auto e = s.read("events", at_four, FieldValue(std::int64_t{4}));
    for (const char* body : {"d", "e"}) s.publish("events", body);
    CHECK(drain(at_four) == Read{{"e", 4}});
    CHECK(drain(beyond).empty());
}

TEST_CASE("an x-stream-offset of the wrong type or an unknown word is refused, naming the argument") {
    StreamBroker s;
    s.declare("events");
    Inbox inbox;
    for (const FieldValue& wrong : {FieldValue("banana"), FieldValue(true), FieldValue(1.5), FieldValue("5"),
                                    FieldValue("0s"), FieldValue(FieldTable{})}) {
        const std::string what = what_of<InvalidArgument>([&] { s.read("events", inbox, wrong); });
        CHECK_THAT(what, Catch::Contains("x-stream-offset") && Catch::Contains("PRECONDITION_FAILED") &&
                             Catch::Contains("\"first\""));
    }
    CHECK_THAT(what_of<InvalidArgument>([&] { s.read("events", inbox, FieldValue("banana")); }),
               Catch::Contains("banana"));
    // Nothing was left behind by the refusals: a good reader still starts where it asks.
    s.publish("events", "a");
    auto subscription = s.read("events", inbox, FieldValue("first"));
    CHECK(drain(inbox) == Read{{"a", 0}});
}

TEST_CASE("a stream consumer needs a prefetch, and basic.get on a stream is refused") {
    StreamBroker s;
    s.declare("events");
    s.publish("events", "a");
    Inbox inbox;
    CHECK_THAT(what_of<Error>([&] { s.read("events", inbox, FieldValue("first"), 0); }),
               Catch::Contains("PRECONDITION_FAILED") && Catch::Contains("prefetch"));
    CHECK_THAT(what_of<Error>([&] { s.broker->pull(s.connection, "events"); }),
               Catch::Contains("NOT_IMPLEMENTED") && Catch::Contains("basic.get"));
    CHECK(s.broker->queue_depth(s.connection, "events") == 1);
}

TEST_CASE("a stream consumer's prefetch is credit that any settlement returns, and none requeues") {
    StreamBroker s;
    s.declare("events");
    for (const char* body : {"a", "b", "c", "d", "e"}) s.publish("events", body);
    Inbox inbox;
    auto subscription = s.read("events", inbox, FieldValue("first"), 2);
    REQUIRE(inbox.size() == 2);
    auto a = inbox.take();
    auto b = inbox.take();
    a->requeue();  // RabbitMQ: credit back, the message is not delivered again
    REQUIRE(inbox.size() == 1);
    auto c = inbox.take();
    CHECK(text(c->message().body()) == "c");
    CHECK_FALSE(c->message().redelivered());
    b->reject();  // not dead-lettered, not dropped from the log
    c->ack();
    CHECK(drain(inbox) == Read{{"d", 3}, {"e", 4}});
    CHECK(s.broker->queue_depth(s.connection, "events") == 5);
    CHECK(s.broker->info().acked == 3);  // c, d, e
}

TEST_CASE("closing a stream consumer with deliveries unsettled gives nothing back to the stream") {
    StreamBroker s;
    s.declare("events");
    for (const char* body : {"a", "b"}) s.publish("events", body);
    Inbox held, later;
    auto reader = s.read("events", held, FieldValue("first"));
    REQUIRE(held.size() == 2);
    auto watcher = s.read("events", later, FieldValue("next"));
    reader->close();
    CHECK(s.broker->queue_depth(s.connection, "events") == 2);
    CHECK(drain(later).empty());  // nothing came back to be delivered again
    while (auto delivery = held.take()) CHECK_THROWS_AS(delivery->ack(), UsageError);
}

TEST_CASE("a stream is durable, not exclusive and not auto-delete, and its arguments are checked") {
    StreamBroker s;
    auto declare = [&](bool durable, bool exclusive, bool auto_delete, FieldTable arguments = {}) {
        arguments.insert_or_assign(std::string(argument::queue_type), FieldValue("stream"));
        s.broker->declare_queue(s.connection, QueueDeclaration{.name = unique_name("s"),
                                                               .type = QueueType::stream,
                                                               .durable = durable,
                                                               .exclusive = exclusive,
                                                               .auto_delete = auto_delete,
                                                               .arguments = std::move(arguments)});
    };
    CHECK_THAT(what_of<TopologyError>([&] { declare(false, false, false); }),
               Catch::Contains("PRECONDITION_FAILED") && Catch::Contains("non-durable"));
    CHECK_THAT(what_of<TopologyError>([&] { declare(true, true, false); }), Catch::Contains("'exclusive'"));
    CHECK_THAT(what_of<TopologyError>([&] { declare(true, false, true); }), Catch::Contains("'auto-delete'"));
    for (const FieldValue& age :
         {FieldValue("banana"), FieldValue("7"), FieldValue("0D"), FieldValue("7d"), FieldValue(std::int64_t{7})})
        CHECK_THAT(what_of<TopologyError>([&] {
                       declare(true, false, false, {{"x-max-age", age}});
                   }),
                   Catch::Contains("invalid x-max-age"));
    CHECK_THAT(what_of<TopologyError>([&] {
                   declare(true, false, false, {{"x-max-length-bytes", FieldValue(std::int64_t{-1})}});
               }),
               Catch::Contains("invalid x-max-length-bytes"));
    CHECK_THAT(
        what_of<TopologyError>([&] {
            declare(true, false, false, {{"x-stream-max-segment-size-bytes", FieldValue(std::int64_t{4'000'000'000})}});
        }),
        Catch::Contains("invalid x-stream-max-segment-size-bytes"));
    for (const char* age : {"7D", "3h", "90m", "45s", "1Y", "2M"})
        CHECK_NOTHROW(declare(true, false, false, {{"x-max-age", FieldValue(age)}}));
    CHECK_NOTHROW(declare(true, false, false,
                          {{"x-max-length-bytes", FieldValue(std::int64_t{1000})},
                           {"x-stream-max-segment-size-bytes", FieldValue(std::int64_t{1'000'000})}}));
}

TEST_CASE("retention by bytes takes the oldest messages, keeps the newest, and readers start from what is left") {
    StreamBroker s;
    s.declare("events", StreamOptions{.max_length_bytes = 10});
    for (const char* body : {"aaaa", "bbbb", "cccc", "dddd", "eeee"}) s.publish("events", body);
    CHECK(s.broker->queue_depth(s.connection, "events") == 2);  // 8 bytes of bodies, within 10
    Inbox first, exact;
    auto a = s.read("events", first, FieldValue("first"));
    auto b = s.read("events", exact, FieldValue(std::int64_t{1}));  // taken by retention: from the oldest kept
    CHECK(drain(first) == Read{{"dddd", 3}, {"eeee", 4}});
    CHECK(drain(exact) == Read{{"dddd", 3}, {"eeee", 4}});
    // One message larger than the limit stays: the newest always does.
    s.publish("events", std::string(64, 'x'));
    CHECK(s.broker->queue_depth(s.connection, "events") == 1);
    CHECK(drain(first) == Read{{std::string(64, 'x'), 5}});
}

TEST_CASE("retention by age takes what is older than x-max-age on the broker's clock") {
    StreamBroker s;
    s.declare("events", StreamOptions{.max_age = seconds(60)});
    s.publish("events", "a");
    s.publish("events", "b");
    s.clock->advance(seconds(30));
    s.publish("events", "c");
    s.clock->advance(seconds(31));  // a and b are 61 s old, c 31 s
    CHECK(s.broker->queue_depth(s.connection, "events") == 1);
    Inbox first;
    auto reader = s.read("events", first, FieldValue("first"));
    CHECK(drain(first) == Read{{"c", 2}});
    s.clock->advance(seconds(3600));  // c is the newest: it stays whatever its age
    CHECK(s.broker->queue_depth(s.connection, "events") == 1);
    s.publish("events", "d");
    CHECK(s.broker->queue_depth(s.connection, "events") == 1);
    CHECK(drain(first) == Read{{"d", 3}});
}

TEST_CASE("management lists a stream with its messages, browses it, and refuses to purge it") {
    StreamBroker s;
    s.declare("events");
    for (const char* body : {"a", "b", "c"}) s.publish("events", body);
    Inbox inbox;
    auto reader = s.read("events", inbox, FieldValue("first"), 1);
    const auto management = inproc::manage(s.broker);
    const auto queues = management->queues();
    const auto found =
        std::find_if(queues.begin(), queues.end(), [](const QueueSummary& queue) { return queue.name == "events"; });
    REQUIRE(found != queues.end());
    CHECK(found->type == QueueType::stream);
    CHECK(found->ready == 3);
    CHECK(found->unacked == 1);
    CHECK(found->consumers == 1);
    CHECK(found->bytes == 3);
    const auto browsed = management->browse("events", {});
    REQUIRE(browsed.size() == 3);
    CHECK(std::get<std::int64_t>(browsed[2].message.headers().at(offset_argument).get()) == 2);
    try {
        management->purge("events");
        FAIL("a stream was purged");
    } catch (const ManagementError& error) {
        CHECK(error.reason() == ManagementError::Reason::unsupported);
        CHECK_THAT(error.what(), Catch::Contains("append-only"));
    }
    CHECK(s.broker->queue_depth(s.connection, "events") == 3);
}

TEST_CASE("a stream fed through an exchange gets its own offsets, whatever other queues the message reaches") {
    StreamBroker s;
    s.broker->declare(s.connection, Topology{}
                                        .exchange("fan", ExchangeKind::fanout)
                                        .stream("events")
                                        .queue("work", classic())
                                        .bind("events", "fan", "")
                                        .bind("work", "fan", ""));
    REQUIRE(s.broker->publish(message("fan", "", "a")).confirmed);
    REQUIRE(s.broker->publish(message("fan", "", "b")).confirmed);
    const auto work = pull_all(*s.broker, "work");
    REQUIRE(work.size() == 2);
    CHECK_FALSE(work[0].headers().contains(offset_argument));  // the queue's copy is the message as published
    Inbox inbox;
    auto reader = s.read("events", inbox, FieldValue("first"));
    CHECK(drain(inbox) == Read{{"a", 0}, {"b", 1}});
}
