// InboundMessage as a handle to one block: what it reads back, what its copies share, when a
// change copies, and a body past the inline bound moved rather than copied.
// Run under ThreadSanitizer and AddressSanitizer too (copies dropped on several threads).
#include <catch2/catch.hpp>

#include <optional>
#include <thread>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/transport.hpp>

using namespace acemq;

namespace {

constexpr std::size_t inline_bound = detail::MessageBlock::inline_body_bytes;

InboundParts parts_with_body(Bytes body) {
    return {.body = std::move(body),
            .content_type = "application/json",
            .exchange = "orders.x",
            .routing_key = "orders",
            .message_id = "0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f",
            .reply_to = "replies",
            .headers = {{"x-acemq-id", FieldValue("0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f")},
                        {"x-acemq-type", FieldValue("OrderPlaced")}},
            .redelivered = true,
            .decode_failure = ""};
}

Bytes bytes_counting(std::size_t size) {
    Bytes bytes(size);
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(i * 7);
    return bytes;
}

void check_reads_back(const InboundMessage& message, const Bytes& body) {
    CHECK(Bytes(message.body().begin(), message.body().end()) == body);
    CHECK(message.content_type() == "application/json");
    CHECK(message.exchange() == "orders.x");
    CHECK(message.routing_key() == "orders");
    CHECK(message.message_id() == "0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f");
    CHECK(message.reply_to() == "replies");
    CHECK(message.headers().at("x-acemq-type") == FieldValue("OrderPlaced"));
    CHECK(message.redelivered());
    CHECK(message.decode_failure().empty());
}

}  // namespace

TEST_CASE("a delivered message reads back every part, whatever its body's size") {
    for (const std::size_t size :
         {std::size_t{0}, std::size_t{1}, std::size_t{64}, inline_bound, inline_bound + 1, std::size_t{1} << 20}) {
        INFO("body of " << size << " bytes");
        const Bytes body = bytes_counting(size);
        const InboundMessage message(parts_with_body(body));
        check_reads_back(message, body);
        const InboundParts parts = message.parts();
        CHECK(parts.body == body);
        CHECK(parts.routing_key == "orders");
        CHECK(parts.headers == parts_with_body({}).headers);
        CHECK(parts.redelivered);
        check_reads_back(InboundMessage(std::move(message).parts()), body);
    }
}

TEST_CASE("a body up to the bound is held in the message's block, a larger one beside it") {
    const std::size_t without_body = InboundMessage(parts_with_body({})).heap_bytes();
    CHECK(InboundMessage(parts_with_body(Bytes(64))).heap_bytes() == without_body + 64);
    CHECK(InboundMessage(parts_with_body(Bytes(inline_bound))).heap_bytes() == without_body + inline_bound);
    // Apart: the block holds the Bytes (aligned after the texts), the body its own bytes.
    const std::size_t apart = InboundMessage(parts_with_body(Bytes(inline_bound + 1))).heap_bytes();
    CHECK(apart >= without_body + sizeof(Bytes) + inline_bound + 1);
    CHECK(apart < without_body + sizeof(Bytes) + alignof(Bytes) + inline_bound + 1);
}

TEST_CASE("a body past the bound is moved into the message and out of it, never copied") {
    Bytes body = bytes_counting(inline_bound * 4);
    const std::byte* const bytes = body.data();
    InboundMessage message(parts_with_body(std::move(body)));
    CHECK(message.body().data() == bytes);

    SECTION("held alone, its parts take the body itself") {
        InboundParts parts = std::move(message).parts();
        CHECK(parts.body.data() == bytes);
        CHECK(parts.body == bytes_counting(inline_bound * 4));
    }
    SECTION("shared, its parts are a copy and the other holder still reads the body") {
        const InboundMessage other = message;
        InboundParts parts = std::move(message).parts();
        CHECK(parts.body.data() != bytes);
        CHECK(parts.body == bytes_counting(inline_bound * 4));
        CHECK(other.body().data() == bytes);
        CHECK(Bytes(other.body().begin(), other.body().end()) == parts.body);
    }
}

TEST_CASE("copies share one block; marking one redelivered copies it first and leaves the others") {
    for (const std::size_t size : {std::size_t{64}, inline_bound * 2}) {
        INFO("body of " << size << " bytes");
        InboundParts parts = parts_with_body(bytes_counting(size));
        parts.redelivered = false;
        const InboundMessage first(std::move(parts));
        CHECK_FALSE(first.shared());
        InboundMessage second = first;
        CHECK(first.shared());
        CHECK(second.shared());
        CHECK(second.body().data() == first.body().data());
        CHECK(second.message_id().data() == first.message_id().data());

        second.set_redelivered(true);
        CHECK(second.redelivered());
        CHECK_FALSE(first.redelivered());
        CHECK_FALSE(first.shared());
        CHECK_FALSE(second.shared());
        CHECK(second.body().data() != first.body().data());
        CHECK(Bytes(second.body().begin(), second.body().end()) == bytes_counting(size));
        CHECK(second.headers() == first.headers());

        // Alone, it changes in place.
        const std::byte* const held = second.body().data();
        second.set_redelivered(false);
        CHECK_FALSE(second.redelivered());
        CHECK(second.body().data() == held);
    }
}

