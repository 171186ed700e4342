// The ZeroMQ frame reader against hostile peers (docs/zmq-protocol.md): every encode_* reads
// back what it wrote, field values of every kind included; then valid frames cut at every
// length, given huge length headers, another version, an unknown command or trailing bytes,
// and mutated at random, each through the check of the libFuzzer target
// (tests/fuzz/zmq_frames.hpp): only a ProtocolError may come out, and its text must say
// what was wrong. The seeded loop follows tests/support/fuzz_loop.hpp (ACEMQ_FUZZ_SEED,
// ACEMQ_FUZZ_SECONDS).
#include <catch2/catch.hpp>

#include "../../fuzz/zmq_frames.hpp"
#include "../../support/codec_bodies.hpp"
#include "../../support/fuzz_loop.hpp"
#include "../../support/msgpack_bytes.hpp"
#include "../../support/thrown.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace wire = acemq::zmq::wire;
using acemq::FieldArray;
using acemq::FieldTable;
using acemq::FieldTimestamp;
using acemq::FieldValue;
using testing_support::Loop;
using wire::Command;
using Bytes = std::vector<std::byte>;
using testing_support::bytes_of;

Bytes operator+(Bytes left, const Bytes& right) {
    left.insert(left.end(), right.begin(), right.end());
    return left;
}

// A frame and the bytes it refers into, kept together.
struct Parsed {
    Bytes bytes;
    wire::Frame frame;
};
Parsed parsed(const msgpack::sbuffer& buffer) {
    Bytes bytes = bytes_of(buffer);
    wire::Frame frame = wire::Frame::parse(bytes);
    return {std::move(bytes), std::move(frame)};
}

// What a refusal must say: which part of the frame was wrong, or which version it named.
bool clear(std::string_view text) {
    return text.starts_with("acemq: malformed zmq protocol frame: ") ||
           text.starts_with("acemq: zmq protocol version ");
}

// The check of the fuzz target, plus: a refusal says what was wrong.
void refused_clearly_or_read(const Bytes& input) {
    try {
        fuzz::read_zmq_frame(input);
    } catch (const wire::ProtocolError& error) {
        if (!clear(error.what())) throw std::runtime_error(std::string("an unclear refusal: ") + error.what());
    }
}

std::string frame_refusal_of(const Bytes& input) {
    return testing_support::what_of<wire::ProtocolError>([&] { fuzz::read_zmq_frame(input); });
}

// Random values of every field type, widths kept apart, so a round trip that merges two
// kinds (an int64 read back as an int32, a timestamp as an integer) fails.
struct Values {
    Loop& loop;

    std::uint64_t number() {
        static constexpr std::uint64_t edges[] = {
            0,     1,     127,        128,         255,      256,
            65535, 65536, 0xffffffff, 0x100000000, 1u << 31, std::numeric_limits<std::uint64_t>::max()};
        if (loop.below(3) == 0) return loop.rng()();
        return edges[loop.below(std::size(edges))];
    }
    // Now and then a long one, up to `longest` bytes.
    std::string text(std::size_t longest = 70200) {
        static constexpr std::string_view letters = "abcxyz-_ 09\"\\/\x01\xc3\xa9";
        std::string out;
        const std::size_t length = loop.below(16) == 0 ? 200 + loop.below(longest - 200) : loop.below(12);
        for (std::size_t n = length; n > 0; --n) out.push_back(letters[loop.below(letters.size())]);
        return out;
    }
    Bytes body() {
        switch (loop.below(8)) {
        case 0:
        case 1: return {};
        case 2: return loop.random_bytes(100000);
        default: return loop.random_bytes(40);
        }
    }
    std::int64_t wide() {
        static constexpr std::int64_t edges[] = {0, 5, -1, std::numeric_limits<std::int64_t>::min(),
                                                 std::numeric_limits<std::int64_t>::max()};
        return loop.below(2) == 0 ? static_cast<std::int64_t>(loop.rng()()) : edges[loop.below(std::size(edges))];
    }
    double real() {
        // NaN compares unequal to itself, so a round trip could not be checked with it.
        for (;;) {
            const double value = std::bit_cast<double>(loop.rng()());
            if (!std::isnan(value)) return loop.below(4) == 0 ? 0.5 : value;
        }
    }
    FieldValue value(int depth) {
        switch (loop.below(depth > 0 ? 11 : 9)) {
        case 0: return {};
        case 1: return loop.below(2) == 1;
        case 2: {
            static constexpr std::int32_t edges[] = {0, 5, -1, std::numeric_limits<std::int32_t>::min(),
                                                     std::numeric_limits<std::int32_t>::max()};
            return loop.below(2) == 0 ? static_cast<std::int32_t>(loop.rng()()) : edges[loop.below(std::size(edges))];
        }
        case 3: return wide();
        case 4: return number();
        case 5: return real();
        case 6: return text();
        case 7: return FieldValue(body());
        case 8: return FieldTimestamp(std::chrono::seconds(wide() / 2));
        case 9: {
            FieldArray array;
            for (std::size_t n = loop.below(4); n > 0; --n) array.push_back(value(depth - 1));
            return array;
        }
        default: return table(depth - 1);
        }
    }
    FieldTable table(int depth) {
        FieldTable table;
        for (std::size_t n = loop.below(6); n > 0; --n) table.insert_or_assign(text(), value(depth));
        return table;
    }
    acemq::ExchangeDeclaration exchange() {
        return {.name = text(),
                .kind = static_cast<acemq::ExchangeKind>(loop.below(4)),
                .durable = loop.below(2) == 1,
                .auto_delete = loop.below(2) == 1,
                .arguments = table(2)};
    }
    acemq::QueueDeclaration queue() {
        return {.name = text(),
                .type = static_cast<acemq::QueueType>(loop.below(3)),
                .durable = loop.below(2) == 1,
                .exclusive = loop.below(2) == 1,
                .auto_delete = loop.below(2) == 1,
                .arguments = table(2)};
    }
    // A delivery's five texts come to at most 64 KiB in all (what a message holds), so each
    // at most a fifth of it.
    acemq::InboundMessage inbound() {
        constexpr std::size_t longest = acemq::detail::MessageBlock::most_short_text_bytes / 5;
        acemq::InboundParts message;
        message.body = body();
        message.content_type = text(longest);
        message.exchange = text(longest);
        message.routing_key = text(longest);
        message.message_id = text(longest);
        message.reply_to = text(longest);
        message.headers = table(3);
        message.redelivered = loop.below(2) == 1;
        return acemq::InboundMessage(std::move(message));
    }
    acemq::OutboundMessage outbound() {
        return {.exchange = text(),
                .routing_key = text(),
                .body = body(),
                .content_type = text(),
                .message_id = text(),
                .headers = table(3),
                .reply_to = text(),
                .persistent = loop.below(2) == 1,
                .mandatory = loop.below(2) == 1};
    }
};

