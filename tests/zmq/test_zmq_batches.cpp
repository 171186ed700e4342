// Batch frames (docs/zmq-protocol.md §12, protocol version 3), spoken by hand on a raw DEALER
// against an in-process broker: a batch of publishes confirmed entry by entry; a malformed
// entry refused naming it, the entries around it handled; an over-limit or hostile batch
// refused without taking anything; a version-2 peer never sent a batch; and this library's
// client against a broker of version 2, which it serves without batches; acks made just
// before close, which go out ahead of the bye; and the sender's side without a socket
// (wire::Batch): a frame alone as it would be alone, the byte and entry limits.
#include <catch2/catch.hpp>

#include <atomic>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <zmq.hpp>

#include <acemq/acemq.hpp>
#include <acemq/zmq.hpp>

#include "../support/msgpack_bytes.hpp"
#include "../support/wait.hpp"
#include "broker_process.hpp"
#include "fake_broker.hpp"
#include "raw_answer.hpp"
#include "zmq/protocol.hpp"

using namespace std::chrono_literals;

namespace {

namespace wire = acemq::zmq::wire;
using wire::Command;
using Bytes = std::vector<std::byte>;

acemq::OutboundMessage batch_message(const std::string& queue, int number) {
    const std::string text = "message " + std::to_string(number);
    const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
    return {.routing_key = queue,
            .body = acemq::Bytes(bytes, bytes + text.size()),
            .message_id = std::to_string(number),
            .mandatory = true};
}

// A raw peer in a session of `version`, its heartbeat a minute so a slow run keeps it.
class BatchPeer {
public:
    BatchPeer(const std::string& endpoint, std::uint32_t version) : dealer_(context_, ::zmq::socket_type::dealer) {
        dealer_.set(::zmq::sockopt::linger, 0);
        dealer_.connect(endpoint);
        send(wire::encode_hello(1, "batches", 60000, version));
        const auto welcome = zmq_test::next_answer(dealer_);
        REQUIRE(welcome);
        REQUIRE(wire::Frame::parse(*welcome).command() == Command::welcome);
    }
    void send(const msgpack::sbuffer& frame) {
        dealer_.send(::zmq::buffer(frame.data(), frame.size()), ::zmq::send_flags::none);
    }
    void send(const std::vector<std::uint8_t>& bytes) {
        dealer_.send(::zmq::buffer(bytes.data(), bytes.size()), ::zmq::send_flags::none);
    }
    std::optional<Bytes> next() { return zmq_test::next_answer(dealer_); }

private:
    ::zmq::context_t context_;
    ::zmq::socket_t dealer_;
};

// What a raw peer was sent, batch entries taken out one by one in order.
struct BatchAnswers {
    std::map<std::uint64_t, wire::Confirm> confirms;
    std::vector<wire::ErrorFrame> errors;
    std::vector<wire::Deliver> deliveries;
    int batch_frames = 0;
    int frames = 0;
};

void take_answer(BatchAnswers& received, const wire::Frame& frame) {
    switch (frame.command()) {
    case Command::confirm: {
        wire::Confirm confirm = wire::read_confirm(frame);
        received.confirms.emplace(confirm.sequence, std::move(confirm));
        return;
    }
    case Command::error: received.errors.push_back(wire::read_error(frame)); return;
    case Command::deliver: received.deliveries.push_back(wire::read_deliver(frame)); return;
    case Command::batch: {
        ++received.batch_frames;
        const msgpack::object_array& entries = wire::batch_entries(frame);
        for (std::size_t i = 0; i < entries.size; ++i) take_answer(received, wire::Frame::entry(entries, i));
        return;
    }
    default: FAIL("unexpected " << wire::to_string(frame.command()));
    }
}

// Reads frames until `done` holds of what came (each wait bounded by next_answer).
template <class Done>
BatchAnswers answers_until(BatchPeer& peer, Done done) {
    BatchAnswers received;
    while (!done(received)) {
        const auto bytes = peer.next();
        REQUIRE(bytes);
        ++received.frames;
        take_answer(received, wire::Frame::parse(*bytes));
    }
    return received;
}

// A batch frame of `entries`, each a frame as it would travel alone, written here by hand (as
// docs/zmq-protocol.md §12 lays it out) so that it may hold more entries than a Batch would put
// in one frame.
msgpack::sbuffer batch_of(const std::vector<msgpack::sbuffer>& entries) {
    msgpack::sbuffer frame;
    msgpack::packer<msgpack::sbuffer> out(frame);
    out.pack_array(3);
    out.pack(wire::version_of(Command::batch));
    out.pack(static_cast<std::uint8_t>(Command::batch));
    out.pack_array(static_cast<std::uint32_t>(entries.size()));
    for (const msgpack::sbuffer& entry : entries) frame.write(entry.data(), entry.size());
    return frame;
}

// A publish frame whose body is a str where a bin belongs.
msgpack::sbuffer publish_with_text_body(std::uint64_t sequence) {
    wire::Writer out(Command::publish, 10);
    out.value(sequence).text("").text("q").text("not a bin").text("").text("").table(acemq::FieldTable{}).text("");
    out.value(false).value(false);
    return std::move(out.buffer());
}

}  // namespace