TEST_CASE("a codec's content type is a byte of the block, and reads back as its text") {
    InboundParts without = parts_with_body(Bytes(64));
    without.content_type.clear();
    const std::size_t base = InboundMessage(without).heap_bytes();
    for (const std::string_view known : detail::known_content_types) {
        INFO(known);
        InboundParts parts = parts_with_body(Bytes(64));
        parts.content_type = known;
        InboundMessage message(std::move(parts));
        CHECK(message.content_type() == known);
        CHECK(message.heap_bytes() == base);
        CHECK(message.parts().content_type == known);
        const InboundMessage shared = message;
        message.set_redelivered(false);  // a copy of the block, made because it is shared
        CHECK(message.content_type() == known);
        CHECK(message.routing_key() == "orders");
    }
    for (const std::string_view other : {"application/json; charset=utf-8", "Application/json", "application/jso",
                                         "application/jsonx", "text/html", "x"}) {
        INFO(other);
        InboundParts parts = parts_with_body(Bytes(64));
        parts.content_type = other;
        const InboundMessage message(std::move(parts));
        CHECK(message.content_type() == other);
        CHECK(message.heap_bytes() == base + other.size());
        CHECK(message.exchange() == "orders.x");
    }
    CHECK(InboundMessage(without).content_type().empty());
}

TEST_CASE("short texts past 64 KiB in all are refused, naming them; headers are not bounded so") {
    InboundParts most = parts_with_body({});
    most.content_type.clear();
    most.exchange.clear();
    most.message_id.clear();
    most.reply_to.clear();
    most.headers.clear();
    most.routing_key.assign(detail::MessageBlock::most_short_text_bytes, 'k');
    CHECK(InboundMessage(most).routing_key().size() == detail::MessageBlock::most_short_text_bytes);
    InboundParts too_many = most;
    too_many.reply_to = "r";
    CHECK_THROWS_MATCHES(InboundMessage(too_many), InvalidArgument,
                         Catch::Message("acemq: a delivery's content type, exchange, routing key, id, reply-to and "
                                        "decode failure come to 65536 bytes; at most 65535 in all (AMQP allows 255 "
                                        "for each)"));
    InboundParts large_headers = parts_with_body({});
    large_headers.headers = {{"big", FieldValue(std::string(200000, 'h'))}};
    CHECK(InboundMessage(large_headers).headers().at("big") == FieldValue(std::string(200000, 'h')));
}

TEST_CASE("an empty message reads as one with nothing in it") {
    InboundMessage empty;
    CHECK(empty.body().empty());
    CHECK(empty.message_id().empty());
    CHECK(empty.headers().empty());
    CHECK_FALSE(empty.redelivered());
    CHECK_FALSE(empty.shared());
    CHECK(empty.heap_bytes() == 0);
    InboundMessage moved_from(parts_with_body(Bytes(8)));
    const InboundMessage taker = std::move(moved_from);
    CHECK(taker.body().size() == 8);
    empty.set_redelivered(true);
    CHECK(empty.redelivered());
    CHECK(empty.routing_key().empty());
}

TEST_CASE("copies read and dropped on several threads at once leave the block whole until the last") {
    for (const std::size_t size : {std::size_t{64}, inline_bound * 2}) {
        std::optional<InboundMessage> original(parts_with_body(bytes_counting(size)));
        std::vector<std::thread> threads;
        std::vector<int> reads_ok(4, 0);
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t, copy = *original] {
                for (int round = 0; round < 2000; ++round) {
                    InboundMessage mine = copy;
                    reads_ok[t] += mine.body().size() == size && mine.routing_key() == "orders";
                }
            });
        original.reset();
        for (std::thread& thread : threads) thread.join();
        CHECK(reads_ok == std::vector<int>(4, 2000));
    }
}

namespace {

OutboundMessage published_with_body(Bytes body) {
    return {.exchange = "orders.x",
            .routing_key = "orders",
            .body = std::move(body),
            .content_type = "application/json",
            .message_id = "0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f",
            .headers = {{"x-acemq-correlation", FieldValue("0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f")},
                        {"x-acemq-id", FieldValue("0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f")},
                        {"x-acemq-type", FieldValue("OrderPlaced")},
                        {"z-nested", FieldValue(FieldArray{FieldValue("nested text")})}},
            .reply_to = "replies"};
}

}  // namespace