void same_message(const acemq::InboundMessage& read, const acemq::InboundMessage& written) {
    CHECK(std::ranges::equal(read.body(), written.body()));
    CHECK(read.content_type() == written.content_type());
    CHECK(read.exchange() == written.exchange());
    CHECK(read.routing_key() == written.routing_key());
    CHECK(read.message_id() == written.message_id());
    CHECK(read.reply_to() == written.reply_to());
    CHECK(read.headers() == written.headers());
    CHECK(read.redelivered() == written.redelivered());
}

// One frame of every command, with values from `values`; each is checked to read back.
std::vector<Bytes> round_trips(Values& values) {
    std::vector<Bytes> frames;
    const auto keep = [&](const Parsed& p) { frames.push_back(p.bytes); };
    {
        const std::uint64_t request = values.number();
        const std::string name = values.text();
        const auto heartbeat = static_cast<std::uint32_t>(values.number());
        const Parsed p = parsed(wire::encode_hello(request, name, heartbeat));
        const wire::Hello hello = wire::read_hello(p.frame);
        CHECK(hello.request == request);
        CHECK(hello.client_name == name);
        CHECK(hello.heartbeat_millis == heartbeat);
        keep(p);
    }
    {
        std::vector<acemq::ExchangeDeclaration> exchanges;
        std::vector<acemq::QueueDeclaration> queues;
        std::vector<acemq::BindingDeclaration> bindings;
        for (std::size_t n = values.loop.below(3); n > 0; --n) exchanges.push_back(values.exchange());
        for (std::size_t n = values.loop.below(3); n > 0; --n) queues.push_back(values.queue());
        for (std::size_t n = values.loop.below(3); n > 0; --n)
            bindings.push_back({.queue = values.text(),
                                .exchange = values.text(),
                                .routing_key = values.text(),
                                .arguments = values.table(2)});
        const std::uint64_t request = values.number();
        const Parsed p = parsed(wire::encode_declare(request, exchanges, queues, bindings));
        const wire::Declare declare = wire::read_declare(p.frame);
        CHECK(declare.request == request);
        CHECK(declare.exchanges == exchanges);
        CHECK(declare.queues == queues);
        CHECK(declare.bindings == bindings);
        keep(p);
    }
    {
        const std::uint64_t sequence = values.number();
        const acemq::OutboundMessage message = values.outbound();
        const Parsed p = parsed(wire::encode_publish(sequence, message));
        const wire::Publish publish = wire::read_publish(p.frame);
        CHECK(publish.sequence == sequence);
        CHECK(publish.message.exchange == message.exchange);
        CHECK(publish.message.routing_key == message.routing_key);
        CHECK(publish.message.body == message.body);
        CHECK(publish.message.content_type == message.content_type);
        CHECK(publish.message.message_id == message.message_id);
        CHECK(publish.message.headers == message.headers);
        CHECK(publish.message.reply_to == message.reply_to);
        CHECK(publish.message.persistent == message.persistent);
        CHECK(publish.message.mandatory == message.mandatory);
        keep(p);
    }
    {
        const std::uint64_t request = values.number();
        const std::string queue = values.text();
        const auto prefetch = static_cast<std::uint16_t>(values.number());
        const std::string tag = values.text();
        const Parsed p = parsed(wire::encode_consume(request, queue, prefetch, tag));
        const wire::Consume consume = wire::read_consume(p.frame);
        CHECK(consume.request == request);
        CHECK(consume.queue == queue);
        CHECK(consume.prefetch == prefetch);
        CHECK(consume.tag == tag);
        keep(p);
    }
    for (Command command : {Command::cancel, Command::release}) {
        const std::uint64_t request = values.number();
        const std::uint64_t consumer = values.number();
        const Parsed p = parsed(wire::encode_consumer_request(command, request, consumer));
        CHECK(p.frame.command() == command);
        const wire::ConsumerRequest read = wire::read_consumer_request(p.frame);
        CHECK(read.request == request);
        CHECK(read.consumer == consumer);
        keep(p);
    }
    for (std::optional<bool> requeue : {std::optional<bool>{}, std::optional(true), std::optional(false)}) {
        const std::uint64_t tag = values.number();
        const Parsed p = parsed(wire::encode_settle(tag, requeue));
        CHECK(p.frame.command() == (requeue ? Command::nack : Command::ack));
        const wire::Settle settle = wire::read_settle(p.frame);
        CHECK(settle.delivery_tag == tag);
        CHECK(settle.requeue == requeue.value_or(false));
        keep(p);
    }
    for (Command command : {Command::pull, Command::depth, Command::exists, Command::remove}) {
        const std::uint64_t request = values.number();
        const std::string queue = values.text();
        const Parsed p = parsed(wire::encode_queue_request(command, request, queue));
        CHECK(p.frame.command() == command);
        const wire::QueueRequest read = wire::read_queue_request(p.frame);
        CHECK(read.request == request);
        CHECK(read.queue == queue);
        keep(p);
    }
    {
        const std::uint64_t request = values.number();
        const Parsed p = parsed(wire::encode_ping(request));
        CHECK(p.frame.command() == Command::ping);
        CHECK(wire::read_request(p.frame) == request);
        keep(p);
    }
    for (Command command : {Command::heartbeat, Command::bye}) {
        const Parsed p = parsed(wire::encode_bare(command));
        CHECK(p.frame.command() == command);
        CHECK(p.frame.size() == 0);
        keep(p);
    }
    {
        const std::uint64_t request = values.number();
        const std::string name = values.text();
        const auto heartbeat = static_cast<std::uint32_t>(values.number());
        const std::uint64_t max_frame = values.number();
        const Parsed p = parsed(wire::encode_welcome(request, name, heartbeat, max_frame));
        const wire::Welcome welcome = wire::read_welcome(p.frame);
        CHECK(welcome.request == request);
        CHECK(welcome.broker_name == name);
        CHECK(welcome.heartbeat_millis == heartbeat);
        CHECK(welcome.max_frame_bytes == max_frame);
        keep(p);
    }
    {
        const std::uint64_t request = values.number();
        const std::uint64_t value = values.number();
        const bool flag = values.loop.below(2) == 1;
        const Parsed nil = parsed(wire::encode_reply_nil(request));
        CHECK(wire::read_request(nil.frame) == request);
        CHECK(nil.frame.is_nil(1));
        CHECK(!wire::read_pulled(nil.frame));
        const Parsed number = parsed(wire::encode_reply_unsigned(request, value));
        CHECK(wire::read_request(number.frame) == request);
        CHECK(number.frame.unsigned_at(1, "value") == value);
        const Parsed boolean = parsed(wire::encode_reply_bool(request, flag));
        CHECK(boolean.frame.bool_at(1, "value") == flag);
        const std::string trouble = values.text();
        const Parsed ping = parsed(wire::encode_reply_ping(request, trouble));
        CHECK(wire::read_request(ping.frame) == request);
        CHECK(ping.frame.is_nil(1));
        CHECK(wire::read_ping_reply(ping.frame) == trouble);
        // A broker from before `trouble` answers a ping with two fields: no trouble.
        CHECK(wire::read_ping_reply(nil.frame).empty());
        keep(nil);
        keep(number);
        keep(boolean);
        keep(ping);
    }
    {
        const std::uint64_t request = values.number();
        const std::uint64_t tag = values.number();
        const acemq::InboundMessage message = values.inbound();
        const Parsed p = parsed(wire::encode_reply_pulled(request, tag, message));
        CHECK(wire::read_request(p.frame) == request);
        const std::optional<wire::Deliver> pulled = wire::read_pulled(p.frame);
        REQUIRE(pulled);
        CHECK(pulled->delivery_tag == tag);
        same_message(pulled->message, message);
        keep(p);
    }
    for (auto kind : {wire::FailureKind::error, wire::FailureKind::topology, wire::FailureKind::invalid_argument,
                      wire::FailureKind::usage}) {
        const std::uint64_t request = values.number();
        const std::string text = values.text();
        const Parsed p = parsed(wire::encode_failure(request, kind, text));
        const wire::Failure failure = wire::read_failure(p.frame);
        CHECK(failure.request == request);
        CHECK(failure.kind == kind);
        CHECK(failure.text == text);
        keep(p);
    }
    for (std::size_t why = 0; why <= static_cast<std::size_t>(acemq::PublishResult::Unconfirmed::unsent); ++why) {
        const std::uint64_t sequence = values.number();
        const acemq::PublishResult result{.confirmed = values.loop.below(2) == 1,
                                          .routed = values.loop.below(2) == 1,
                                          .return_reason = values.text(),
                                          .why = static_cast<acemq::PublishResult::Unconfirmed>(why)};
        const Parsed p = parsed(wire::encode_confirm(sequence, result));
        const wire::Confirm confirm = wire::read_confirm(p.frame);
        CHECK(confirm.sequence == sequence);
        CHECK(confirm.result.confirmed == result.confirmed);
        CHECK(confirm.result.routed == result.routed);
        CHECK(confirm.result.return_reason == result.return_reason);
        CHECK(confirm.result.why == result.why);
        keep(p);
    }
    {
        const std::uint64_t consumer = values.number();
        const std::uint64_t tag = values.number();
        const acemq::InboundMessage message = values.inbound();
        const Parsed p = parsed(wire::encode_deliver(consumer, tag, message));
        const wire::Deliver deliver = wire::read_deliver(p.frame);
        CHECK(deliver.consumer == consumer);
        CHECK(deliver.delivery_tag == tag);
        same_message(deliver.message, message);
        keep(p);
    }
    {
        // A batch (version 3): each entry reads back as the frame it would be alone.
        const std::uint64_t sequence = values.number(), consumer = values.number(), tag = values.number();
        const acemq::OutboundMessage published = values.outbound();
        const acemq::InboundMessage delivered = values.inbound();
        std::vector<msgpack::sbuffer> alone;
        alone.push_back(wire::encode_publish(sequence, published));
        alone.push_back(wire::encode_settle(tag, true));
        alone.push_back(wire::encode_confirm(sequence, acemq::PublishResult{}));
        alone.push_back(wire::encode_deliver(consumer, tag, delivered));
        wire::Batch batch(std::numeric_limits<std::size_t>::max());
        for (msgpack::sbuffer& frame : alone) CHECK_FALSE(batch.add(std::move(frame)));
        const Parsed p = parsed(batch.take());
        CHECK(p.frame.command() == Command::batch);
        CHECK(p.frame.version() == 3);
        const msgpack::object_array& entries = wire::batch_entries(p.frame);
        REQUIRE(entries.size == 4);
        const wire::Publish publish = wire::read_publish(wire::Frame::entry(entries, 0));
        CHECK(publish.sequence == sequence);
        CHECK(publish.message.body == published.body);
        CHECK(publish.message.headers == published.headers);
        const wire::Settle settle = wire::read_settle(wire::Frame::entry(entries, 1));
        CHECK(settle.delivery_tag == tag);
        CHECK(settle.requeue);
        CHECK(wire::read_confirm(wire::Frame::entry(entries, 2)).sequence == sequence);
        const wire::Deliver deliver = wire::read_deliver(wire::Frame::entry(entries, 3));
        CHECK(deliver.consumer == consumer);
        same_message(deliver.message, delivered);
        keep(p);
    }
    for (auto code : {wire::ErrorCode::malformed, wire::ErrorCode::unsupported_version,
                      wire::ErrorCode::unknown_command, wire::ErrorCode::no_session}) {
        const std::uint64_t request = values.number();
        const std::string text = values.text();
        const Parsed p = parsed(wire::encode_error(request, code, text));
        const wire::ErrorFrame error = wire::read_error(p.frame);
        CHECK(error.request == request);
        CHECK(error.code == code);
        CHECK(error.text == text);
        keep(p);
    }
    for (std::uint8_t call = 0; call <= static_cast<std::uint8_t>(wire::Call::backup); ++call) {
        const wire::ManageRequest request{.request = values.number(),
                                          .call = static_cast<wire::Call>(call),
                                          .name = values.text(),
                                          .browse = {.from = values.number(), .count = values.number()},
                                          .remove = {.even_if_consumed = values.loop.below(2) == 1}};
        const Parsed p = parsed(wire::encode_manage(request));
        const wire::ManageRequest read = wire::read_manage(p.frame);
        CHECK(read.request == request.request);
        CHECK(read.call == request.call);
        const bool named = request.call >= wire::Call::browse;
        CHECK(read.name == (named ? request.name : ""));
        if (request.call == wire::Call::browse) {
            CHECK(read.browse.from == request.browse.from);
            CHECK(read.browse.count == request.browse.count);
        }
        if (request.call == wire::Call::delete_queue)
            CHECK(read.remove.even_if_consumed == request.remove.even_if_consumed);
        keep(p);
    }
    {
        const std::uint64_t request = values.number();
        const auto reason = static_cast<acemq::ManagementError::Reason>(values.loop.below(6));
        const std::string text = values.text();
        const Parsed p = parsed(wire::encode_refusal(request, reason, text));
        const wire::Refusal refusal = wire::read_refusal(p.frame);
        CHECK(refusal.request == request);
        CHECK(refusal.reason == reason);
        CHECK(refusal.text == text);
        keep(p);
    }
    const auto maybe = [&]<class Duration>(Duration) -> std::optional<Duration> {
        if (values.loop.below(2) == 0) return std::nullopt;
        return Duration(static_cast<std::int64_t>(values.number() >> 1));
    };
    {
        acemq::BrokerInfo info{
            .product = values.text(),
            .version = values.text(),
            .name = values.text(),
            .uptime = std::chrono::seconds(static_cast<std::int64_t>(values.number() >> 1)),
            .data_file = values.text(),
            .data_bytes = values.number(),
            .wal_bytes = values.number(),
            .free_disk_bytes = values.loop.below(2) == 0 ? std::nullopt : std::optional(values.number()),
            .opens = values.number(),
            .quarantined = values.number(),
            .commits = values.number(),
            .commit_latency_mean = maybe(std::chrono::microseconds()),
            .commit_latency_max = maybe(std::chrono::microseconds()),
            .details = {}};
        for (std::size_t n = values.loop.below(4); n > 0; --n) info.details.emplace_back(values.text(), values.text());
        const Parsed p = parsed(wire::encode_info_reply(7, info));
        const acemq::BrokerInfo read = wire::read_info_reply(p.frame);
        CHECK(std::tie(read.product, read.version, read.name, read.uptime, read.data_file, read.data_bytes,
                       read.wal_bytes, read.free_disk_bytes, read.opens, read.quarantined, read.commits,
                       read.commit_latency_mean, read.commit_latency_max, read.details) ==
              std::tie(info.product, info.version, info.name, info.uptime, info.data_file, info.data_bytes,
                       info.wal_bytes, info.free_disk_bytes, info.opens, info.quarantined, info.commits,
                       info.commit_latency_mean, info.commit_latency_max, info.details));
        keep(p);
    }
    {
        std::vector<acemq::ExchangeSummary> exchanges;
        std::vector<acemq::QueueSummary> queues;
        std::vector<acemq::SessionSummary> sessions;
        for (std::size_t n = values.loop.below(3); n > 0; --n) {
            acemq::ExchangeDeclaration exchange = values.exchange();
            exchanges.push_back({.name = std::move(exchange.name),
                                 .kind = exchange.kind,
                                 .durable = exchange.durable,
                                 .auto_delete = exchange.auto_delete,
                                 .arguments = std::move(exchange.arguments)});
        }
        for (std::size_t n = values.loop.below(3); n > 0; --n) {
            acemq::QueueDeclaration queue = values.queue();
            queues.push_back({.name = std::move(queue.name),
                              .type = queue.type,
                              .durable = queue.durable,
                              .exclusive = queue.exclusive,
                              .auto_delete = queue.auto_delete,
                              .ready = values.number(),
                              .unacked = values.number(),
                              .consumers = values.number(),
                              .bytes = values.number(),
                              .oldest_age = maybe(std::chrono::milliseconds()),
                              .arguments = std::move(queue.arguments)});
        }
        for (std::size_t n = values.loop.below(3); n > 0; --n)
            sessions.push_back(
                {.peer = values.text(),
                 .name = values.text(),
                 .since = std::chrono::system_clock::time_point(std::chrono::milliseconds(values.number() >> 24)),
                 .consumers = values.number(),
                 .unacked = values.number()});
        const Parsed exchanges_reply = parsed(wire::encode_exchanges_reply(1, exchanges));
        const auto exchanges_read = wire::read_exchanges_reply(exchanges_reply.frame);
        REQUIRE(exchanges_read.size() == exchanges.size());
        for (std::size_t i = 0; i < exchanges.size(); ++i)
            CHECK(std::tie(exchanges_read[i].name, exchanges_read[i].kind, exchanges_read[i].durable,
                           exchanges_read[i].auto_delete, exchanges_read[i].arguments) ==
                  std::tie(exchanges[i].name, exchanges[i].kind, exchanges[i].durable, exchanges[i].auto_delete,
                           exchanges[i].arguments));
        const Parsed queues_reply = parsed(wire::encode_queues_reply(2, queues));
        const auto queues_read = wire::read_queues_reply(queues_reply.frame);
        REQUIRE(queues_read.size() == queues.size());
        for (std::size_t i = 0; i < queues.size(); ++i) {
            const acemq::QueueSummary &a = queues_read[i], &b = queues[i];
            CHECK(std::tie(a.name, a.type, a.durable, a.exclusive, a.auto_delete, a.ready, a.unacked, a.consumers,
                           a.bytes, a.oldest_age,
                           a.arguments) == std::tie(b.name, b.type, b.durable, b.exclusive, b.auto_delete, b.ready,
                                                    b.unacked, b.consumers, b.bytes, b.oldest_age, b.arguments));
        }
        const Parsed sessions_reply = parsed(wire::encode_sessions_reply(3, sessions));
        const auto sessions_read = wire::read_sessions_reply(sessions_reply.frame);
        REQUIRE(sessions_read.size() == sessions.size());
        for (std::size_t i = 0; i < sessions.size(); ++i)
            CHECK(std::tie(sessions_read[i].peer, sessions_read[i].name, sessions_read[i].since,
                           sessions_read[i].consumers,
                           sessions_read[i].unacked) == std::tie(sessions[i].peer, sessions[i].name, sessions[i].since,
                                                                 sessions[i].consumers, sessions[i].unacked));
        std::vector<acemq::BindingDeclaration> bindings{{.queue = values.text(),
                                                         .exchange = values.text(),
                                                         .routing_key = values.text(),
                                                         .arguments = values.table(2)}};
        const Parsed bindings_reply = parsed(wire::encode_bindings_reply(4, bindings));
        CHECK(wire::read_bindings_reply(bindings_reply.frame) == bindings);
        const acemq::BackupResult backup{.path = values.text(), .bytes = values.number(), .messages = values.number()};
        const Parsed backup_reply = parsed(wire::encode_backup_reply(5, backup));
        const acemq::BackupResult backup_read = wire::read_backup_reply(backup_reply.frame);
        CHECK(std::tie(backup_read.path, backup_read.bytes, backup_read.messages) ==
              std::tie(backup.path, backup.bytes, backup.messages));
        for (const Parsed* p : {&exchanges_reply, &queues_reply, &sessions_reply, &bindings_reply, &backup_reply})
            keep(*p);
    }
    {
        std::vector<acemq::BrowsedMessage> messages;
        for (std::size_t n = values.loop.below(3); n > 0; --n)
            messages.push_back(
                {.position = values.number(), .message = values.inbound(), .persistent = values.loop.below(2) == 1});
        wire::BrowseReply reply(values.number(), std::numeric_limits<std::size_t>::max());
        for (const acemq::BrowsedMessage& message : messages) REQUIRE(reply.add(message));
        const bool more = values.loop.below(2) == 1;
        const Parsed p = parsed(reply.finish(more));
        const wire::Browsed read = wire::read_browse_reply(p.frame);
        CHECK(read.more == more);
        REQUIRE(read.messages.size() == messages.size());
        for (std::size_t i = 0; i < messages.size(); ++i) {
            CHECK(read.messages[i].position == messages[i].position);
            CHECK(read.messages[i].persistent == messages[i].persistent);
            same_message(read.messages[i].message, messages[i].message);
        }
        keep(p);
    }
    return frames;
}

