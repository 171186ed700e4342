// What the engine reports through the Metrics and Tracer seams (docs/wire-contract.md §10,
// docs/observability.md), on the transport the suite names (ACEMQ_CONFORMANCE_URL).
#include "../conformance/conformance.hpp"

#include <acemq/stores/memory_outbox_store.hpp>

#include <mutex>

using namespace conformance;
using acemq::Labels;
using acemq::Message;
using acemq::Outcome;
namespace metric = acemq::metric;

namespace {

Labels consumed(const std::string& queue, std::string_view outcome) {
    return {{"queue", queue}, {"outcome", std::string(outcome)}};
}

// Keeps every span as it ended, for the tests to look at.
class RecordingTracer final : public acemq::Tracer {
public:
    struct Recorded {
        std::string name;
        acemq::SpanKind kind;
        acemq::TraceContext context;
        std::optional<acemq::TraceContext> parent;
        acemq::Attributes attributes;
        std::vector<std::string> events;
        std::optional<std::string> error;
        int ended = 0;

        std::string text(std::string_view key) const {
            for (const auto& [name, value] : attributes)
                if (name == key)
                    if (const auto* text = std::get_if<std::string>(&value)) return *text;
            return {};
        }
    };

    std::unique_ptr<acemq::Span> start_span(const acemq::SpanStart& start) override {
        auto span = std::make_unique<RecordingSpan>(*this);
        span->recorded.name = std::string(start.name);
        span->recorded.kind = start.kind;
        span->recorded.context = start.parent ? start.parent->new_child() : acemq::TraceContext::new_root();
        if (start.parent) span->recorded.parent = *start.parent;
        span->recorded.attributes = acemq::to_owned(start.attributes);
        return span;
    }

    std::vector<Recorded> spans() const {
        std::lock_guard guard(lock_);
        return ended_;
    }
    std::vector<Recorded> named(std::string_view name) const {
        std::vector<Recorded> found;
        for (const auto& span : spans())
            if (span.name == name) found.push_back(span);
        return found;
    }

private:
    class RecordingSpan final : public acemq::Span {
    public:
        explicit RecordingSpan(RecordingTracer& tracer) : tracer_(tracer) {}
        ~RecordingSpan() override { end(); }
        const acemq::TraceContext& context() const override { return recorded.context; }
        void set_attribute(std::string_view key, acemq::AttributeValue value) override {
            recorded.attributes.emplace_back(std::string(key), std::move(value));
        }
        void add_event(std::string_view name, acemq::Attributes) override { recorded.events.emplace_back(name); }
        void set_error(std::string_view description) override { recorded.error = std::string(description); }
        void end() override {
            if (recorded.ended++ > 0) return;
            std::lock_guard guard(tracer_.lock_);
            tracer_.ended_.push_back(recorded);
        }
        Recorded recorded;

    private:
        RecordingTracer& tracer_;
    };

    mutable std::mutex lock_;
    std::vector<Recorded> ended_;
};

}  // namespace