TEST_CASE("a batch of publishes is confirmed entry by entry, and the confirms come back batched") {
    zmq_test::ThreadBroker broker(zmq_test::fresh_ipc_endpoint("batch-publish"));
    const std::string queue = "batches.publish";
    acemq::zmq::open(broker.url())->declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic}));
    BatchPeer peer(broker.endpoint(), 3);
    std::vector<msgpack::sbuffer> publishes;
    for (int i = 1; i <= 20; ++i) publishes.push_back(wire::encode_publish(i, batch_message(queue, i)));
    publishes.push_back(wire::encode_publish(21, batch_message("batches.nowhere", 21)));
    peer.send(batch_of(publishes));
    const BatchAnswers received = answers_until(peer, [](const BatchAnswers& r) { return r.confirms.size() == 21; });
    for (std::uint64_t i = 1; i <= 20; ++i) {
        INFO(i);
        CHECK(received.confirms.at(i).result.confirmed);
        CHECK(received.confirms.at(i).result.routed);
    }
    // The one mandatory publish nobody takes is answered as alone: confirmed, not routed.
    CHECK_FALSE(received.confirms.at(21).result.routed);
    CHECK(received.errors.empty());
    CHECK(received.batch_frames >= 1);
    CHECK(received.frames < 21);
    CHECK(acemq::zmq::open(broker.url())->queue_depth(queue) == 20);
}

TEST_CASE("a malformed entry is refused naming it; the entries before and after it are handled") {
    zmq_test::ThreadBroker broker(zmq_test::fresh_ipc_endpoint("batch-malformed"));
    const std::string queue = "batches.malformed";
    auto client = acemq::zmq::open(broker.url());
    client->declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic}));
    BatchPeer peer(broker.endpoint(), 3);
    std::vector<msgpack::sbuffer> entries;
    entries.push_back(wire::encode_publish(1, batch_message(queue, 1)));
    entries.push_back(publish_with_text_body(2));              // entry 2: a publish the broker cannot read
    entries.push_back(wire::encode_reply_nil(9));              // entry 3: a command that cannot travel in a batch
    entries.push_back(wire::encode_settle(77, std::nullopt));  // entry 4: an ack of a tag never handed out
    msgpack::sbuffer garbage;
    msgpack::packer<msgpack::sbuffer>(garbage).pack(std::string("garbage"));
    entries.push_back(std::move(garbage));  // entry 5: not a frame at all
    entries.push_back(wire::encode_publish(3, batch_message(queue, 3)));
    peer.send(batch_of(entries));
    const BatchAnswers received =
        answers_until(peer, [](const BatchAnswers& r) { return r.confirms.size() == 3 && r.errors.size() == 3; });
    CHECK(received.confirms.at(1).result.confirmed);
    CHECK(received.confirms.at(3).result.confirmed);
    const acemq::PublishResult& refused = received.confirms.at(2).result;
    CHECK_FALSE(refused.confirmed);
    CHECK(refused.why == acemq::PublishResult::Unconfirmed::refused);
    CHECK_THAT(refused.return_reason, Catch::StartsWith("acemq: malformed zmq protocol frame: batch entry 2 of 6: "));
    CHECK_THAT(refused.return_reason, Catch::Contains("field body should be a bin, is str"));
    REQUIRE(received.errors.size() == 3);
    CHECK_THAT(received.errors[0].text, Catch::Contains("batch entry 3 of 6: reply cannot travel in a batch"));
    CHECK_THAT(received.errors[1].text, Catch::Contains("batch entry 4 of 6: ack names delivery tag 77"));
    CHECK_THAT(received.errors[2].text, Catch::Contains("batch entry 5 of 6: it is a str, not an array"));
    for (const auto& error : received.errors) CHECK(error.code == wire::ErrorCode::malformed);
    CHECK(client->queue_depth(queue) == 2);
}