// A publish whose headers hold `value`, as the broker reads it.
FieldValue through_headers(const FieldValue& value) {
    acemq::OutboundMessage message;
    message.headers = {{"v", value}};
    const Parsed p = parsed(wire::encode_publish(1, message));
    return wire::read_publish(p.frame).message.headers.at("v");
}

// Headers nested `levels` tables deep.
FieldTable nested(int levels) {
    FieldTable table{{"leaf", FieldValue(std::int32_t{1})}};
    for (int i = 1; i < levels; ++i) table = FieldTable{{"in", FieldValue(std::move(table))}};
    return table;
}

}  // namespace

TEST_CASE("zmq frames: every encode_* reads back what it wrote, whatever the values") {
    Loop loop("zmq round trips");
    Values values{loop};
    std::size_t frames = 0;
    loop.run([&] { return loop.random_bytes(0); }, [&](const Bytes&) { frames += round_trips(values).size(); });
    CHECK(frames > 0);
}

TEST_CASE("zmq frames: field values keep their type through a frame") {
    CHECK(through_headers(std::int32_t{5}).holds<std::int32_t>());
    CHECK(through_headers(std::int64_t{5}).holds<std::int64_t>());
    CHECK(through_headers(std::uint64_t{5}).holds<std::uint64_t>());
    CHECK(through_headers(FieldTimestamp(std::chrono::seconds(5))).holds<FieldTimestamp>());
    // msgpack-c would write a whole double as an integer; the protocol keeps it a float64.
    CHECK(through_headers(2.0) == FieldValue(2.0));
    CHECK(through_headers(1099511627776.0) == FieldValue(1099511627776.0));
    CHECK(through_headers(-3.0) == FieldValue(-3.0));
    CHECK(std::signbit(std::get<double>(through_headers(-0.0).get())));
    CHECK(through_headers(std::int64_t{-5}) == FieldValue(std::int64_t{-5}));
    CHECK(through_headers(FieldTimestamp(std::chrono::seconds(-5))) ==
          FieldValue(FieldTimestamp(std::chrono::seconds(-5))));
    CHECK(through_headers(std::numeric_limits<std::int32_t>::min()) ==
          FieldValue(std::numeric_limits<std::int32_t>::min()));
    CHECK(through_headers(FieldArray{}) == FieldValue(FieldArray{}));
    CHECK(through_headers(FieldValue(acemq::Bytes{})) == FieldValue(acemq::Bytes{}));
    CHECK(through_headers(FieldTable{}) == FieldValue(FieldTable{}));
    // 64 levels of header tables (RabbitMQ's limit) fit; the frame's limit is 72 in all.
    CHECK(through_headers(nested(64)) == FieldValue(nested(64)));
}

