// Suite `reliability` (issue 27, §6 "errors that mislead"): what the library says about a
// message must be true and must be safe to print. Offsets name the byte they mean; text a
// sender controls (a content type, an id) reaches x-acemq-error and log lines escaped and cut
// to a bound; a URL keeps its scheme when its password goes; a message that came with no id
// is counted, since a redelivery of it cannot be recognised.
#include "../conformance/conformance.hpp"
#include "../support/handmade.hpp"
#include "../support/wait.hpp"

#include <acemq/stores/memory_idempotency_store.hpp>
#include <acemq/value.hpp>
#include "quoted_text.hpp"

#include <algorithm>
#include <atomic>
#include <initializer_list>
#include <string>
#include <vector>

using namespace conformance;
using handmade::CapturedLog;
using handmade::contains;
using testing_support::eventually;

namespace {

// True when no byte of `text` is a control character (DEL included) and all of it is UTF-8:
// what a terminal or a log shipper can be handed as it is.
bool printable(const std::string& text) {
    const bool controls = std::any_of(text.begin(), text.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte < 0x20 || byte == 0x7f;
    });
    return !controls && !acemq::detail::invalid_utf8_at(text).has_value();
}

std::string msgpack_refusal(std::initializer_list<unsigned char> bytes) {
    std::vector<std::byte> body;
    for (const unsigned char b : bytes) body.push_back(std::byte{b});
    try {
        (void)acemq::MsgpackCodec().decode(body, acemq::content_types::msgpack);
    } catch (const acemq::DecodeError& error) {
        return error.what();
    }
    FAIL("the body was read");
    return {};
}

}  // namespace

TEST_CASE("a byte that starts no msgpack value is named by its own offset") {
    // 0xc1 is the one byte msgpack never uses.
    CHECK_THAT(msgpack_refusal({0xc1}), Catch::Contains("the byte at offset 0 starts no msgpack value"));
    CHECK_THAT(msgpack_refusal({0x92, 0xc1}), Catch::Contains("the byte at offset 1 starts no msgpack value"));
    CHECK_THAT(msgpack_refusal({0x93, 0x01, 0x02, 0xc1}),
               Catch::Contains("the byte at offset 3 starts no msgpack value"));
}

TEST_CASE("text from a sender is shown escaped, and cut with its length when long") {
    using acemq::detail::in_quotes;
    using acemq::detail::shown_text;
    CHECK(in_quotes("orders.new") == "\"orders.new\"");
    CHECK(in_quotes("") == "\"\"");
    CHECK(in_quotes("\x01\x02 junk/\xff") == R"("\x01\x02 junk/\xff")");
    CHECK(in_quotes("a\"b\\c\nd\x7f") == R"("a\"b\\c\x0ad\x7f")");
    CHECK(shown_text("a\"b\\c") == R"(a"b\\c)");
    // UTF-8 stays as it is; a sequence that is cut short or overlong is bytes.
    CHECK(in_quotes("café ✓") == "\"café ✓\"");
    CHECK(in_quotes("\xc3") == R"("\xc3")");
    CHECK(in_quotes("\xc0\xaf") == R"("\xc0\xaf")");

    const std::string huge(100000, 'x');
    CHECK(in_quotes(huge) == "\"" + std::string(acemq::detail::shown_text_limit, 'x') + "…\" (100000 bytes)");
    CHECK(shown_text(huge, 3) == "xxx… (100000 bytes)");
    // Never cut inside a character: "é" is two bytes.
    CHECK(in_quotes("aé", 2) == "\"a…\" (3 bytes)");
    CHECK(in_quotes("abc", 3) == "\"abc\"");
}

TEST_CASE("a content type full of control bytes reaches x-acemq-error escaped") {
    Fixture f;
    const std::string queue = f.source_queue("hostile-type");
    auto consumer = f.bus().consume<Order>(queue, [](const acemq::Message<Order>&) { return acemq::accept(); });
    const std::string content_type = "\x01\x02 junk/\x7f\xff";
    REQUIRE(
        f.transport()
            .publish(acemq::OutboundMessage{.routing_key = queue, .content_type = content_type, .message_id = "m-1"})
            .confirmed);
    REQUIRE(f.harness().wait_parked(queue, 1, 10s));
    consumer.close();

    auto parked = f.pull(acemq::parked_queue(queue));
    REQUIRE(parked.has_value());
    const std::string error = envelope_of(*parked).error;
    INFO(error);
    CHECK_THAT(error, Catch::StartsWith("could not be decoded: "));
    CHECK_THAT(error, Catch::Contains(R"(\x01\x02 junk/\x7f\xff)"));
    CHECK(printable(error));
    // The copy itself keeps the content type it came with, byte for byte.
    CHECK(parked->message().content_type() == content_type);
}