TEST_CASE("a batch past the entry limit or claiming what it does not hold is refused, nothing of it taken") {
    zmq_test::ThreadBroker broker(zmq_test::fresh_ipc_endpoint("batch-limit"));
    const std::string queue = "batches.limit";
    auto client = acemq::zmq::open(broker.url());
    client->declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic}));
    BatchPeer peer(broker.endpoint(), 3);

    // One entry past the limit: every publish in it is answered, not confirmed, with the limit.
    std::vector<msgpack::sbuffer> publishes;
    const std::size_t count = wire::max_batch_entries + 1;
    for (std::size_t i = 1; i <= count; ++i) publishes.push_back(wire::encode_publish(i, batch_message(queue, 0)));
    peer.send(batch_of(publishes));
    const BatchAnswers over =
        answers_until(peer, [&](const BatchAnswers& r) { return r.confirms.size() == count && r.errors.size() == 1; });
    for (const auto& [sequence, confirm] : over.confirms) {
        REQUIRE_FALSE(confirm.result.confirmed);
        REQUIRE(confirm.result.why == acemq::PublishResult::Unconfirmed::refused);
    }
    CHECK_THAT(over.confirms.at(1).result.return_reason,
               Catch::Contains("a batch of 4097 entries is past the limit of 4096 a frame"));
    CHECK_THAT(over.errors.front().text, Catch::Contains("a batch of 4097 entries is past the limit"));
    CHECK(client->queue_depth(queue) == 0);

    // Hostile shapes: refused by the shape check before anything is allocated for what they claim.
    const std::vector<std::vector<std::uint8_t>> hostile{
        {0x93, 0x03, 0x11, 0xdd, 0xff, 0xff, 0xff, 0xff},        // four billion entries in 8 bytes
        {0x93, 0x03, 0x11, 0x91, 0xdd, 0xff, 0xff, 0xff, 0xff},  // an entry claiming four billion fields
        {0x93, 0x03, 0x11, 0x91, 0x94, 0x01, 0x07, 0x01, 0xc6, 0xff, 0xff, 0xff, 0xff},  // a bin past the end
    };
    for (const auto& bytes : hostile) {
        peer.send(bytes);
        const BatchAnswers refused = answers_until(peer, [](const BatchAnswers& r) { return !r.errors.empty(); });
        CHECK(refused.errors.front().code == wire::ErrorCode::malformed);
        CHECK_THAT(refused.errors.front().text, Catch::StartsWith("acemq: malformed zmq protocol frame: "));
    }
    std::vector<std::uint8_t> deep{0x93, 0x03, 0x11, 0x91};  // an entry nested past the limit
    deep.insert(deep.end(), 80, 0x91);
    deep.push_back(0xc0);
    peer.send(deep);
    const BatchAnswers too_deep = answers_until(peer, [](const BatchAnswers& r) { return !r.errors.empty(); });
    CHECK_THAT(too_deep.errors.front().text, Catch::Contains("nest deeper than 72 levels"));
    // A batch inside a batch is not a batch's entry; the publish beside it is taken.
    peer.send(batch_of([&] {
        std::vector<msgpack::sbuffer> outer;
        outer.push_back(batch_of([&] {
            std::vector<msgpack::sbuffer> inner;
            inner.push_back(wire::encode_publish(1, batch_message(queue, 1)));
            inner.push_back(wire::encode_publish(2, batch_message(queue, 2)));
            return inner;
        }()));
        outer.push_back(wire::encode_publish(3, batch_message(queue, 3)));
        return outer;
    }()));
    const BatchAnswers nested =
        answers_until(peer, [](const BatchAnswers& r) { return !r.errors.empty() && r.confirms.size() == 1; });
    CHECK_THAT(nested.errors.front().text, Catch::Contains("batch entry 1 of 2: batch cannot travel in a batch"));
    CHECK(nested.confirms.at(3).result.confirmed);
    CHECK(client->queue_depth(queue) == 1);
    REQUIRE(client->publish(batch_message(queue, 4)).confirmed);  // and the broker serves on
}