TEST_CASE("zmq frames: a large body reads back byte for byte") {
    acemq::OutboundMessage message;
    message.body.resize(3 * 1024 * 1024);
    for (std::size_t i = 0; i < message.body.size(); ++i) message.body[i] = static_cast<std::byte>(i * 7 + i / 256);
    const Parsed p = parsed(wire::encode_publish(9, message));
    CHECK(wire::read_publish(p.frame).message.body == message.body);
}

TEST_CASE("zmq frames: a delivery whose texts a message cannot hold is refused as malformed, saying so") {
    // A deliver frame as a peer could write it, its routing key 65,536 bytes long.
    msgpack::sbuffer buffer;
    msgpack::packer<msgpack::sbuffer> out(buffer);
    out.pack_array(4 + acemq::message_pack::message_fields);
    out.pack(wire::version);
    out.pack(static_cast<std::uint8_t>(wire::Command::deliver));
    out.pack(std::uint64_t{1});
    out.pack(std::uint64_t{2});
    acemq::message_pack::pack_text(out, "");
    acemq::message_pack::pack_text(out, std::string(65536, 'k'));
    acemq::message_pack::pack_bytes(out, {});
    acemq::message_pack::pack_text(out, "application/json");
    acemq::message_pack::pack_text(out, "id-1");
    out.pack_map(0);
    acemq::message_pack::pack_text(out, "");
    out.pack(false);
    const Bytes frame = bytes_of(buffer);
    const std::string text =
        testing_support::what_of<wire::ProtocolError>([&] { (void)wire::read_deliver(wire::Frame::parse(frame)); });
    CHECK(text ==
          "acemq: malformed zmq protocol frame: a delivery's content type, exchange, routing key, id, reply-to and "
          "decode failure come to 65540 bytes; at most 65535 in all (AMQP allows 255 for each)");
}