TEST_CASE("every settlement is counted once under the engine's outcome, with its second views") {
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    Fixture f{{.metrics = metrics}};
    const std::string queue = f.source_queue("counted");
    auto consumer = f.bus().consume<Order>(queue,
                                           [](const Message<Order>& message) -> acemq::Ack {
                                               if (message.payload.id == "retry-once" && message.envelope.attempt == 1)
                                                   return acemq::retry(std::runtime_error("busy"));
                                               if (message.payload.id == "always-fails")
                                                   return acemq::retry(std::runtime_error("still busy"));
                                               if (message.payload.id == "bad")
                                                   return acemq::reject(std::invalid_argument("no such sku"));
                                               return acemq::accept();
                                           },
                                           {.retry = acemq::fixed_retry(2, 20ms)});
    acemq::Publisher orders = f.bus().publisher_to_queue(queue);
    for (const char* id : {"ok", "retry-once", "always-fails", "bad"}) orders.send(Order{id, 1});
    // Bytes no codec reads: parked without reaching the handler.
    orders.send_raw(acemq::Encoded{acemq::Bytes{std::byte{0xc1}}, "application/msgpack"});

    REQUIRE(f.harness().wait_settled(queue, Outcome::acked, 2, 10s));
    REQUIRE(f.harness().wait_settled(queue, Outcome::dead_lettered, 1, 10s));
    REQUIRE(f.harness().wait_settled(queue, Outcome::rejected, 1, 10s));
    REQUIRE(f.harness().wait_settled(queue, Outcome::parked, 1, 10s));
    consumer.close();

    CHECK(metrics->counter(metric::consume_total, consumed(queue, "acked")) == 2);
    CHECK(metrics->counter(metric::consume_total, consumed(queue, "retried")) == 2);
    CHECK(metrics->counter(metric::consume_total, consumed(queue, "dead_lettered")) == 1);
    CHECK(metrics->counter(metric::consume_total, consumed(queue, "rejected")) == 1);
    CHECK(metrics->counter(metric::consume_total, consumed(queue, "parked")) == 1);
    CHECK(metrics->counter(metric::retried_total, {{"queue", queue}, {"outcome", "retried"}, {"where", "consumer"}}) ==
          2);
    CHECK(metrics->counter(metric::dead_lettered_total, consumed(queue, "dead_lettered")) == 1);
    CHECK(metrics->counter(metric::dead_lettered_total, consumed(queue, "rejected")) == 1);
    CHECK(metrics->counter(metric::dead_lettered_total, consumed(queue, "parked")) == 1);
    // Durations only for deliveries that reached a handler: not the undecodable one.
    CHECK(metrics->summary(metric::consume_duration, consumed(queue, "acked")).count == 2);
    CHECK(metrics->summary(metric::consume_duration, consumed(queue, "parked")).count == 0);
    CHECK(metrics->summary(metric::consume_attempts, {{"queue", queue}}).count == 7);
    CHECK(metrics->summary(metric::consume_attempts, {{"queue", queue}}).max == 2);
    CHECK(metrics->gauge_value(metric::consume_in_flight, {{"queue", queue}}) == 0);

    const Labels sent{{"exchange", ""}, {"routing.key", queue}, {"outcome", "confirmed"}};
    CHECK(metrics->counter(metric::publish_total, sent) == 5);
    CHECK(metrics->summary(metric::publish_duration, sent).count == 5);
}

TEST_CASE("a retry waiting on a rung is counted where=broker; an unroutable publish as unroutable") {
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    Fixture f{{.metrics = metrics}};
    const std::string queue = f.source_queue("rungs");
    auto consumer = f.bus().consume<Order>(
        queue,
        [](const Message<Order>& message) {
            return message.envelope.attempt == 1 ? acemq::retry(std::runtime_error("busy")) : acemq::accept();
        },
        {.retry = acemq::fixed_retry(2, 200ms).wait_in_broker_from(100ms)});
    f.bus().publisher_to_queue(queue).send(Order{"o-1", 1});
    REQUIRE(f.harness().wait_settled(queue, Outcome::acked, 1, 10s));
    consumer.close();
    CHECK(metrics->counter(metric::retried_total, {{"queue", queue}, {"outcome", "retried"}, {"where", "broker"}}) ==
          1);

    const std::string nowhere = f.name("nowhere");
    CHECK_THROWS_AS(f.bus().publisher_to_queue(nowhere, {.mandatory = true}).send(Order{"o-2", 1}),
                    acemq::PublishError);
    CHECK(metrics->counter(metric::publish_total,
                           {{"exchange", ""}, {"routing.key", nowhere}, {"outcome", "unroutable"}}) == 1);
}

