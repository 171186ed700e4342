// Request/reply (docs/request-reply.md, which restates the family's pattern and wire),
// through the Bus on whichever transport the suite runs against: a Requester, a responder
// started by serve(), and the hostile cases (a forged reply, a request with no or an empty
// reply address, a reply address that names no queue).
//
// Where a timeout is the point it is 300 ms; every other wait is bounded (a call that should
// be answered waits at most 10 s, so a broken reply path fails instead of hanging).
#include "conformance.hpp"

#include <atomic>
#include <future>
#include <mutex>
#include <regex>
#include <thread>
#include <vector>

using namespace conformance;
using acemq::Message;
using test_messages::Payment;

// Under ThreadSanitizer: a call's failure reaches its caller as a std::exception_ptr in a
// std::future, made on the requester's thread and freed by whichever side lets go of it last.
// The count that decides which is an atomic inside libstdc++.so, which is not instrumented, so
// TSan reports the free as racing with the caller's catch. Only stacks through that release
// are excused; docs/request-reply.md §1 tells users the same line.
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_suppressions() {
    return "race:std::__exception_ptr::exception_ptr::_M_release\n";
}
#endif

namespace {

constexpr auto answered_within = 10s;
const acemq::RequestOptions patient{.timeout = answered_within};

// Polls `condition` every 5 ms for up to 5 s.
template <class Condition>
bool eventually(Condition condition) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

// Doubles an order's cents into a payment of the same id.
Payment pay(const Message<Order>& request) { return Payment{request.payload.id, request.payload.cents * 2}; }

std::string header_text(const acemq::Headers& headers, std::string_view name) {
    const auto found = headers.find(name);
    return found == headers.end() ? std::string("<absent>") : found->second.as_text().value_or("<not text>");
}

}  // namespace