TEST_CASE("zmq frames: a valid frame cut short anywhere is refused as malformed") {
    Loop loop("zmq truncation");
    Values values{loop};
    for (const Bytes& frame : round_trips(values)) {
        // Long frames are cut at every length near each end and at a stride between.
        for (std::size_t cut = 0; cut < frame.size(); cut += (cut < 300 || frame.size() - cut < 300) ? 1 : 97) {
            const std::string text = testing_support::what_of<wire::ProtocolError>(
                [&] { (void)wire::Frame::parse(std::span(frame).first(cut)); });
            if (!text.starts_with("acemq: malformed zmq protocol frame: "))
                FAIL("cut at " << cut << " of " << testing_support::hex(frame) << ": " << text);
        }
    }
    // Then frames of fresh values, each cut at a random length, until the loop's time is up.
    std::vector<Bytes> batch;
    loop.run(
        [&] {
            if (batch.empty()) batch = round_trips(values);
            Bytes frame = std::move(batch.back());
            batch.pop_back();
            frame.resize(loop.below(frame.size()));
            return frame;
        },
        [](const Bytes& cut) {
            try {
                (void)wire::Frame::parse(cut);
            } catch (const wire::ProtocolError& error) {
                const std::string text = error.what();
                if (!text.starts_with("acemq: malformed zmq protocol frame: "))
                    throw std::runtime_error("refused, but not as malformed: " + text);
                return;
            }
            throw std::runtime_error("a frame cut short was read as whole");
        });
}

