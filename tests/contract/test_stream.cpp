// Streams (docs/streams.md, docs/patterns.md §8 item 61, docs/wire-contract.md §5.9): what a stream is
// declared with, what a reader sends the broker, and what it refuses. No broker: the
// conformance suite (tests/conformance/test_stream.cpp) reads real streams.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <acemq/stream.hpp>

using namespace acemq;
using namespace std::chrono_literals;

namespace {

FieldValue offset_argument(const StreamReadOptions& options) {
    return detail::stream_consumer_options("events", options).arguments.at("x-stream-offset");
}

Envelope delivered_at(FieldValue offset) {
    Envelope envelope;
    envelope.headers.emplace("x-stream-offset", std::move(offset));
    return envelope;
}

}  // namespace

TEST_CASE("a stream is declared durable with x-queue-type stream and only the retention asked for") {
    const Topology topology = Topology{}.stream(
        "events", {.max_age = std::chrono::days(7), .max_length_bytes = 5000000, .max_segment_size_bytes = 500000});
    const QueueDeclaration& events = *topology.find_queue("events");
    CHECK(events.durable);
    CHECK_FALSE(events.exclusive);
    CHECK_FALSE(events.auto_delete);
    CHECK(events.arguments == FieldTable{{"x-max-age", FieldValue("7D")},
                                         {"x-max-length-bytes", FieldValue(std::int64_t{5000000})},
                                         {"x-queue-type", FieldValue("stream")},
                                         {"x-stream-max-segment-size-bytes", FieldValue(std::int64_t{500000})}});
    // The segment size is omitted unless asked: a default here would break other languages'
    // declarations of the same stream.
    CHECK(Topology{}.stream("bare").find_queue("bare")->arguments ==
          FieldTable{{"x-queue-type", FieldValue("stream")}});
    // Only the stream: nothing to dead-letter into, no dead-letter arguments on it.
    CHECK(topology.queues().size() == 1);
    CHECK(topology.exchanges().empty());
}

TEST_CASE("x-max-age is written in the largest exact unit: 7D, 3h, 90m, 45s") {
    const auto age_of = [](std::chrono::seconds age) {
        return Topology{}.stream("s", {.max_age = age}).find_queue("s")->arguments.at("x-max-age").as_text();
    };
    CHECK(age_of(std::chrono::days(7)) == "7D");
    CHECK(age_of(std::chrono::days(1)) == "1D");
    CHECK(age_of(3h) == "3h");
    CHECK(age_of(90min) == "90m");
    CHECK(age_of(45s) == "45s");
    CHECK(age_of(25h) == "25h");
    CHECK_THROWS_AS(age_of(0s), InvalidArgument);
}

TEST_CASE("a stream cannot be given dead letters or retry rungs") {
    CHECK_THROWS_WITH(Topology{}.queue("events", {.dead_letter = true, .type = QueueType::stream}),
                      Catch::Contains("is a stream") && Catch::Contains("events.dlq"));
    CHECK_THROWS_AS(Topology{}.queue("events", {.retry = fixed_retry(3, 10s), .type = QueueType::stream}),
                    TopologyError);
}

TEST_CASE("a reader declares only where copies are set aside, never the stream or arguments on it") {
    const ConsumerOptions options = detail::stream_consumer_options("events", {});
    const Topology declared = consumer_topology("events", *options.retry);
    CHECK(declared.find_queue("events") == nullptr);
    CHECK(declared.existing_queues() == std::vector<std::string>{"events"});
    CHECK(declared.find_queue("events.dlq") != nullptr);
    CHECK(declared.find_queue("events.parked") != nullptr);
    CHECK(declared.queues().size() == 2);  // no retry rungs
}

TEST_CASE("offsets become the x-stream-offset consumer argument") {
    CHECK(offset_argument({}) == FieldValue("next"));
    CHECK(offset_argument({.offset = StreamOffset::next()}) == FieldValue("next"));
    CHECK(offset_argument({.offset = StreamOffset::first()}) == FieldValue("first"));
    CHECK(offset_argument({.offset = StreamOffset::last()}) == FieldValue("last"));
    CHECK(StreamOffset{} == StreamOffset::next());
}

TEST_CASE("an exact offset travels as a signed 64-bit integer, clamped above the signed range") {
    const FieldValue small = offset_argument({.offset = StreamOffset::at(42)});
    CHECK(small.holds<std::int64_t>());
    CHECK(small == FieldValue(std::int64_t{42}));
    CHECK(offset_argument({.offset = StreamOffset::at(std::uint8_t{7})}) == FieldValue(std::int64_t{7}));
    CHECK(offset_argument({.offset = StreamOffset::at(std::uint64_t{1} << 40)}) == FieldValue(std::int64_t{1} << 40));
    constexpr std::int64_t largest = std::numeric_limits<std::int64_t>::max();
    CHECK(offset_argument({.offset = StreamOffset::at(static_cast<std::uint64_t>(largest))}) == FieldValue(largest));
    const FieldValue clamped = offset_argument({.offset = StreamOffset::at(std::numeric_limits<std::uint64_t>::max())});
    CHECK(clamped.holds<std::int64_t>());
    CHECK(clamped == FieldValue(largest));
    CHECK_THROWS_WITH(StreamOffset::at(-1), Catch::Contains("cannot be negative") && Catch::Contains("first()"));
}

