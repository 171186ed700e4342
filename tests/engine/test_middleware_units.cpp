// Handler middleware (docs/patterns.md §4, §8 items 46–48): chain order, with_timeout,
// with_logging. Pure unit tests: they call the wrapped handlers directly with hand-made
// messages, no bus. then() and middleware under Bus::consume need a bus and are in the
// conformance suite (tests/conformance/test_middleware.cpp), run against every transport.
#include <catch2/catch.hpp>
#include "../support/handmade.hpp"

#include <acemq/log.hpp>
#include <acemq/middleware.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <type_traits>
#include <vector>
#include "../support/messages.hpp"

using namespace std::chrono_literals;

namespace {

using test_messages::Order;

using handmade::CapturedLog;
using handmade::contains;
using handmade::message_of;

bool ends_with(const std::string& text, std::string_view tail) { return std::string_view(text).ends_with(tail); }

// A handler that waits, ten seconds at most, for its stop token, then tells `stopped`
// whether a stop was requested.
auto watches_stop_token(std::promise<bool>& stopped) {
    return [&stopped](const acemq::Message<Order>&) {
        const std::stop_token token = acemq::current_stop_token();
        std::mutex lock;
        std::condition_variable_any woken;
        std::unique_lock guard(lock);
        woken.wait_for(guard, token, 10s, [] { return false; });  // wakes on the stop request
        stopped.set_value(token.stop_requested());
        return acemq::accept();
    };
}

// A middleware that records when a message passes it on the way in and on the way out.
auto traced(std::vector<std::string>& trace, std::string name) {
    return [&trace, name](acemq::Handler<Order> next) {
        return acemq::Handler<Order>([&trace, name, next](const acemq::Message<Order>& message) {
            trace.push_back(name + " in");
            acemq::Ack ack = next(message);
            trace.push_back(name + " out");
            return ack;
        });
    };
}

}  // namespace

TEST_CASE("chain: the first middleware listed is outermost") {
    std::vector<std::string> trace;
    auto handle = [&](const acemq::Message<Order>&) {
        trace.push_back("handler");
        return acemq::accept();
    };
    auto handler = acemq::chain(handle, traced(trace, "outer"), traced(trace, "inner"));

    CHECK(handler(message_of(Order{"o-1", 100})) == acemq::accept());
    CHECK(trace == std::vector<std::string>{"outer in", "inner in", "handler", "inner out", "outer out"});
}

TEST_CASE("chain takes the payload type from the handler; a generic handler names it") {
    auto ordered = acemq::chain([](const acemq::Message<Order>&) { return acemq::accept(); }, acemq::with_logging());
    static_assert(std::is_same_v<decltype(ordered), acemq::Handler<Order>>);
    const auto by_function = acemq::chain(+[](const acemq::Message<Order>&) { return acemq::accept(); });
    static_assert(std::is_same_v<decltype(by_function), const acemq::Handler<Order>>);
    auto generic = acemq::chain<Order>(
        [](const auto& m) { return m.payload.id == "o-1" ? acemq::accept() : acemq::reject(); }, acemq::with_logging());
    static_assert(std::is_same_v<decltype(generic), acemq::Handler<Order>>);
    CHECK(ordered(message_of(Order{"o-1", 100})) == acemq::accept());
    CHECK(generic(message_of(Order{"o-1", 100})) == acemq::accept());
    CHECK(generic(message_of(Order{"o-2", 100})) == acemq::reject());
}

TEST_CASE("chain with no middleware is the handler") {
    auto handler =
        acemq::chain([](const acemq::Message<Order>&) { return acemq::reject(std::invalid_argument("no sku")); });
    CHECK(handler(message_of(Order{"o-1", 100})) == acemq::reject(std::invalid_argument("no sku")));
}