TEST_CASE("zmq frames: huge length headers are refused before anything is reserved") {
    const Bytes ping_head = bytes_of({0x93, 0x01, 0x0d});  // [1, ping, <request>]
    const Bytes huge[] = {
        bytes_of({0xdd, 0xff, 0xff, 0xff, 0xff}),        // array32
        bytes_of({0xdf, 0xff, 0xff, 0xff, 0xff}),        // map32
        bytes_of({0xdb, 0xff, 0xff, 0xff, 0xff}),        // str32
        bytes_of({0xc6, 0xff, 0xff, 0xff, 0xff}),        // bin32
        bytes_of({0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}),  // ext32
        bytes_of({0xdc, 0xff, 0xff}),                    // array16
        bytes_of({0xde, 0xff, 0xff}),                    // map16
    };
    for (const Bytes& header : huge) {
        INFO(testing_support::hex(header));
        CHECK(frame_refusal_of(header).starts_with("acemq: malformed zmq protocol frame: "));
        CHECK(frame_refusal_of(ping_head + header).starts_with("acemq: malformed zmq protocol frame: "));
        CHECK(frame_refusal_of(ping_head + header + Bytes(64, std::byte{0xc0}))
                  .starts_with("acemq: malformed zmq protocol frame: "));
    }
    CHECK_THAT(frame_refusal_of(bytes_of({0xdd, 0xff, 0xff, 0xff, 0xff}) + Bytes(64, std::byte{0xc0})),
               Catch::Contains("declares more elements than the frame has bytes"));
    // In a publish's headers, where a peer would put it.
    acemq::OutboundMessage message;
    message.headers = {{"h", FieldValue(FieldArray{FieldValue(true)})}};
    Bytes publish = bytes_of(wire::encode_publish(1, message));
    const auto array = std::find(publish.begin(), publish.end(), std::byte{0x91});  // the one-element array
    REQUIRE(array != publish.end());
    *array = std::byte{0xdd};
    publish.insert(array + 1, {std::byte{0xff}, std::byte{0xff}, std::byte{0xff}, std::byte{0xff}});
    CHECK_THAT(frame_refusal_of(publish), Catch::Contains("declares more elements than the frame has bytes"));
}