TEST_CASE("a published message is delivered as it was sent, its packed headers copied, not unpacked") {
    for (const std::size_t size : {std::size_t{0}, std::size_t{64}, inline_bound, inline_bound + 1}) {
        INFO("body of " << size << " bytes");
        const Bytes body = bytes_counting(size);
        const OutboundMessage sent = published_with_body(body);
        const InboundMessage message{OutboundMessage(sent)};
        CHECK(Bytes(message.body().begin(), message.body().end()) == body);
        CHECK(message.content_type() == "application/json");
        CHECK(message.exchange() == "orders.x");
        CHECK(message.routing_key() == "orders");
        CHECK(message.message_id() == sent.message_id);
        CHECK(message.reply_to() == "replies");
        CHECK_FALSE(message.redelivered());
        CHECK(message.decode_failure().empty());
        CHECK(message.headers() == sent.headers.table());
        // The same block as the delivery made of its parts: the id's texts are a reference to the
        // id there as well.
        const InboundMessage from_parts(InboundParts{.body = body,
                                                     .content_type = sent.content_type,
                                                     .exchange = sent.exchange,
                                                     .routing_key = sent.routing_key,
                                                     .message_id = sent.message_id,
                                                     .reply_to = sent.reply_to,
                                                     .headers = sent.headers.table()});
        CHECK(message.heap_bytes() == from_parts.heap_bytes());
        // Each of the two is its tag alone: its size byte and its 36 bytes are not there.
        CHECK(message.headers().packed_size() == sent.headers.packed().size() - 1 - 2 * (1 + sent.message_id.size()));
    }
    // A body past the bound is moved in, as from parts.
    Bytes large = bytes_counting(inline_bound * 4);
    const std::byte* const bytes = large.data();
    InboundMessage message(published_with_body(std::move(large)));
    CHECK(message.body().data() == bytes);
    CHECK(std::move(message).parts().body.data() == bytes);

    // An empty message, and one whose texts the block cannot hold.
    const InboundMessage empty{OutboundMessage{}};
    CHECK(empty.headers().empty());
    CHECK(empty.body().empty());
    CHECK(empty.message_id().empty());
    CHECK_THROWS_AS(InboundMessage(OutboundMessage{.routing_key = std::string(65'536, 'k')}), InvalidArgument);
}

TEST_CASE("a published message's nested texts equal to its id are copied as texts and read back") {
    OutboundMessage sent = published_with_body({});
    const Headers nested{{"list", FieldValue(FieldArray{FieldValue(sent.message_id)})},
                         {"table", FieldValue(FieldTable{{"id", FieldValue(sent.message_id)}})},
                         {"x-acemq-id", FieldValue(sent.message_id)}};
    sent.headers = nested;
    const InboundMessage message{OutboundMessage(sent)};
    CHECK(message.headers() == nested);
    CHECK(message.headers().has_nested_values());
    // Only the top one is a reference: the nested ones keep their size byte and 36 bytes.
    CHECK(message.headers().packed_size() == sent.headers.packed().size() - 1 - (1 + sent.message_id.size()));
}

TEST_CASE(
    "a message's headers packed for its id, for none or for another read back the same, the id's texts referred to") {
    const std::string id = "0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f";
    const std::string other = "1c8e0b63-6b4d-4e66-8a5f-7b2d3c4e5f60";
    const Headers table{{"x-acemq-causation", FieldValue(other)},
                        {"x-acemq-correlation", FieldValue(id)},
                        {"x-acemq-id", FieldValue(id)}};
    OutboundMessage sent = published_with_body(Bytes(64));
    sent.message_id = id;
    const InboundMessage from_parts(InboundParts{.body = Bytes(64),
                                                 .content_type = sent.content_type,
                                                 .exchange = sent.exchange,
                                                 .routing_key = sent.routing_key,
                                                 .message_id = id,
                                                 .reply_to = sent.reply_to,
                                                 .headers = table});
    for (const std::string& packed_for : {id, std::string(), other}) {
        INFO("packed for \"" << packed_for << "\"");
        sent.headers = PackedTable(table, packed_for);
        const InboundMessage message{OutboundMessage(sent)};
        CHECK(message.headers() == table);
        CHECK(message.headers().at("x-acemq-causation") == FieldValue(other));
        // Whatever it was packed for, the block refers to its own id, and only to it.
        CHECK(message.heap_bytes() == from_parts.heap_bytes());
    }
}