TEST_CASE("a batch past the broker's frame limit is refused whole, each publish in it too_large") {
    zmq_test::ThreadBroker broker(zmq_test::fresh_ipc_endpoint("batch-frame-limit"), {.max_frame_bytes = 64 * 1024});
    const std::string queue = "batches.frame_limit";
    auto client = acemq::zmq::open(broker.url());
    client->declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic}));
    BatchPeer peer(broker.endpoint(), 3);
    // Ten publishes of 8 KiB: each fits alone, together they pass 64 KiB (and stay within the
    // twice that libzmq reads, so the broker sees the frame and answers it).
    std::vector<msgpack::sbuffer> publishes;
    for (int i = 1; i <= 10; ++i) {
        acemq::OutboundMessage message = batch_message(queue, i);
        message.body.assign(8 * 1024, std::byte{'x'});
        publishes.push_back(wire::encode_publish(static_cast<std::uint64_t>(i), message));
    }
    peer.send(batch_of(publishes));
    const BatchAnswers refused =
        answers_until(peer, [](const BatchAnswers& r) { return r.confirms.size() == 10 && r.errors.size() == 1; });
    for (const auto& [sequence, confirm] : refused.confirms) {
        CHECK_FALSE(confirm.result.confirmed);
        CHECK(confirm.result.why == acemq::PublishResult::Unconfirmed::too_large);
        CHECK_THAT(confirm.result.return_reason, Catch::Contains("over this broker's limit of 65536 bytes"));
        CHECK_THAT(confirm.result.return_reason, Catch::EndsWith("nothing of the batch was taken"));
    }
    CHECK(client->queue_depth(queue) == 0);
    // This client splits what would pass the limit into batches that do not.
    std::vector<acemq::OutboundMessage> messages;
    for (int i = 0; i < 40; ++i) {
        messages.push_back(batch_message(queue, i));
        messages.back().body.assign(8 * 1024, std::byte{'x'});
    }
    for (const acemq::PublishResult& result : client->publish_batch(std::move(messages))) {
        INFO(result.return_reason);
        CHECK(result.confirmed);
    }
    CHECK(client->queue_depth(queue) == 40);
}

TEST_CASE("a version-2 peer is never sent a batch, and its version-3 commands are refused as unknown") {
    zmq_test::ThreadBroker broker(zmq_test::fresh_ipc_endpoint("batch-v2"));
    const std::string queue = "batches.v2";
    auto client = acemq::zmq::open(broker.url());
    client->declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic}));
    for (int i = 0; i < 30; ++i) REQUIRE(client->publish(batch_message(queue, i)).confirmed);

    BatchPeer peer(broker.endpoint(), 2);
    for (int i = 1; i <= 30; ++i) peer.send(wire::encode_publish(100 + i, batch_message(queue, i)));
    peer.send(wire::encode_consume(200, queue, 0, "v2"));
    BatchAnswers received;
    while (received.confirms.size() < 30 || received.deliveries.size() < 60) {
        const auto bytes = peer.next();
        REQUIRE(bytes);
        const wire::Frame frame = wire::Frame::parse(*bytes);
        CHECK(frame.version() < 3);
        if (frame.command() == Command::reply) continue;  // the consume's
        take_answer(received, frame);
    }
    CHECK(received.batch_frames == 0);
    for (const auto& [sequence, confirm] : received.confirms) CHECK(confirm.result.confirmed);

    // A frame of version 2 has no command 17.
    peer.send(std::vector<std::uint8_t>{0x93, 0x02, 0x11, 0x90});
    const BatchAnswers refused = answers_until(peer, [](const BatchAnswers& r) { return !r.errors.empty(); });
    CHECK(refused.errors.front().code == wire::ErrorCode::unknown_command);
}