TEST_CASE("zmq frames: nesting past 72 levels is refused") {
    Bytes deep;
    for (int i = 0; i < 100; ++i) deep.push_back(std::byte{0x91});
    deep.push_back(std::byte{0xc0});
    CHECK_THAT(frame_refusal_of(deep), Catch::Contains("nest deeper than 72 levels"));
    acemq::OutboundMessage message;
    message.headers = nested(80);
    CHECK_THAT(frame_refusal_of(bytes_of(wire::encode_publish(1, message))),
               Catch::Contains("nest deeper than 72 levels"));
}

TEST_CASE("zmq frames: another version is refused as such, whatever follows") {
    for (const Bytes& frame : {bytes_of({0x93, 0x04, 0x0d, 0x07}), bytes_of({0x93, 0xcc, 0x04, 0x0d, 0x07}),
                               bytes_of({0x92, 0x00, 0x0d}), bytes_of({0x93, 0x04, 0xcc, 0xc8, 0x01}),
                               bytes_of({0x92, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0d})}) {
        INFO(testing_support::hex(frame));
        const std::string text =
            testing_support::what_of<wire::ProtocolError>([&] { (void)wire::Frame::parse(frame); });
        CHECK(text.starts_with("acemq: zmq protocol version "));
        CHECK_THAT(text, Catch::Contains("this side speaks versions 1 to 3"));
        CHECK(wire::is_unsupported_version(wire::ProtocolError(text)));
    }
    CHECK_THAT(frame_refusal_of(bytes_of({0x93, 0x04, 0x0d, 0x07})), Catch::Contains("version 4 is not spoken here"));
    // Version 1's commands are read in a frame of either version (docs/zmq-protocol.md §9).
    CHECK(wire::Frame::parse(bytes_of({0x93, 0x02, 0x0d, 0x07})).command() == Command::ping);
    CHECK(wire::Frame::parse(bytes_of({0x93, 0x02, 0x0d, 0x07})).version() == 2);
    // A version that is not an unsigned integer is malformed, not another version.
    const std::string negative = frame_refusal_of(bytes_of({0x93, 0xff, 0x0d, 0x07}));
    CHECK_THAT(negative, Catch::Contains("field version should be an unsigned integer, is integer"));
    CHECK(!wire::is_unsupported_version(wire::ProtocolError(negative)));
}