TEST_CASE("chain accepts a typed acemq::Middleware as well as the library's") {
    acemq::Middleware<Order> to_park = [](acemq::Handler<Order> next) {
        return acemq::Handler<Order>([next](const acemq::Message<Order>& message) {
            const acemq::Ack ack = next(message);
            return ack.kind() == acemq::AckKind::reject ? acemq::park(ack.failure()) : ack;
        });
    };
    auto handler =
        acemq::chain([](const acemq::Message<Order>&) { return acemq::reject(); }, to_park, acemq::with_timeout(5s));
    CHECK(handler(message_of(Order{"o-1", 100})).kind() == acemq::AckKind::park);
}

TEST_CASE("with_timeout: a handler past its limit is answered for with retry, and finishes in the background") {
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::promise<std::string> finished;
    std::future<std::string> late_answer = finished.get_future();

    auto handler = acemq::with_timeout(20ms)(acemq::Handler<Order>([&, released](const acemq::Message<Order>& message) {
        const bool was_released = released.wait_for(10s) == std::future_status::ready;
        const bool told_to_stop = acemq::current_stop_token().stop_requested();
        // Reads the message after the caller's copy is gone: with_timeout handed over its own.
        finished.set_value(message.payload.id + (was_released ? " released" : " never released") +
                           (told_to_stop ? ", stop requested" : ", no stop requested"));
        return acemq::accept();
    }));

    std::string id;
    std::optional<acemq::Ack> ack;
    {
        acemq::Message<Order> message = message_of(Order{"o-late", 100});
        id = message.envelope.id;
        ack.emplace(handler(message));
    }
    // Answered while the handler still waits for its release: with_timeout did not wait for it.
    CHECK(late_answer.wait_for(0s) == std::future_status::timeout);
    REQUIRE(ack->kind() == acemq::AckKind::retry);
    REQUIRE(ack->failure());
    CHECK(ack->failure()->type_name == "acemq::HandlerTimeoutError");
    CHECK(ack->failure()->message == "acemq: handling message " + id + " did not finish within 20ms");
    CHECK(contains(acemq::describe(ack->failure()), "did not finish within"));
    CHECK_FALSE(ack->is_fatal());

    release.set_value();
    REQUIRE(late_answer.wait_for(10s) == std::future_status::ready);
    CHECK(late_answer.get() == "o-late released, stop requested");
}

TEST_CASE("with_timeout: a handler that watches its stop token ends soon after the limit") {
    std::promise<bool> stopped;
    std::future<bool> stopped_early = stopped.get_future();
    auto handler = acemq::chain(watches_stop_token(stopped), acemq::with_timeout(20ms));

    CHECK(handler(message_of(Order{"o-1", 100})).kind() == acemq::AckKind::retry);
    REQUIRE(stopped_early.wait_for(5s) == std::future_status::ready);
    CHECK(stopped_early.get());
}

TEST_CASE("with_timeout: an outer timeout stops an inner one's handler too") {
    std::promise<bool> stopped;
    std::future<bool> stopped_early = stopped.get_future();
    auto handler = acemq::chain(watches_stop_token(stopped), acemq::with_timeout(20ms), acemq::with_timeout(10s));

    CHECK(handler(message_of(Order{"o-1", 100})).kind() == acemq::AckKind::retry);
    REQUIRE(stopped_early.wait_for(5s) == std::future_status::ready);
    CHECK(stopped_early.get());
}

TEST_CASE("with_timeout: a handler finishing in time keeps its own answer") {
    // The handler runs on with_timeout's thread: it records, the test thread asserts.
    std::atomic<bool> stop_possible{false}, stop_requested{true};
    auto handler = acemq::chain(
        [&](const acemq::Message<Order>&) {
            stop_possible = acemq::current_stop_token().stop_possible();
            stop_requested = acemq::current_stop_token().stop_requested();
            return acemq::reject(std::invalid_argument("no such sku"));
        },
        acemq::with_timeout(5s));
    CHECK(handler(message_of(Order{"o-1", 100})) == acemq::reject(std::invalid_argument("no such sku")));
    CHECK(stop_possible);
    CHECK_FALSE(stop_requested);
}