TEST_CASE("a log line quotes a 100 KB id cut to a bound, with its length") {
    Fixture f;
    // No .parked to set the message aside to: the consumer says so, naming the message.
    const std::string queue = f.source_queue("long-id", {.dead_letter = false});
    CapturedLog log;
    auto consumer =
        f.bus().consume_raw(queue, [](const acemq::RawMessage&) { return acemq::park(); }, {.declare = false});
    const std::string id = "\x1b[2J" + std::string(100000, 'i');
    REQUIRE(
        f.transport().publish(acemq::OutboundMessage{.routing_key = queue, .headers = {{"x-acemq-id", id}}}).confirmed);
    const auto set_aside_line = [&] {
        for (const auto& [level, line] : log.lines())
            if (contains(line, "could not be set aside")) return line;
        return std::string();
    };
    REQUIRE(eventually([&] { return !set_aside_line().empty(); }));
    consumer.close();
    const std::string line = set_aside_line();
    CHECK(line.size() < 2000);
    CHECK(contains(line, R"(\x1b[2Jiii)"));
    CHECK(contains(line, "… (100004 bytes)"));
    CHECK(printable(line));
}

TEST_CASE("redacted_url keeps the scheme of a URL of any shape and never shows its password") {
    using acemq::redacted_url;
    const std::string secret = "Sup3rSecretPa55";
    // One slash, three, and none: the scheme stays where it can be told apart.
    CHECK(redacted_url("amqp:/guest:" + secret + "@127.0.0.1:5702/") == "amqp:/***@127.0.0.1:5702/");
    CHECK(redacted_url("amqp:///guest:" + secret + "@rabbit/") == "amqp:///***@rabbit/");
    CHECK(redacted_url("amqp:/rabbit:5672/") == "amqp:/rabbit:5672/");
    // With no slash, "amqp:guest" could be a user and its password: all of it goes.
    CHECK(redacted_url("amqp:guest:" + secret + "@rabbit") == "***@rabbit");
    CHECK(redacted_url("amqp:rabbit") == "amqp:rabbit");
    // A user without a password is hidden all the same.
    CHECK(redacted_url("amqp://guest@rabbit/") == "amqp://***@rabbit/");
    // An '@' in the password, with one slash.
    CHECK(redacted_url("amqp:/guest:p@" + secret + "@rabbit/") == "amqp:/***@rabbit/");
    // IPv6 literals, with and without a userinfo.
    CHECK(redacted_url("amqp://guest:" + secret + "@[::1]:5672/") == "amqp://***@[::1]:5672/");
    CHECK(redacted_url("amqp://[fe80::1%25eth0]:5672/") == "amqp://[fe80::1%25eth0]:5672/");
    CHECK(redacted_url("amqp:/[::1]:5672/") == "amqp:/[::1]:5672/");

    const std::string refusal = [&] {
        try {
            acemq::connect("amqp:/guest:" + secret + "@127.0.0.1:5702/");
        } catch (const acemq::InvalidArgument& error) {
            return std::string(error.what());
        }
        return std::string("accepted");
    }();
    CHECK_THAT(refusal, Catch::Contains("no transport for \"amqp:/***@127.0.0.1:5702/\""));
    CHECK_THAT(refusal, !Catch::Contains(secret));
}

TEST_CASE("deliveries that came with no id are counted per queue, and idempotent() warns once") {
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    Fixture f({.metrics = metrics});
    const std::string queue = f.source_queue("no-id");
    CapturedLog log;
    acemq::InMemoryIdempotencyStore seen;
    std::atomic<int> handled{0};
    auto consumer = f.bus().consume_raw(queue, acemq::idempotent(seen, [&](const acemq::RawMessage&) {
                                            ++handled;
                                            return acemq::accept();
                                        }));
    // As another client may send them: no x-acemq-id header, no message-id property.
    for (int i = 0; i < 3; ++i) REQUIRE(f.transport().publish(acemq::OutboundMessage{.routing_key = queue}).confirmed);
    REQUIRE(eventually([&] { return handled == 3; }));
    consumer.close();

    CHECK(metrics->counter("acemq.messages.without.id.total", {{"queue", queue}}) == 3);
    std::vector<std::string> warnings;
    for (const auto& [level, line] : log.lines())
        if (contains(line, "came with no id")) warnings.push_back(line);
    REQUIRE(warnings.size() == 1);
    CHECK(contains(warnings.front(), queue));
    CHECK(contains(warnings.front(), "key function"));
    CHECK(contains(metrics->prometheus_text(), "acemq_messages_without_id_total{queue=\"" + queue + "\"} 3"));
}