TEST_CASE("the trace crosses the broker and survives a retry ladder, a dead letter and the outbox") {
    auto tracer = std::make_shared<RecordingTracer>();
    Fixture f{{.tracer = tracer}};
    const std::string queue = f.source_queue("traced");
    const std::string relayed = f.source_queue("relayed");
    acemq::InMemoryOutboxStore outbox;
    auto consumer =
        f.bus().consume<Order>(queue,
                               [&](const Message<Order>& message) {
                                   if (message.payload.id == "announce") {
                                       outbox.add(acemq::record_to_queue(f.bus(), relayed, Order{"announced", 1}));
                                       return acemq::accept();
                                   }
                                   return acemq::retry(std::runtime_error("busy"));  // three attempts, then .dlq
                               },
                               {.retry = acemq::fixed_retry(3, 150ms).wait_in_broker_from(100ms)});
    auto relayed_consumer = f.bus().consume<Order>(relayed, [](const Message<Order>&) { return acemq::accept(); });

    f.bus().publisher_to_queue(queue).send(Order{"doomed", 1});
    REQUIRE(f.harness().wait_settled(queue, Outcome::dead_lettered, 1, 15s));
    const auto publishes = tracer->named(queue + " publish");
    REQUIRE(publishes.size() == 1);
    const acemq::TraceContext sent = publishes[0].context;
    CHECK(publishes[0].kind == acemq::SpanKind::producer);
    CHECK(publishes[0].text("messaging.operation") == "publish");
    CHECK(publishes[0].text("messaging.acemq.outcome") == "confirmed");

    auto processes = tracer->named(queue + " process");
    REQUIRE(processes.size() == 3);
    for (const auto& process : processes) {
        CHECK(process.kind == acemq::SpanKind::consumer);
        REQUIRE(process.parent);
        CHECK(process.parent->trace_id == sent.trace_id);
        CHECK(process.parent->span_id == sent.span_id);  // each attempt a child of the publish
    }
    CHECK(processes[0].text("messaging.acemq.outcome") == "retried");
    CHECK(processes[0].events == std::vector<std::string>{"message.retried"});
    CHECK_FALSE(processes[0].error);
    CHECK(processes[2].text("messaging.acemq.outcome") == "dead_lettered");
    CHECK(processes[2].events == std::vector<std::string>{"message.dead_lettered"});
    CHECK(processes[2].error);

    auto dead = f.pull(acemq::dead_letter_queue(queue));
    REQUIRE(dead);
    const auto in_dead_letter = acemq::extract_trace(envelope_of(*dead).headers);
    REQUIRE(in_dead_letter);
    CHECK(in_dead_letter->trace_id == sent.trace_id);
    dead->ack();

    // A record made inside a handler carries that delivery's trace through the relay.
    f.bus().publisher_to_queue(queue).send(Order{"announce", 1});
    REQUIRE(f.harness().wait_settled(queue, Outcome::acked, 1, 10s));
    REQUIRE(outbox.count() == 1);
    acemq::OutboxRelay relay{f.bus(), outbox};
    CHECK(relay.sweep() == 1);
    REQUIRE(f.harness().wait_settled(relayed, Outcome::acked, 1, 10s));
    relayed_consumer.close();
    consumer.close();
    const auto announce_publish = tracer->named(queue + " publish").back();
    const auto relay_publish = tracer->named(relayed + " publish");
    REQUIRE(relay_publish.size() == 1);
    CHECK(relay_publish[0].context.trace_id == announce_publish.context.trace_id);
    const auto relayed_process = tracer->named(relayed + " process");
    REQUIRE(relayed_process.size() == 1);
    REQUIRE(relayed_process[0].parent);
    CHECK(relayed_process[0].parent->span_id == relay_publish[0].context.span_id);
    CHECK(relayed_process[0].context.trace_id == announce_publish.context.trace_id);
}

TEST_CASE("a publish inside a handler is a child of the delivery's span") {
    auto tracer = std::make_shared<RecordingTracer>();
    Fixture f{{.tracer = tracer}};
    const std::string first = f.source_queue("first");
    const std::string second = f.source_queue("second");
    auto forwarder = f.bus().consume<Order>(first, [&](const Message<Order>& message) {
        f.bus().publisher_to_queue(second).send(message.payload);
        return acemq::accept();
    });
    auto sink = f.bus().consume<Order>(second, [](const Message<Order>&) { return acemq::accept(); });
    f.bus().publisher_to_queue(first).send(Order{"o-1", 1});
    REQUIRE(f.harness().wait_settled(second, Outcome::acked, 1, 10s));
    forwarder.close();
    sink.close();
    const auto handling = tracer->named(first + " process");
    const auto forwarded = tracer->named(second + " publish");
    REQUIRE(handling.size() == 1);
    REQUIRE(forwarded.size() == 1);
    REQUIRE(forwarded[0].parent);
    CHECK(forwarded[0].parent->span_id == handling[0].context.span_id);
    CHECK(forwarded[0].context.trace_id == handling[0].context.trace_id);
}