TEST_CASE("zmq frames: unknown commands, missing fields, wrong types and trailing bytes are named") {
    // manage (16) and refusal (38) are commands of version 2 only.
    CHECK_THAT(frame_refusal_of(bytes_of({0x95, 0x01, 0x10, 0x07, 0xa4, 'i', 'n', 'f', 'o', 0x90})),
               Catch::Contains("command 16 is unknown in protocol version 1"));
    CHECK_THAT(frame_refusal_of(bytes_of({0x95, 0x01, 0x26, 0x07, 0x00, 0xa0})),
               Catch::Contains("command 38 is unknown in protocol version 1"));
    CHECK_NOTHROW(fuzz::read_zmq_frame(bytes_of({0x95, 0x02, 0x10, 0x07, 0xa4, 'i', 'n', 'f', 'o', 0x90})));
    CHECK_THAT(frame_refusal_of(bytes_of({0x93, 0x02, 0x11, 0x07})), Catch::Contains("command 17 is unknown"));
    // batch (17) is a command of version 3 only; its entries are read one by one.
    CHECK_THAT(frame_refusal_of(bytes_of({0x93, 0x03, 0x11, 0x07})),
               Catch::Contains("field entries should be an array, is integer"));
    CHECK_THAT(frame_refusal_of(bytes_of({0x93, 0x03, 0x12, 0x07})), Catch::Contains("command 18 is unknown"));
    CHECK_THAT(frame_refusal_of(bytes_of({0x93, 0x01, 0x00, 0x07})), Catch::Contains("command 0 is unknown"));
    CHECK_THAT(frame_refusal_of(bytes_of({0x93, 0x01, 0xcd, 0x01, 0x0d, 0x07})),
               Catch::Contains("command 269 is unknown"));
    CHECK_THAT(frame_refusal_of(bytes_of({0x92, 0x01, 0x0d})), Catch::Contains("ping needs 1 fields, has 0"));
    CHECK_THAT(frame_refusal_of(bytes_of({0x91, 0x01})), Catch::Contains("it has no version and command"));
    CHECK_THAT(frame_refusal_of(bytes_of({0x01})), Catch::Contains("it is a integer, not an array"));
    CHECK_THAT(frame_refusal_of({}), Catch::Contains("it is empty"));
    CHECK_THAT(frame_refusal_of(bytes_of({0x93, 0x01, 0x0d, 0xa1, 0x78})),
               Catch::Contains("field request should be an unsigned integer, is str"));
    CHECK_THAT(frame_refusal_of(bytes_of({0x93, 0x01, 0x0d, 0x07, 0xc0})), Catch::Contains("1 bytes follow"));
    CHECK_THAT(frame_refusal_of(bytes_of({0x93, 0x01, 0x0d, 0xc1})),
               Catch::Contains("no msgpack value starts at byte"));
    // An extra field, as a later minor revision may append, is read past.
    CHECK_NOTHROW(fuzz::read_zmq_frame(bytes_of({0x94, 0x01, 0x0d, 0x07, 0xa1, 0x78})));
    // Field values outside what the family writes.
    acemq::OutboundMessage message;
    message.headers = {{"h", FieldValue(std::int32_t{0})}};
    const Bytes publish = bytes_of(wire::encode_publish(1, message));
    const auto with_value = [&](const Bytes& value) {
        Bytes frame = publish;
        const auto at = std::find(frame.begin(), frame.end(), std::byte{'h'}) - frame.begin() + 1;  // its value
        REQUIRE(frame[static_cast<std::size_t>(at)] == std::byte{0x00});
        frame.erase(frame.begin() + at);
        frame.insert(frame.begin() + at, value.begin(), value.end());
        return frame_refusal_of(frame);
    };
    CHECK_THAT(with_value(bytes_of({0xce, 0x80, 0x00, 0x00, 0x00})), Catch::Contains("wider than 32 bits"));
    CHECK_THAT(with_value(bytes_of({0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0})), Catch::Contains("wider than 32 bits"));
    CHECK_THAT(with_value(bytes_of({0xd7, 0x09, 0, 0, 0, 0, 0, 0, 0, 0})), Catch::Contains("unknown ext type 9"));
    CHECK_THAT(with_value(bytes_of({0xd6, 0x01, 0, 0, 0, 0})), Catch::Contains("is not 8 bytes"));
}

TEST_CASE("zmq frames: mutated valid frames end in a value or a clear ProtocolError") {
    Loop loop("zmq frames");
    Values values{loop};
    std::vector<Bytes> valid;
    for (int i = 0; i < 4; ++i)
        for (Bytes& frame : round_trips(values))
            if (frame.size() < 4096) valid.push_back(std::move(frame));
    REQUIRE(valid.size() > 40);
    for (const Bytes& frame : valid) REQUIRE_NOTHROW(fuzz::read_zmq_frame(frame));
    static constexpr std::uint8_t huge_headers[][5] = {{0xdd, 0xff, 0xff, 0xff, 0xff},
                                                       {0xdf, 0xff, 0xff, 0xff, 0xff},
                                                       {0xdb, 0xff, 0xff, 0xff, 0xff},
                                                       {0xc6, 0xff, 0xff, 0xff, 0xff},
                                                       {0xc9, 0xff, 0xff, 0xff, 0xff}};
    std::size_t turn = 0;
    loop.run(
        [&] {
            Bytes frame = valid[loop.below(valid.size())];
            const auto at = frame.begin() + static_cast<std::ptrdiff_t>(loop.below(frame.size()));
            switch (turn++ % 6) {
            case 0: return loop.mutated(std::move(frame));
            case 1: {  // a huge length header put in, or over a byte
                const auto& header = huge_headers[loop.below(std::size(huge_headers))];
                if (loop.below(2) == 0) *at = std::byte{header[0]};
                frame.insert(at, reinterpret_cast<const std::byte*>(header),
                             reinterpret_cast<const std::byte*>(header) + 5);
                return frame;
            }
            case 2: frame[1] = static_cast<std::byte>(loop.below(256)); return frame;  // the version
            case 3: frame[2] = static_cast<std::byte>(loop.below(256)); return frame;  // the command
            case 4: return frame + loop.random_bytes(8);
            default: {  // one byte flipped
                *at ^= static_cast<std::byte>(1 << loop.below(8));
                return frame;
            }
            }
        },
        refused_clearly_or_read);
}