TEST_CASE(
    "request/reply: an answered round trip carries typed payloads, a fresh correlation and both reply addresses") {
    Fixture f;
    const std::string queue = f.source_queue("prices");
    std::mutex seen_lock;
    std::vector<acemq::Envelope> seen;
    std::vector<std::string> seen_property;
    acemq::Responder responder = acemq::serve<Order>(f.bus(), queue, [&](const Message<Order>& request) {
        std::lock_guard guard(seen_lock);
        seen.push_back(request.envelope);
        seen_property.push_back(request.reply_to);
        return pay(request);
    });
    acemq::Requester prices{f.bus(), "", queue};
    CHECK(std::regex_match(prices.reply_queue(), std::regex("acemq-reply-[0-9a-f]{32}")));

    const Payment paid = prices.ask<Payment>(
        Order{"o-1", 21}, {.timeout = answered_within, .send = {.type = "quote", .correlation = "the caller's"}});
    CHECK(paid.payment_id == "o-1");
    CHECK(paid.cents == 42);

    std::future<acemq::RawMessage> raw = prices.ask_encoded(acemq::encode(*f.bus().codec(), Order{"o-2", 5}), patient);
    REQUIRE(raw.wait_for(answered_within) == std::future_status::ready);
    const acemq::RawMessage reply = raw.get();
    CHECK(acemq::decode<Payment>(*f.bus().codec(), reply.payload, reply.content_type).cents == 10);

    std::lock_guard guard(seen_lock);
    REQUIRE(seen.size() == 2);
    for (std::size_t i = 0; i < seen.size(); ++i) {
        // Both addresses, the same queue; the requester's correlation replaced the caller's.
        CHECK(header_text(seen[i].headers, acemq::header::reply_to) == prices.reply_queue());
        CHECK(seen_property[i] == prices.reply_queue());
        CHECK(std::regex_match(seen[i].correlation, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-.*")));
    }
    CHECK(seen[0].type == "quote");
    CHECK(seen[0].correlation != seen[1].correlation);
    // The reply: the request's correlation, caused by the request.
    CHECK(reply.envelope.correlation == seen[1].correlation);
    CHECK(reply.envelope.causation == seen[1].id);
    CHECK(responder.answered() == 2);
    CHECK(responder.unanswerable() == 0);
    CHECK(prices.in_flight() == 0);
    CHECK(prices.unmatched() == 0);
    CHECK(prices.timed_out() == 0);
    // Nothing left behind: the request queue is drained, its dead-letter queue empty.
    CHECK(f.wait_depth(queue, 0));
    CHECK(f.transport().queue_depth(acemq::dead_letter_queue(queue)) == 0);
}

TEST_CASE("request/reply: 64 calls in flight from 8 threads are each matched to their own answer") {
    Fixture f;
    const std::string queue = f.source_queue("many");
    acemq::Requester asker{f.bus(), "", queue};
    constexpr int threads = 8, per_thread = 8;
    std::vector<std::vector<std::future<Payment>>> futures(threads);
    {
        std::vector<std::jthread> callers;
        for (int t = 0; t < threads; ++t)
            callers.emplace_back([&, t] {
                for (int i = 0; i < per_thread; ++i)
                    futures[t].push_back(asker.ask_async<Payment>(
                        Order{std::to_string(t) + "-" + std::to_string(i), t * 100 + i}, patient));
            });
    }
    // No responder yet: every call is waiting at once.
    CHECK(asker.in_flight() == threads * per_thread);
    acemq::Responder responder = acemq::serve<Order>(f.bus(), queue, pay, {.consumer = {.concurrency = 4}});
    int matched = 0;
    for (int t = 0; t < threads; ++t)
        for (int i = 0; i < per_thread; ++i) {
            REQUIRE(futures[t][i].wait_for(answered_within) == std::future_status::ready);
            const Payment paid = futures[t][i].get();
            CHECK(paid.payment_id == std::to_string(t) + "-" + std::to_string(i));
            CHECK(paid.cents == 2 * (t * 100 + i));
            ++matched;
        }
    CHECK(matched == threads * per_thread);
    CHECK(responder.answered() == threads * per_thread);
    CHECK(asker.in_flight() == 0);
    CHECK(asker.unmatched() == 0);
}

TEST_CASE(
    "request/reply: a call past its own timeout is a RequestTimeoutError, counted, and its late reply is dropped") {
    Fixture f;
    const std::string queue = f.source_queue("slow");
    CHECK_THROWS_AS(acemq::Requester(f.bus(), "", queue, {.timeout = 0ms}), acemq::InvalidArgument);
    acemq::Requester asker{f.bus(), "", queue};  // 30 s unless a call says otherwise
    try {
        asker.ask<Payment>(Order{"o-1", 1}, {.timeout = 300ms});
        FAIL("a call nobody answered returned");
    } catch (const acemq::RequestTimeoutError& error) {
        CHECK(std::string(error.what()) ==
              "acemq: no reply arrived before the deadline after 300ms (correlation " + error.correlation() + ")");
    }
    CHECK(asker.timed_out() == 1);
    CHECK(asker.in_flight() == 0);
    // Nothing lost: the request waits in its queue; answered now, its reply finds no caller.
    CHECK(f.wait_depth(queue, 1));
    acemq::Responder responder = acemq::serve<Order>(f.bus(), queue, pay);
    CHECK(eventually([&] { return asker.unmatched() == 1; }));
    CHECK(responder.answered() == 1);
    // The requester is none the worse: the next call is answered.
    CHECK(asker.ask<Payment>(Order{"o-2", 2}, patient).cents == 4);
    CHECK(asker.timed_out() == 1);
}

TEST_CASE("request/reply: a responder that throws comes back as ResponderError with its text, the request in .dlq") {
    Fixture f;
    const std::string queue = f.source_queue("failing");
    acemq::Responder responder = acemq::serve<Order>(
        f.bus(), queue, [](const Message<Order>&) -> Payment { throw std::runtime_error("out of stock"); });
    acemq::Requester asker{f.bus(), "", queue};
    try {
        asker.ask<Payment>(Order{"o-1", 1}, patient);
        FAIL("a call whose responder threw returned");
    } catch (const acemq::ResponderError& error) {
        CHECK(error.text() == "std::runtime_error: out of stock");
        CHECK(std::string(error.what()) == "acemq: the responder failed: std::runtime_error: out of stock");
    }
    CHECK(asker.timed_out() == 0);
    CHECK(responder.answered() == 0);
    const std::string dlq = acemq::dead_letter_queue(queue);
    REQUIRE(f.wait_depth(dlq, 1));
    std::optional<acemq::Delivery> dead = f.pull(dlq);
    REQUIRE(dead);
    CHECK_THAT(envelope_of(*dead).error, Catch::Contains("std::runtime_error: out of stock"));
    dead->ack();
}

TEST_CASE("request/reply: a store out of reach while answering is retried, not answered with an error") {
    Fixture f;
    const std::string queue = f.source_queue("store.down");
    std::atomic<int> calls{0};
    acemq::Responder responder =
        acemq::serve<Order>(f.bus(), queue,
                            [&calls](const Message<Order>& request) -> Payment {
                                if (calls.fetch_add(1) == 0)
                                    throw acemq::StoreUnavailableError("acemq: the schema registry is restarting");
                                return pay(request);
                            },
                            {.consumer = {.retry = acemq::fixed_retry(3, 0ms)}});
    acemq::Requester asker{f.bus(), "", queue};
    CHECK(asker.ask<Payment>(Order{"o-1", 21}, patient).cents == 42);
    CHECK(calls.load() == 2);
    CHECK(responder.answered() == 1);
    CHECK(f.transport().queue_depth(acemq::dead_letter_queue(queue)) == 0);
    CHECK(f.transport().queue_depth(acemq::parked_queue(queue)) == 0);
}

TEST_CASE("request/reply: a request the responder cannot decode is parked and answered with an error at once") {
    Fixture f;
    const std::string queue = f.source_queue("garbled");
    acemq::Responder responder = acemq::serve<Order>(f.bus(), queue, pay);
    acemq::Requester asker{f.bus(), "", queue};
    const std::string garbage = "this is not msgpack";
    acemq::Encoded bad{{}, "application/msgpack"};
    for (char c : garbage) bad.body.push_back(std::byte(c));
    std::future<acemq::RawMessage> reply = asker.ask_encoded(bad, patient);
    REQUIRE(reply.wait_for(answered_within) == std::future_status::ready);
    try {
        reply.get();
        FAIL("an undecodable request was answered");
    } catch (const acemq::ResponderError& error) {
        CHECK_THAT(error.text(), Catch::StartsWith("acemq::DecodeError: "));
    }
    CHECK(f.wait_depth(acemq::parked_queue(queue), 1));
    CHECK(f.transport().queue_depth(acemq::dead_letter_queue(queue)) == 0);
}

TEST_CASE("request/reply: a reply that is not a Reply is a DecodeError from the future, not a hang") {
    Fixture f;
    const std::string queue = f.source_queue("wrong.reply");
    acemq::Responder responder =
        acemq::serve<Order>(f.bus(), queue, [](const Message<Order>&) { return std::string("not a payment"); });
    acemq::Requester asker{f.bus(), "", queue};
    std::future<Payment> reply = asker.ask_async<Payment>(Order{"o-1", 1}, patient);
    REQUIRE(reply.wait_for(answered_within) == std::future_status::ready);
    CHECK_THROWS_AS(reply.get(), acemq::DecodeError);
    CHECK(responder.answered() == 1);
}

TEST_CASE("request/reply: a request with no reply address is rejected to .dlq and counted unanswerable") {
    Fixture f;
    const std::string queue = f.source_queue("anonymous");
    acemq::Responder responder = acemq::serve<Order>(f.bus(), queue, pay);
    f.bus().publisher_to_queue(queue).send(Order{"o-1", 1});
    const std::string dlq = acemq::dead_letter_queue(queue);
    REQUIRE(f.wait_depth(dlq, 1));
    CHECK(responder.unanswerable() == 1);
    CHECK(responder.answered() == 0);
    std::optional<acemq::Delivery> dead = f.pull(dlq);
    REQUIRE(dead);
    CHECK_THAT(envelope_of(*dead).error, Catch::Contains("names no reply address") &&
                                             Catch::Contains("acemq-reply-to") && Catch::Contains("reply-to property"));
    dead->ack();
}

TEST_CASE("request/reply: an empty reply address header yields to the reply-to property; with neither, unanswerable") {
    Fixture f;
    const std::string queue = f.source_queue("empty.address");
    const std::string inbox = f.source_queue("inbox", {.dead_letter = false});
    acemq::Responder responder = acemq::serve<Order>(f.bus(), queue, pay);
    const acemq::Publisher requests = f.bus().publisher_to_queue(queue);
    const acemq::SendResult sent = requests.send(
        Order{"o-1", 3}, {.correlation = "by-hand", .reply_to = inbox, .headers = {{"acemq-reply-to", ""}}});
    REQUIRE(f.wait_depth(inbox, 1));
    std::optional<acemq::Delivery> reply = f.pull(inbox);
    REQUIRE(reply);
    CHECK(envelope_of(*reply).correlation == "by-hand");
    CHECK(envelope_of(*reply).causation == sent.message_id);
    CHECK(acemq::decode<Payment>(*f.bus().codec(), reply->message().body(), reply->message().content_type()).cents ==
          6);
    reply->ack();

    requests.send(Order{"o-2", 4}, {.headers = {{"acemq-reply-to", ""}}});
    CHECK(f.wait_depth(acemq::dead_letter_queue(queue), 1));
    CHECK(responder.unanswerable() == 1);
    CHECK(responder.answered() == 1);
}

TEST_CASE(
    "request/reply: a forged reply with an unknown correlation is dropped and counted; the real call is answered") {
    Fixture f;
    const std::string queue = f.source_queue("forged");
    // A responder that first sends the caller a reply of somebody else's, then the real one.
    acemq::Responder responder = acemq::serve<Order>(f.bus(), queue, [&](const Message<Order>& request) {
        f.bus().publisher_to_queue(request.reply_to).send(Payment{"forged", 666}, {.correlation = "not-a-call"});
        return pay(request);
    });
    acemq::Requester asker{f.bus(), "", queue};
    const Payment paid = asker.ask<Payment>(Order{"o-1", 7}, patient);
    CHECK(paid.payment_id == "o-1");
    CHECK(paid.cents == 14);
    CHECK(eventually([&] { return asker.unmatched() == 1; }));
    CHECK(asker.in_flight() == 0);
    CHECK(f.wait_depth(asker.reply_queue(), 0));
}

TEST_CASE(
    "request/reply: a reply address that names no queue is answered into nothing, the caller times out, "
    "nothing is stuck") {
    // The bus reads every request's acemq-reply-to header as a queue nobody declared, which
    // the responder prefers to the reply-to property: its reply is unroutable.
    Fixture f;
    const std::string queue = f.source_queue("unroutable.reply");
    const std::string nowhere = f.name("nowhere");
    f.bus().add_consume_interceptor([&](acemq::ConsumeContext& context, const acemq::ConsumeNext& next) {
        if (context.queue == queue) context.envelope.headers.insert_or_assign("acemq-reply-to", nowhere);
        return next(context);
    });
    acemq::Responder responder = acemq::serve<Order>(f.bus(), queue, pay);
    acemq::Requester asker{f.bus(), "", queue};
    CHECK_THROWS_AS(asker.ask<Payment>(Order{"o-1", 1}, {.timeout = 300ms}), acemq::RequestTimeoutError);
    CHECK(eventually([&] { return responder.answered() == 1; }));
    CHECK(asker.timed_out() == 1);
    CHECK(asker.in_flight() == 0);
    // Nothing stuck: the request was settled, not retried or set aside.
    CHECK(f.wait_depth(queue, 0));
    CHECK(f.transport().queue_depth(acemq::dead_letter_queue(queue)) == 0);
    CHECK_FALSE(f.transport().queue_exists(nowhere));
}

TEST_CASE("request/reply: a named reply queue is durable and quorum, and serves calls like a generated one") {
    Fixture f;
    const std::string queue = f.source_queue("named");
    const std::string replies = f.name("replies");
    acemq::Responder responder = acemq::serve<Order>(f.bus(), queue, pay);
    {
        acemq::Requester asker{f.bus(), "", queue, {.reply_queue = replies}};
        CHECK(asker.reply_queue() == replies);
        CHECK(asker.ask<Payment>(Order{"o-1", 8}, patient).cents == 16);
        // Declared as a durable quorum queue: the same declaration is accepted, another refused.
        CHECK_NOTHROW(f.bus().declare(acemq::Topology{}.queue(replies, {.type = acemq::QueueType::quorum})));
        CHECK_THROWS_AS(f.bus().declare(acemq::Topology{}.queue(replies, {.type = acemq::QueueType::classic})),
                        acemq::TopologyError);
    }
    // It outlives its requester, for the replies of a caller that restarts.
    CHECK(f.transport().queue_exists(replies));
    f.transport().delete_queue(replies);
}

TEST_CASE("request/reply: a generated reply queue is the requester's own and goes with it") {
    Fixture f;
    const std::string queue = f.source_queue("generated");
    std::string generated;
    {
        acemq::Requester asker{f.bus(), "", queue};
        generated = asker.reply_queue();
        CHECK(f.transport().queue_exists(generated));
        // Its consumer declares nothing of its own: no dead letters for replies.
        CHECK_FALSE(f.transport().queue_exists(acemq::dead_letter_queue(generated)));
        CHECK_FALSE(f.transport().queue_exists(acemq::parked_queue(generated)));
        // Transient, exclusive, auto-delete and classic: a durable quorum one is refused.
        CHECK_THROWS_AS(f.bus().declare(acemq::Topology{}.queue(generated, {.type = acemq::QueueType::quorum})),
                        acemq::TopologyError);
    }
    CHECK(eventually([&] { return !f.transport().queue_exists(generated); }));
}

TEST_CASE("request/reply: close() fails every outstanding call with the closed sentence, at once") {
    Fixture f;
    const std::string queue = f.source_queue("closing");
    acemq::Requester asker{f.bus(), "", queue};
    std::vector<std::future<Payment>> waiting;
    for (int i = 0; i < 3; ++i) waiting.push_back(asker.ask_async<Payment>(Order{std::to_string(i), i}));
    // A future of a call in flight, not a deferred function: it waits, and is not ready.
    CHECK(waiting[0].wait_for(0s) == std::future_status::timeout);
    CHECK(asker.in_flight() == 3);
    asker.close();
    for (std::future<Payment>& call : waiting) {
        REQUIRE(call.wait_for(0s) == std::future_status::ready);
        try {
            call.get();
            FAIL("a call outstanding at close returned");
        } catch (const acemq::RequestTimeoutError& error) {
            CHECK(std::string(error.what()) ==
                  "acemq: the requester was closed while " + error.correlation() + " was outstanding");
        }
    }
    CHECK(asker.in_flight() == 0);
    CHECK(asker.timed_out() == 3);
    CHECK_THROWS_AS(asker.ask<Payment>(Order{"late", 1}), acemq::UsageError);
    asker.close();  // idempotent
}