TEST_CASE("a timestamp offset travels as an AMQP timestamp, in whole seconds") {
    const std::chrono::system_clock::time_point instant =
        std::chrono::sys_days{std::chrono::year{2026} / 12 / 5} + 16h + 30min + 12s + 750ms;
    const FieldValue argument = offset_argument({.offset = StreamOffset::at(instant)});
    REQUIRE(argument.holds<FieldTimestamp>());
    CHECK(std::get<FieldTimestamp>(argument.get()).time_since_epoch() == 1796488212s);
    const FieldValue before_1970 =
        offset_argument({.offset = StreamOffset::at(std::chrono::system_clock::time_point{} - 10s)});
    CHECK(before_1970 == FieldValue(FieldTimestamp{}));
}

TEST_CASE("a reader runs without retry, prefetch 10 unless told, at least 1, tagged with its name") {
    const ConsumerOptions defaults = detail::stream_consumer_options("events", {});
    CHECK(defaults.prefetch == 10);
    CHECK(defaults.concurrency == 1);
    CHECK(defaults.declare);
    CHECK(defaults.tag.empty());
    REQUIRE(defaults.retry);
    CHECK(defaults.retry->max_attempts() == 1);

    const ConsumerOptions named = detail::stream_consumer_options(
        "events", {.prefetch = 1, .consumer_name = "billing", .concurrency = 4, .declare = false});
    CHECK(named.prefetch == 1);
    CHECK(named.tag == "billing");
    CHECK(named.concurrency == 4);
    CHECK_FALSE(named.declare);
    CHECK(named.arguments.size() == 1);

    CHECK_THROWS_WITH(detail::stream_consumer_options("events", {.prefetch = 0}),
                      Catch::Contains("prefetch of at least 1") && Catch::Contains("got 0"));
    CHECK_THROWS_AS(detail::stream_consumer_options("events", {.prefetch = -5}), InvalidArgument);
    CHECK_THROWS_AS(detail::stream_consumer_options("events", {.prefetch = 65536}), InvalidArgument);
    CHECK(detail::stream_consumer_options("events", {.prefetch = 65535}).prefetch == 65535);
}

TEST_CASE("a delivery's x-stream-offset is its checkpoint, in any integer width; absent is not 0") {
    CHECK(stream_offset(delivered_at(FieldValue(std::int64_t{17}))) == 17);
    CHECK(stream_offset(delivered_at(FieldValue(std::int32_t{17}))) == 17);
    CHECK(stream_offset(delivered_at(FieldValue(std::uint64_t{17}))) == 17);
    CHECK(stream_offset(delivered_at(FieldValue(std::int64_t{0}))) == 0);
    CHECK(stream_offset(Envelope{}) == std::nullopt);
    CHECK(stream_offset(delivered_at(FieldValue("first"))) == std::nullopt);
    CHECK(stream_offset(delivered_at(FieldValue(std::int64_t{-3}))) == std::nullopt);
    Message<int> message;
    message.envelope = delivered_at(FieldValue(std::int64_t{99}));
    CHECK(stream_offset(message) == 99);
    // Resume at offset + 1: the next reader starts just after what was handled.
    CHECK(offset_argument({.offset = StreamOffset::at(*stream_offset(message) + 1)}) == FieldValue(std::int64_t{100}));
}

TEST_CASE("a retry or in_progress on a stream is refused: parked with StreamRetryError") {
    Envelope envelope;
    envelope.id = "m-1";
    const auto answer = [&](std::function<Ack()> handle) {
        return detail::answer_on_stream("events", envelope, handle);
    };
    const Ack retried = answer([] { return retry(Failure::of(std::runtime_error("the ledger is down"))); });
    CHECK(retried.kind() == AckKind::park);
    REQUIRE(retried.failure());
    CHECK(retried.failure()->type_name == "acemq::StreamRetryError");
    CHECK_THAT(retried.failure()->message, Catch::Contains("cannot retry a message") &&
                                               Catch::Contains("events.parked") &&
                                               Catch::Contains("std::runtime_error: the ledger is down"));

    const Ack waited = answer([] { return in_progress(5s); });
    CHECK(waited.kind() == AckKind::park);
    CHECK_THAT(waited.failure()->message, Catch::Contains("cannot leave a message in progress"));

    // A thrown failure is a retry, refused alike.
    const Ack thrown = answer([]() -> Ack { throw std::runtime_error("boom"); });
    CHECK(thrown.kind() == AckKind::park);
    CHECK_THAT(thrown.failure()->message, Catch::Contains("std::runtime_error: boom"));

    // A fatal failure is no retry: the engine dead-letters it to {stream}.dlq.
    CHECK(answer([] { return retry(Failure::of(FatalError("bad order"))); }) ==
          retry(Failure::of(FatalError("bad order"))));
    CHECK_THROWS_AS(answer([]() -> Ack { throw FatalError("bad order"); }), FatalError);

    CHECK(answer([] { return accept(); }) == accept());
    CHECK(answer([] { return reject(); }).kind() == AckKind::reject);
    CHECK(answer([] { return park(); }).kind() == AckKind::park);
}