TEST_CASE("this client and a broker of version 2: it asks again for version 2 and is served without batches") {
    std::atomic<int> hellos_v3{0}, batches{0}, publishes{0};
    zmq_test::FakeBroker broker("v2broker", [&](std::span<const std::byte> bytes) -> std::optional<msgpack::sbuffer> {
        // What a version-2 broker answers a frame of version 3 with.
        const auto version = bytes.size() < 2 ? 1 : std::to_integer<int>(bytes[1]);
        if (version > 2) {
            if (std::to_integer<int>(bytes[2]) == static_cast<int>(Command::hello)) ++hellos_v3;
            if (std::to_integer<int>(bytes[2]) == static_cast<int>(Command::batch)) ++batches;
            return wire::encode_error(0, wire::ErrorCode::unsupported_version,
                                      "acemq: zmq protocol version 3 is not spoken here (this side speaks versions 1 "
                                      "to 2)");
        }
        const wire::Frame frame = wire::Frame::parse(bytes);
        if (frame.command() == Command::hello)
            return wire::encode_welcome(wire::read_hello(frame).request, "v2", 1000, 1024 * 1024);
        if (frame.command() == Command::publish) {
            ++publishes;
            return wire::encode_confirm(wire::read_publish(frame).sequence,
                                        acemq::PublishResult{.confirmed = true, .routed = true});
        }
        if (frame.command() == Command::heartbeat) return wire::encode_bare(Command::heartbeat);
        return std::nullopt;
    });
    auto client = acemq::zmq::open(broker.url(), {.session = {.connect_timeout = 5s}});
    std::vector<acemq::OutboundMessage> messages;
    for (int i = 0; i < 200; ++i) messages.push_back(batch_message("q", i));
    for (const acemq::PublishResult& result : client->publish_batch(std::move(messages))) {
        INFO(result.return_reason);
        CHECK(result.confirmed);
    }
    CHECK(hellos_v3.load() == 1);
    CHECK(batches.load() == 0);
    CHECK(publishes.load() == 200);
}

TEST_CASE("acks made just before close reach the broker ahead of the bye") {
    zmq_test::ThreadBroker broker("tcp://127.0.0.1:0");
    const auto closing_queue = [&] {
        for (const acemq::QueueSummary& queue : broker.broker()->queues())
            if (queue.name == "closing") return queue;
        FAIL("the broker has no queue \"closing\"");
        return acemq::QueueSummary{};
    };
    // Each round's acks are made in a burst right before close(): rounds make the race
    // between them likely to show.
    for (int round = 0; round < 20; ++round) {
        INFO("round " << round);
        auto client = acemq::zmq::open(broker.url());
        client->declare(acemq::Topology{}.queue("closing"));
        std::vector<acemq::OutboundMessage> messages;
        for (int i = 0; i < 64; ++i) messages.push_back(batch_message("closing", i));
        for (const acemq::PublishResult& result : client->publish_batch(std::move(messages))) REQUIRE(result.confirmed);
        std::vector<acemq::Delivery> deliveries;
        for (int i = 0; i < 64; ++i) {
            std::optional<acemq::Delivery> delivery = client->pull("closing");
            REQUIRE(delivery);
            deliveries.push_back(std::move(*delivery));
        }
        for (acemq::Delivery& delivery : deliveries) delivery.ack();
        client->close();
        REQUIRE(testing_support::eventually([&] { return broker.broker()->sessions().empty(); }));
        const acemq::QueueSummary queue = closing_queue();
        CHECK(queue.ready == 0);
        CHECK(queue.unacked == 0);
    }
}