TEST_CASE("with_timeout: an exception thrown in time reaches the caller unchanged") {
    auto handler = acemq::chain(
        [](const acemq::Message<Order>&) -> acemq::Ack { throw acemq::FatalError("the order is malformed"); },
        acemq::with_timeout(5s));
    CHECK_THROWS_AS(handler(message_of(Order{"o-1", 100})), acemq::FatalError);
}

TEST_CASE("with_timeout: the limit must be positive") {
    CHECK_THROWS_WITH(acemq::with_timeout(0ms), Catch::Contains("a handler timeout must be positive"));
    CHECK_THROWS_AS(acemq::with_timeout(-1s), acemq::InvalidArgument);
    CHECK_FALSE(acemq::current_stop_token().stop_possible());
}

TEST_CASE("with_logging: one INFO line with id, type, attempt, time and decision, never the payload") {
    CapturedLog log;
    auto handler =
        acemq::chain([](const acemq::Message<Order>&) { return acemq::reject(std::invalid_argument("no such sku")); },
                     acemq::with_logging());
    const acemq::Message<Order> message = message_of(Order{"SECRET-PAYLOAD-42", 4250});

    CHECK(handler(message).kind() == acemq::AckKind::reject);
    const auto lines = log.lines();
    REQUIRE(lines.size() == 1);
    const auto& [level, line] = lines.front();
    CHECK(level == acemq::LogLevel::info);
    CHECK(contains(line, message.envelope.id));
    CHECK(contains(line, "type=orders.new"));
    CHECK(contains(line, "attempt=1"));
    CHECK(contains(line, "took="));
    CHECK(contains(line, "ms reject: std::invalid_argument: no such sku"));
    CHECK_FALSE(contains(line, "SECRET-PAYLOAD-42"));
    CHECK_FALSE(contains(line, "4250"));
}

TEST_CASE("with_logging: a handler that throws is logged as raised and the exception goes on") {
    CapturedLog log;
    auto handler = acemq::chain(
        [](const acemq::Message<Order>&) -> acemq::Ack { throw std::logic_error("the warehouse is not answering"); },
        acemq::with_logging());
    const acemq::Message<Order> message = message_of(Order{"SECRET-PAYLOAD-42", 100});

    CHECK_THROWS_AS(handler(message), std::logic_error);
    const auto lines = log.lines();
    REQUIRE(lines.size() == 1);
    CHECK(lines.front().first == acemq::LogLevel::error);
    CHECK(contains(lines.front().second, message.envelope.id));
    CHECK(contains(lines.front().second, "the warehouse is not answering"));
    CHECK(ends_with(lines.front().second, "raised"));
    CHECK_FALSE(contains(lines.front().second, "SECRET-PAYLOAD-42"));
}

TEST_CASE("with_logging: a sink of its own, and logging outermost records what the timeout decided") {
    CapturedLog global;
    std::vector<std::string> mine;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::promise<void> finished;
    std::future<void> done = finished.get_future();
    auto handler = acemq::chain(
        [&, released](const acemq::Message<Order>&) {
            released.wait_for(10s);
            finished.set_value();
            return acemq::accept();
        },
        acemq::with_logging([&](acemq::LogLevel, std::string_view line) { mine.emplace_back(line); }),
        acemq::with_timeout(20ms));
    const acemq::Message<Order> message = message_of(Order{"o-1", 100});

    CHECK(handler(message).kind() == acemq::AckKind::retry);
    release.set_value();
    REQUIRE(done.wait_for(10s) == std::future_status::ready);
    REQUIRE(mine.size() == 1);
    CHECK(contains(mine.front(), "retry: acemq::HandlerTimeoutError: acemq: handling message " + message.envelope.id +
                                     " did not finish within 20ms"));
    for (const auto& [level, line] : global.lines()) CHECK_FALSE(contains(line, "took="));
}
