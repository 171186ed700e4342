// A publish the broker does not confirm is an error, never a silent success; and the
// engine's own republishes that are not confirmed never lose the message. The embedded
// broker confirms everything, so a transport in front of it refuses chosen routing keys.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include <mutex>

#include <thread>
#include "../support/forwarding_transport.hpp"
#include "../support/handmade.hpp"
#include "../support/messages.hpp"

using namespace std::chrono_literals;

namespace {

using test_messages::Order;

// The embedded broker, except that a publish whose routing key contains ".refused" is
// nacked, as a broker out of resources would.
class RefusingTransport final : public testing_support::ForwardingTransport {
public:
    using ForwardingTransport::ForwardingTransport;
    acemq::PublishResult publish(acemq::OutboundMessage message) override {
        if (message.routing_key.find(".refused") != std::string::npos)
            return acemq::PublishResult{.confirmed = false, .return_reason = "the broker said no"};
        return ForwardingTransport::publish(std::move(message));
    }
};

// A bus whose publishes to ".refused" keys are nacked, on the embedded broker `name`.
acemq::Bus refusing_bus(const std::string& name = "failures-" + acemq::new_uuid(), acemq::BusOptions options = {}) {
    acemq::register_transport("refusing", [](std::string_view url) -> std::shared_ptr<acemq::Transport> {
        const std::string broker(url.substr(std::string_view("refusing://").size()));
        return std::make_shared<RefusingTransport>(acemq::open_transport("inproc://" + broker));
    });
    return acemq::connect("refusing://" + name, std::move(options));
}

// Puts a message on `queue` through the broker itself, past the refusals.
void seed(const std::string& broker, const std::string& queue) {
    auto direct = acemq::open_transport("inproc://" + broker);
    const auto result = direct->publish(
        acemq::OutboundMessage{.routing_key = queue,
                               .body = acemq::encode(acemq::MsgpackCodec{}, Order{"o-9", 9}).body,
                               .content_type = "application/msgpack",
                               .message_id = "m-1",
                               .headers = acemq::render_headers(acemq::Envelope::for_new_message(queue)),
                               .mandatory = true});
    REQUIRE(result.confirmed);
    REQUIRE(result.routed);
}

}  // namespace

TEST_CASE("a nacked send throws PublishError with the family's sentence") {
    acemq::Bus bus = refusing_bus();
    bus.declare(acemq::Topology{}.queue("orders.refused"));
    try {
        bus.publisher_to_queue("orders.refused").send(Order{"o-1", 1});
        FAIL("a nacked publish returned normally");
    } catch (const acemq::PublishError& error) {
        CHECK(error.reason() == acemq::PublishError::Reason::refused);
        CHECK_THAT(
            error.what(),
            Catch::StartsWith("acemq: cannot publish message " + error.message_id() +
                              " to exchange \"\" with key \"orders.refused\": the broker refused to confirm it.") &&
                Catch::Contains("must be treated as not sent") && Catch::Contains("(the broker said no)"));
    }
}

TEST_CASE("a batch with nacked messages says how many and publishes the rest") {
    acemq::Bus bus = refusing_bus();
    bus.declare(acemq::Topology{}.queue("orders.ok").queue("orders.refused"));
    try {
        bus.publisher_to_queue("orders.refused").send_all(std::vector<Order>{{"a", 1}, {"b", 2}, {"c", 3}});
        FAIL("a nacked batch returned normally");
    } catch (const acemq::BatchPublishError& error) {
        CHECK(error.total() == 3);
        CHECK(error.failed() == 3);
        CHECK(error.results().size() == 3);
        CHECK(error.reason() == acemq::PublishError::Reason::refused);
        CHECK_THAT(error.what(), Catch::StartsWith("3 of 3 messages were not confirmed; 0 were. The first failure was: "
                                                   "acemq: cannot publish message"));
    }
    CHECK(bus.publisher_to_queue("orders.ok").send_all(std::vector<Order>{{"d", 4}}).size() == 1);
    CHECK(bus.transport().queue_depth("orders.ok") == 1);
}

TEST_CASE("a retry hop the broker refuses hands the message back instead of losing it") {
    const std::string name = "hop-" + acemq::new_uuid();
    acemq::Bus bus = refusing_bus(name);
    bus.declare(acemq::Topology{}.queue("work.refused"));
    std::mutex lock;
    std::vector<std::pair<std::int32_t, bool>> seen;  // attempt, redelivered
    auto consumer = bus.consume<Order>("work.refused",
                                       [&](const acemq::Message<Order>& message) {
                                           std::lock_guard guard(lock);
                                           seen.emplace_back(message.envelope.attempt, message.redelivered);
                                           return acemq::retry(std::runtime_error("try again"));
                                       },
                                       {.retry = acemq::fixed_retry(5, 0ms)});
    seed(name, "work.refused");
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    for (;;) {
        {
            std::lock_guard guard(lock);
            if (seen.size() >= 3 || std::chrono::steady_clock::now() >= deadline) break;
        }
        std::this_thread::sleep_for(1ms);
    }
    consumer.close();
    std::lock_guard guard(lock);
    REQUIRE(seen.size() >= 3);
    for (std::size_t i = 0; i < seen.size(); ++i) {
        CHECK(seen[i].first == 1);  // the attempt only advances with a confirmed republish
        if (i > 0) CHECK(seen[i].second);
    }
    CHECK(bus.transport().queue_depth("work.refused") == 1);  // still there, never lost
}

TEST_CASE("a set-aside the broker refuses hands the message back, counted, instead of losing it") {
    const std::string name = "aside-" + acemq::new_uuid();
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    acemq::Bus bus = refusing_bus(name, {.metrics = metrics});
    // Both the source queue and its .dlq carry ".refused": the engine's copy to the .dlq is
    // nacked, so the original goes back to its queue (docs/wire-contract.md §6.3).
    bus.declare(acemq::Topology{}.queue("orders.refused", {.dead_letter = true}));
    const acemq::Labels labels{{"queue", "orders.refused"}, {"target", "orders.refused.dlq"}};
    const handmade::CapturedLog log;
    auto consumer = bus.consume<Order>(
        "orders.refused", [](const acemq::Message<Order>&) { return acemq::reject(std::runtime_error("bad order")); });
    seed(name, "orders.refused");
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (metrics->counter(acemq::metric::set_aside_failed, labels) < 2 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
    REQUIRE(metrics->counter(acemq::metric::set_aside_failed, labels) >= 2);  // handed back, delivered again
    consumer.close();
    CHECK(bus.transport().queue_depth("orders.refused") == 1);  // still there, never lost
    CHECK(bus.transport().queue_depth("orders.refused.dlq") == 0);
    // The warning names the cause, the broker's refusal, and does not send the reader to
    // declare a queue that exists.
    std::string warning;
    for (const auto& [level, line] : log.lines())
        if (handmade::contains(line, "could not be set aside to orders.refused.dlq")) warning = line;
    INFO(warning);
    CHECK(handmade::contains(warning, "the broker refused to confirm it"));
    CHECK(handmade::contains(warning, "(the broker said no)"));
    CHECK_FALSE(handmade::contains(warning, "declare orders.refused.dlq"));
}

TEST_CASE("a BatchPublishError without a failure is refused: it would have no reason to give") {
    CHECK_THROWS_AS(acemq::BatchPublishError({std::nullopt, std::nullopt}, {}), acemq::InvalidArgument);
    CHECK_THROWS_WITH(acemq::BatchPublishError({}, {}), Catch::Contains("needs at least one failed message"));
}