// The sender's side of a batch (wire::Batch), without a socket: what it hands over to send.
namespace {

using testing_support::bytes_of;

acemq::InboundMessage delivery_of(int number, std::size_t body_bytes) {
    acemq::OutboundMessage message = batch_message("q", number);
    message.body.resize(body_bytes, std::byte{'x'});
    return acemq::InboundMessage(std::move(message));
}

// Adds the delivery the way the broker does: written where it waits, its body as the bound.
std::optional<msgpack::sbuffer> add_delivery(wire::Batch& batch, std::uint64_t tag,
                                             const acemq::InboundMessage& message, std::size_t at_least) {
    return batch.add(at_least, [&](msgpack::sbuffer& onto) { wire::write_deliver(onto, 7, tag, message); });
}

// The delivery tags a frame carries, in order: one for a frame alone, one an entry for a batch.
std::vector<std::uint64_t> tags_in(const msgpack::sbuffer& frame) {
    const Bytes bytes = bytes_of(frame);
    const wire::Frame parsed = wire::Frame::parse(bytes);
    if (parsed.command() == Command::deliver) return {wire::read_deliver(parsed).delivery_tag};
    REQUIRE(parsed.command() == Command::batch);
    const msgpack::object_array& entries = wire::batch_entries(parsed);
    std::vector<std::uint64_t> tags;
    for (std::uint32_t index = 0; index < entries.size; ++index)
        tags.push_back(wire::read_deliver(wire::Frame::entry(entries, index)).delivery_tag);
    return tags;
}

}  // namespace

TEST_CASE("a batch's frames are written where they wait: one alone goes as it would alone, more as one batch") {
    const acemq::InboundMessage first = delivery_of(1, 64), second = delivery_of(2, 1000), third = delivery_of(3, 0);
    wire::Batch batch(1 << 20);
    CHECK(batch.empty());
    REQUIRE_FALSE(add_delivery(batch, 1, first, 64));
    CHECK_FALSE(batch.empty());
    // Alone, byte for byte the frame encode_deliver makes: no batch head before it.
    CHECK(bytes_of(batch.take()) == bytes_of(wire::encode_deliver(7, 1, first)));
    CHECK(batch.empty());

    REQUIRE_FALSE(add_delivery(batch, 1, first, 64));
    REQUIRE_FALSE(add_delivery(batch, 2, second, 1000));
    REQUIRE_FALSE(batch.add(wire::encode_deliver(7, 3, third)));
    const msgpack::sbuffer three = batch.take();
    CHECK(tags_in(three) == std::vector<std::uint64_t>{1, 2, 3});
    const Bytes three_bytes = bytes_of(three);
    const wire::Frame parsed = wire::Frame::parse(three_bytes);
    const msgpack::object_array& entries = wire::batch_entries(parsed);
    const wire::Deliver read = wire::read_deliver(wire::Frame::entry(entries, 1));
    CHECK(read.message.body().size() == 1000);
    CHECK(read.message.message_id() == "2");
    // Taken, it starts again from nothing: the next one goes alone.
    REQUIRE_FALSE(add_delivery(batch, 4, third, 0));
    CHECK(tags_in(batch.take()) == std::vector<std::uint64_t>{4});
}

TEST_CASE("a frame that would pass a batch's byte limit is sent after what waited, never in a frame too large") {
    const acemq::InboundMessage small = delivery_of(1, 40), large = delivery_of(2, 400);
    const std::size_t small_frame = wire::encode_deliver(7, 1, small).size();
    const std::size_t limit = 8 + 2 * small_frame + 100;

    SECTION("its lower bound says so before it is written") {
        wire::Batch batch(limit);
        CHECK(batch.fits(limit * 2));
        REQUIRE_FALSE(add_delivery(batch, 1, small, 40));
        CHECK(batch.fits(40));
        CHECK_FALSE(batch.fits(400));
        CHECK(bytes_of(batch.take()) == bytes_of(wire::encode_deliver(7, 1, small)));
        REQUIRE_FALSE(add_delivery(batch, 2, large, 400));
        CHECK(bytes_of(batch.take()) == bytes_of(wire::encode_deliver(7, 2, large)));
    }
    SECTION(
        "fits() not asked, or a bound too low: found once written, the one before goes alone, "
        "without the batch's head") {
        for (const std::size_t bound : {std::size_t{400}, std::size_t{0}}) {
            INFO("bound " << bound);
            wire::Batch batch(limit);
            REQUIRE_FALSE(add_delivery(batch, 1, small, 40));
            const std::optional<msgpack::sbuffer> before = add_delivery(batch, 2, large, bound);
            REQUIRE(before);
            CHECK(bytes_of(*before) == bytes_of(wire::encode_deliver(7, 1, small)));
            CHECK(bytes_of(batch.take()) == bytes_of(wire::encode_deliver(7, 2, large)));
        }
    }
    SECTION("a bound too low with two waiting: those two go as a batch of their own") {
        wire::Batch batch(limit);
        REQUIRE_FALSE(add_delivery(batch, 1, small, 40));
        REQUIRE_FALSE(add_delivery(batch, 2, small, 40));
        const std::optional<msgpack::sbuffer> before = add_delivery(batch, 3, large, 0);
        REQUIRE(before);
        CHECK(before->size() <= limit);
        CHECK(tags_in(*before) == std::vector<std::uint64_t>{1, 2});
        CHECK(tags_in(batch.take()) == std::vector<std::uint64_t>{3});
    }
    SECTION("a frame larger than the limit by itself still goes, alone") {
        wire::Batch batch(100);
        REQUIRE_FALSE(add_delivery(batch, 1, large, 400));
        CHECK(tags_in(batch.take()) == std::vector<std::uint64_t>{1});
    }
}