TEST_CASE("a traced publish renders its own traceparent among the headers, a child of one the application set") {
    auto tracer = std::make_shared<RecordingTracer>();
    acemq::BusOptions options{.tracer = tracer};
    // Interceptors the sections switch on: one that spoils the envelope before the message is
    // made, one that fails after it is.
    auto spoil = std::make_shared<bool>(false);
    auto fail_after = std::make_shared<bool>(false);
    options.publish_interceptors.push_back(
        [spoil, fail_after](acemq::PublishContext& context, const acemq::PublishNext& next) {
            if (*spoil) context.envelope.version = 0;
            next(context);
            if (*fail_after) throw std::runtime_error("the interceptor gave up after the message was made");
        });
    Fixture f{std::move(options)};
    const std::string queue = f.source_queue("trace-rendered");
    const std::string publish_span = queue + " publish";

    SECTION("the application's traceparent is the parent; the message carries the span's, in name order") {
        const auto parent = acemq::TraceContext::parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
        REQUIRE(parent);
        acemq::SendOptions send;
        send.headers = {{"aaa", acemq::FieldValue("first")},
                        {"traceparent", acemq::FieldValue(parent->traceparent())},
                        {"zzz", acemq::FieldValue("last")}};
        f.bus().publisher_to_queue(queue).send(Order{"o-1", 1}, send);
        const auto spans = tracer->named(publish_span);
        REQUIRE(spans.size() == 1);
        REQUIRE(spans[0].parent);
        CHECK(spans[0].parent->span_id == parent->span_id);
        CHECK(spans[0].context.trace_id == parent->trace_id);

        auto delivery = f.pull(queue);
        REQUIRE(delivery);
        const acemq::PackedHeaders headers = delivery->message().headers();
        CHECK(headers.at("traceparent") == acemq::FieldValue(spans[0].context.traceparent()));
        CHECK_FALSE(headers.contains("tracestate"));
        CHECK(headers.at("aaa") == acemq::FieldValue("first"));
        CHECK(headers.at("zzz") == acemq::FieldValue("last"));
        std::vector<std::string> names;
        for (auto entry = headers.begin(); entry != headers.end(); ++entry) names.emplace_back(entry.name());
        CHECK(std::ranges::is_sorted(names));
        CHECK(std::ranges::adjacent_find(names) == names.end());
        delivery->ack();
    }
    SECTION("the parent's tracestate goes on with the span's traceparent, in its place") {
        acemq::SendOptions send;
        send.headers = {{"traceparent", acemq::FieldValue("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
                        {"tracestate", acemq::FieldValue("vendor=1,other=2")},
                        {"tracez", acemq::FieldValue("after both")}};
        f.bus().publisher_to_queue(queue).send(Order{"o-3", 3}, send);
        const auto spans = tracer->named(publish_span);
        REQUIRE(spans.size() == 1);
        auto delivery = f.pull(queue);
        REQUIRE(delivery);
        const acemq::PackedHeaders headers = delivery->message().headers();
        CHECK(headers.at("traceparent") == acemq::FieldValue(spans[0].context.traceparent()));
        CHECK(headers.at("tracestate") == acemq::FieldValue("vendor=1,other=2"));
        CHECK(headers.at("tracez") == acemq::FieldValue("after both"));
        std::vector<std::string> names;
        for (auto entry = headers.begin(); entry != headers.end(); ++entry) names.emplace_back(entry.name());
        CHECK(std::ranges::is_sorted(names));
        delivery->ack();
    }
    SECTION("a tracestate without a traceparent is dropped: the span starts a trace of its own") {
        acemq::SendOptions send;
        send.headers = {{"tracestate", acemq::FieldValue("vendor=1")}};
        f.bus().publisher_to_queue(queue).send(Order{"o-4", 4}, send);
        const auto spans = tracer->named(publish_span);
        REQUIRE(spans.size() == 1);
        CHECK_FALSE(spans[0].parent);
        auto delivery = f.pull(queue);
        REQUIRE(delivery);
        const acemq::PackedHeaders headers = delivery->message().headers();
        CHECK(headers.at("traceparent") == acemq::FieldValue(spans[0].context.traceparent()));
        CHECK_FALSE(headers.contains("tracestate"));
        delivery->ack();
    }
    SECTION("a publish whose envelope cannot be sent starts no span") {
        *spoil = true;
        CHECK_THROWS_AS(f.bus().publisher_to_queue(queue).send(Order{"o-2", 2}), acemq::InvalidArgument);
        CHECK(tracer->named(publish_span).empty());
    }
    SECTION("a publish an interceptor fails after the message was made ends its span as failed") {
        *fail_after = true;
        CHECK_THROWS_WITH(f.bus().publisher_to_queue(queue).send(Order{"o-3", 3}),
                          Catch::Contains("gave up after the message was made"));
        const auto spans = tracer->named(publish_span);
        REQUIRE(spans.size() == 1);
        CHECK(spans[0].text("messaging.acemq.outcome") == "failed");
        REQUIRE(spans[0].error);
        CHECK_THAT(*spans[0].error, Catch::Contains("gave up"));
    }
}