TEST_CASE("a batch holds at most max_batch_entries frames; the next starts another") {
    wire::Batch batch(std::numeric_limits<std::size_t>::max());
    for (std::uint64_t sequence = 1; sequence <= wire::max_batch_entries; ++sequence)
        REQUIRE_FALSE(batch.add(0, [&](msgpack::sbuffer& onto) { wire::write_confirm(onto, sequence, {}); }));
    const std::optional<msgpack::sbuffer> full =
        batch.add(0, [](msgpack::sbuffer& onto) { wire::write_confirm(onto, 4097, {}); });
    REQUIRE(full);
    const Bytes full_bytes = bytes_of(*full);
    const wire::Frame parsed = wire::Frame::parse(full_bytes);
    const msgpack::object_array& entries = wire::batch_entries(parsed);
    REQUIRE(entries.size == wire::max_batch_entries);
    CHECK(wire::read_confirm(wire::Frame::entry(entries, 0)).sequence == 1);
    CHECK(wire::read_confirm(wire::Frame::entry(entries, entries.size - 1)).sequence == wire::max_batch_entries);
    const msgpack::sbuffer rest = batch.take();
    const Bytes rest_bytes = bytes_of(rest);
    CHECK(wire::read_confirm(wire::Frame::parse(rest_bytes)).sequence == 4097);
}

TEST_CASE("a writer that throws adds nothing: what waited is sent as it was, without the torn frame") {
    const acemq::InboundMessage message = delivery_of(1, 64);
    const auto torn = [](msgpack::sbuffer& onto) {
        onto.write("\x9f\x03\x07", 3);
        throw std::runtime_error("the writer gave up");
    };
    SECTION("nothing waiting") {
        wire::Batch batch(1 << 20);
        CHECK_THROWS_WITH((void)batch.add(0, torn), "the writer gave up");
        CHECK(batch.empty());
        REQUIRE_FALSE(add_delivery(batch, 1, message, 64));
        CHECK(bytes_of(batch.take()) == bytes_of(wire::encode_deliver(7, 1, message)));
    }
    SECTION("one waiting, which the throw found made a batch's first entry") {
        wire::Batch batch(1 << 20);
        REQUIRE_FALSE(add_delivery(batch, 1, message, 64));
        CHECK_THROWS_WITH((void)batch.add(0, torn), "the writer gave up");
        CHECK(bytes_of(batch.take()) == bytes_of(wire::encode_deliver(7, 1, message)));
    }
    SECTION("two waiting") {
        wire::Batch batch(1 << 20);
        REQUIRE_FALSE(add_delivery(batch, 1, message, 64));
        REQUIRE_FALSE(add_delivery(batch, 2, message, 64));
        CHECK_THROWS_WITH((void)batch.add(0, torn), "the writer gave up");
        REQUIRE_FALSE(add_delivery(batch, 3, message, 64));
        CHECK(tags_in(batch.take()) == std::vector<std::uint64_t>{1, 2, 3});
    }
}
