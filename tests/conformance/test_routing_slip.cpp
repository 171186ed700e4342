// Routing slips through a real bus (docs/routing-slips.md §1–4): three-step runs in both wire forms, the form kept at each hop, the
// conversation carried, the run counted once at its end; what a stage's failure becomes;
// and hostile slips — garbage, 1 MB, a next hop that cannot carry the slip — each with a
// clear outcome and nothing lost.
#include "../support/handmade.hpp"
#include "conformance.hpp"

#include <mutex>
#include <string>
#include <vector>

using namespace conformance;
using acemq::Message;
using acemq::Outcome;
using acemq::RoutingSlip;
using acemq::SlipForm;
using handmade::contains;

namespace {

// What one stage saw of each message it handled.
struct Hop {
    std::string stage;
    acemq::Envelope envelope;
    std::int64_t cents = 0;
};

class Hops {
public:
    void add(std::string stage, const Message<Order>& message) {
        std::lock_guard guard(lock_);
        hops_.push_back({std::move(stage), message.envelope, message.payload.cents});
    }
    std::vector<Hop> all() const {
        std::lock_guard guard(lock_);
        return hops_;
    }

private:
    mutable std::mutex lock_;
    std::vector<Hop> hops_;
};

// A stage that records what it saw and adds `cents` to the order it sends on.
auto stage(Hops& hops, std::string name, std::int64_t cents) {
    return [&hops, name, cents](const Message<Order>& message) {
        hops.add(name, message);
        return Order{message.payload.id, message.payload.cents + cents};
    };
}

acemq::Labels run_labels(const std::string& pipeline, const std::string& step) {
    return {{"pipeline", pipeline}, {"step", step}, {"outcome", "completed"}};
}

// Lines of the spans the bus ended, as json_lines_tracer writes them (on its writer thread:
// each read flushes it first).
class SpanLines {
public:
    std::shared_ptr<acemq::Tracer> tracer() {
        tracer_ = acemq::json_lines_tracer([this](std::string_view line) {
            std::lock_guard guard(lock_);
            lines_.emplace_back(line);
        });
        return tracer_;
    }
    std::size_t count(std::string_view part) const {
        tracer_->flush();
        std::lock_guard guard(lock_);
        std::size_t found = 0;
        for (const std::string& line : lines_) found += contains(line, part) ? 1 : 0;
        return found;
    }
    std::vector<std::string> with(std::string_view part) const {
        tracer_->flush();
        std::lock_guard guard(lock_);
        std::vector<std::string> found;
        for (const std::string& line : lines_)
            if (contains(line, part)) found.push_back(line);
        return found;
    }

private:
    mutable std::mutex lock_;
    std::vector<std::string> lines_;
    std::shared_ptr<acemq::Tracer> tracer_;  // last: destroyed first, it writes what it holds into lines_
};

// Checks the three hops of one run: the stages in order, the form, the conversation and the
// causation chain, the payload grown by each stage.
void check_run(const std::vector<Hop>& hops, const acemq::SendResult& started, SlipForm form) {
    REQUIRE(hops.size() == 3);
    CHECK(hops[0].stage == "one");
    CHECK(hops[1].stage == "two");
    CHECK(hops[2].stage == "three");
    CHECK(hops[0].envelope.id == started.message_id);
    for (std::size_t i = 0; i < hops.size(); ++i) {
        INFO("hop " << i);
        const acemq::Envelope& envelope = hops[i].envelope;
        CHECK(envelope.correlation == "run-corr");
        CHECK(envelope.causation == (i == 0 ? std::string() : hops[i - 1].envelope.id));
        CHECK(hops[i].cents == 100 + (i >= 1 ? 1 : 0) + (i >= 2 ? 10 : 0));
        if (form == SlipForm::json_header) {
            CHECK(envelope.headers.contains(acemq::header::routing_slip));
            CHECK(envelope.route.empty());
        } else {
            CHECK_FALSE(envelope.headers.contains(acemq::header::routing_slip));
            CHECK(envelope.route.size() == 3);
            CHECK(envelope.route_position == static_cast<std::int32_t>(i));
            CHECK(envelope.route_id == hops[0].envelope.route_id);
        }
        const std::optional<RoutingSlip> slip = acemq::slip_from(envelope, "p");
        REQUIRE(slip);
        CHECK(slip->done().size() == i);
    }
}

}  // namespace

TEST_CASE("slip: a three-step JSON slip runs end to end, keeps its form, and is counted once at its end") {
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    SpanLines spans;
    Fixture f({.metrics = metrics, .tracer = spans.tracer()});
    const std::string one = f.source_queue("one"), two = f.source_queue("two"), three = f.source_queue("three");
    Hops hops;
    acemq::Consumer c1 = f.bus().consume(one, acemq::follow_slip<Order>(f.bus(), stage(hops, "one", 1)));
    acemq::Consumer c2 = f.bus().consume(two, acemq::follow_slip<Order>(f.bus(), stage(hops, "two", 10)));
    acemq::Consumer c3 = f.bus().consume(three, acemq::follow_slip<Order>(f.bus(), stage(hops, "three", 1000)));

    const RoutingSlip slip = RoutingSlip{}.then("", one).then("", two, "second").then("", three);
    const acemq::SendResult started =
        acemq::start(f.bus(), slip, Order{"o-1", 100}, {.send = {.correlation = "run-corr"}});
    REQUIRE(f.harness().wait_settled(three, Outcome::acked, 1, 10s));

    check_run(hops.all(), started, SlipForm::json_header);
    const std::optional<RoutingSlip> last = acemq::slip_from(hops.all().at(2).envelope);
    REQUIRE(last);
    CHECK(last->done().at(1).name == "second");
    CHECK_FALSE(last->done().at(0).completed_at.empty());
    // Counted once, by the last stage, with the first step's exchange ("" here) as pipeline.
    CHECK(metrics->counter("acemq.pipeline.run.total", run_labels("", three)) == 1);
    CHECK(metrics->summary("acemq.pipeline.run.duration", run_labels("", three)).count == 1);
    // A stage's own settlement may come after the next stage's: wait for it.
    CHECK(f.harness().wait_settled(one, Outcome::acked, 1, 10s));
    CHECK(f.harness().wait_settled(two, Outcome::acked, 1, 10s));
    // Nothing was sent after the last step: three publishes in all, the start and two hops
    // (a confirm may come after the delivery it confirms: wait for each).
    for (const std::string& key : {one, two, three}) CHECK(f.harness().wait_published(key, 1, 10s));
    CHECK(f.harness().published().size() == 3);
    c1.close();
    c2.close();
    c3.close();
    const std::vector<std::string> finished = spans.with("\"pipeline.run_finished\"");
    REQUIRE(finished.size() == 1);
    CHECK(contains(finished[0], three + " process"));
    CHECK(contains(finished[0], "\"outcome\":\"completed\""));
    CHECK(contains(finished[0], "\"step\":\"" + three + "\""));
    CHECK(contains(finished[0], "\"messaging.acemq.run_age_ms\""));
}

TEST_CASE("slip: a declared three-step pipeline runs end to end in the step-names form") {
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    Fixture f({.metrics = metrics});
    const std::string pipeline = f.name("pipe");
    f.bus().declare(acemq::pipeline_topology(pipeline, {"one", "two", "three"}, {.dead_letter = true}));
    Hops hops;
    const acemq::FollowSlipOptions options{.pipeline = pipeline};
    acemq::Consumer c1 =
        f.bus().consume(pipeline + ".one", acemq::follow_slip<Order>(f.bus(), stage(hops, "one", 1), options));
    acemq::Consumer c2 =
        f.bus().consume(pipeline + ".two", acemq::follow_slip<Order>(f.bus(), stage(hops, "two", 10), options));
    acemq::Consumer c3 =
        f.bus().consume(pipeline + ".three", acemq::follow_slip<Order>(f.bus(), stage(hops, "three", 1000), options));

    const acemq::SendResult started = acemq::start(f.bus(), acemq::route_of(pipeline, {"one", "two", "three"}),
                                                   Order{"o-2", 100}, {.send = {.correlation = "run-corr"}});
    REQUIRE(f.harness().wait_settled(pipeline + ".three", Outcome::acked, 1, 10s));
    check_run(hops.all(), started, SlipForm::step_names);
    CHECK(metrics->counter("acemq.pipeline.run.total", run_labels(pipeline, "three")) == 1);
    for (const std::string key : {"one", "two", "three"}) CHECK(f.harness().wait_published(key, 1, 10s));
    CHECK(f.harness().published().size() == 3);
}

TEST_CASE("slip: a JSON slip started as step names travels as step names; form given to follow_slip changes it") {
    Fixture f;
    const std::string pipeline = f.name("pipe");
    f.bus().declare(acemq::pipeline_topology(pipeline, {"one", "two"}, {.dead_letter = true}));
    Hops hops;
    acemq::Consumer c1 = f.bus().consume(
        pipeline + ".one", acemq::follow_slip<Order>(f.bus(), stage(hops, "one", 1),
                                                     {.pipeline = pipeline, .form = SlipForm::json_header}));
    acemq::Consumer c2 = f.bus().consume(
        pipeline + ".two", acemq::follow_slip<Order>(f.bus(), stage(hops, "two", 1), {.pipeline = pipeline}));
    const RoutingSlip slip = RoutingSlip{}.then(pipeline, "one").then(pipeline, "two");
    acemq::start(f.bus(), slip, Order{"o-3", 0}, {.form = SlipForm::step_names});
    REQUIRE(f.harness().wait_settled(pipeline + ".two", Outcome::acked, 1, 10s));
    const std::vector<Hop> seen = hops.all();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].envelope.route == std::vector<std::string>{"one", "two"});
    CHECK(seen[1].envelope.route.empty());
    CHECK(seen[1].envelope.headers.contains(acemq::header::routing_slip));
}

TEST_CASE("slip: a stage's FatalError rejects to {queue}.dlq; another exception is retried and the run goes on") {
    Fixture f;
    const std::string one = f.source_queue("one"), two = f.source_queue("two");
    std::atomic<int> calls{0};
    acemq::Consumer c1 = f.bus().consume(one,
                                         acemq::follow_slip<Order>(f.bus(),
                                                                   [&](const Message<Order>& message) {
                                                                       if (message.payload.id == "fatal")
                                                                           throw acemq::FatalError("no such sku");
                                                                       if (calls.fetch_add(1) == 0)
                                                                           throw std::runtime_error("warehouse busy");
                                                                   }),
                                         {.retry = acemq::fixed_retry(3, 0ms)});
    Hops hops;
    acemq::Consumer c2 = f.bus().consume(two, acemq::follow_slip<Order>(f.bus(), stage(hops, "two", 0)));
    const RoutingSlip slip = RoutingSlip{}.then("", one).then("", two);

    acemq::start(f.bus(), slip, Order{"fatal", 5});
    REQUIRE(f.harness().wait_dead_lettered(one, 1, 10s));
    std::optional<acemq::Delivery> dead = f.pull(one + ".dlq");
    REQUIRE(dead);
    CHECK(contains(envelope_of(*dead).error, "the handler rejected it"));
    CHECK(contains(envelope_of(*dead).error, "no such sku"));
    CHECK(acemq::slip_from(envelope_of(*dead)));  // the slip is kept, to replay the run later
    dead->ack();

    acemq::start(f.bus(), slip, Order{"busy", 7});  // void stage: the payload goes on as it came
    REQUIRE(f.harness().wait_settled(two, Outcome::acked, 1, 10s));
    CHECK(f.harness().settled(one).at(1).settlement.outcome == Outcome::retried);
    REQUIRE(hops.all().size() == 1);
    CHECK(hops.all()[0].cents == 7);
    CHECK(calls.load() == 2);
}

TEST_CASE("slip: no slip at all, and a slip header of garbage, are rejected to {queue}.dlq with the reason") {
    Fixture f;
    const std::string one = f.source_queue("one");
    std::atomic<int> called{0};
    acemq::Consumer consumer =
        f.bus().consume(one, acemq::follow_slip<Order>(f.bus(), [&](const Message<Order>&) { ++called; }));
    acemq::Headers garbage;
    garbage.insert_or_assign(std::string(acemq::header::routing_slip), acemq::FieldValue("{\"steps\": [garbage"));
    f.bus().publisher_to_queue(one).send(Order{"g", 1}, {.headers = garbage});
    f.bus().publisher_to_queue(one).send(Order{"none", 1});
    REQUIRE(f.harness().wait_dead_lettered(one, 2, 10s));
    CHECK(called.load() == 0);
    std::vector<std::string> errors;
    for (int i = 0; i < 2; ++i) {
        std::optional<acemq::Delivery> dead = f.pull(one + ".dlq");
        REQUIRE(dead);
        errors.push_back(envelope_of(*dead).error);
        dead->ack();
    }
    std::sort(errors.begin(), errors.end(), [](const std::string& a, const std::string& b) {
        return contains(a, "cannot read") > contains(b, "cannot read");
    });
    CHECK(contains(errors[0], "cannot read the routing slip"));
    CHECK(contains(errors[1], "carries no routing slip"));
    for (const std::string& error : errors) CHECK(error.starts_with("the handler rejected it: acemq::FatalError: "));
}

TEST_CASE("slip: a send to the next step that fails is retried, one it can never carry (too_large) goes to the dlq") {
    // The transports' own refusals come from an interceptor here, so that every transport
    // answers alike; RabbitMQ's real too_large is in the 1 MB case below.
    std::atomic<int> refusals{0};
    std::atomic<bool> too_large{false};
    acemq::BusOptions options;
    options.publish_interceptors.push_back([&](acemq::PublishContext& context, const acemq::PublishNext& next) {
        if (context.routing_key.ends_with(".two") && refusals.fetch_add(1) == 0)
            throw acemq::PublishError(acemq::PublishError::Reason::in_doubt, "acemq: no confirm came (test)", "");
        if (context.routing_key.ends_with(".two") && too_large.load())
            throw acemq::PublishError(acemq::PublishError::Reason::too_large, "acemq: headers too large (test)", "");
        next(context);
    });
    Fixture f(std::move(options));
    const std::string one = f.source_queue("one"), two = f.source_queue("two");
    acemq::Consumer c1 = f.bus().consume(one, acemq::follow_slip<Order>(f.bus(), [](const Message<Order>&) {}),
                                         {.retry = acemq::fixed_retry(3, 0ms)});
    Hops hops;
    acemq::Consumer c2 = f.bus().consume(two, acemq::follow_slip<Order>(f.bus(), stage(hops, "two", 0)));
    const RoutingSlip slip = RoutingSlip{}.then("", one).then("", two);

    acemq::start(f.bus(), slip, Order{"in-doubt", 1});
    REQUIRE(f.harness().wait_settled(two, Outcome::acked, 1, 10s));
    CHECK(f.harness().settled(one).at(0).settlement.outcome == Outcome::retried);
    CHECK(hops.all().size() == 1);

    // The answers themselves, from the handler called by hand.
    auto handler = acemq::follow_slip<Order>(f.bus(), [](const Message<Order>&) {});
    Message<Order> incoming = handmade::message_of(Order{"by-hand", 3});
    incoming.envelope = slip.onto(incoming.envelope);
    refusals = 0;
    const acemq::Ack in_doubt = handler(incoming);
    CHECK(in_doubt.kind() == acemq::AckKind::retry);
    CHECK_FALSE(in_doubt.is_fatal());
    REQUIRE(in_doubt.failure());
    CHECK(contains(in_doubt.failure()->message, "is done but the next step did not go out: no confirm came (test)"));
    too_large = true;
    const acemq::Ack refused = handler(incoming);
    CHECK(refused.kind() == acemq::AckKind::reject);
    REQUIRE(refused.failure());
    CHECK(refused.failure()->fatal);
    CHECK(contains(refused.failure()->message, "the next step did not go out: headers too large (test)"));

    acemq::start(f.bus(), slip, Order{"large", 2});
    REQUIRE(f.harness().wait_dead_lettered(one, 1, 10s));
    std::optional<acemq::Delivery> dead = f.pull(one + ".dlq");
    REQUIRE(dead);
    CHECK(contains(envelope_of(*dead).error, "the next step did not go out: headers too large (test)"));
    CHECK(acemq::decode<Order>(*acemq::default_codec(), dead->message().body(), dead->message().content_type()).id ==
          "large");
    dead->ack();
    CHECK(hops.all().size() == 1);  // the large one never reached the next step
}

TEST_CASE("slip: a 1 MB slip header: refused too_large at start where the transport limits headers (amqp), else run") {
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    Fixture f({.metrics = metrics});
    const std::string one = f.source_queue("one"), two = f.source_queue("two");
    Hops hops;
    acemq::Consumer c1 = f.bus().consume(one, acemq::follow_slip<Order>(f.bus(), stage(hops, "one", 1)));
    acemq::Consumer c2 = f.bus().consume(two, acemq::follow_slip<Order>(f.bus(), stage(hops, "two", 1)));
    const RoutingSlip slip = RoutingSlip{}.then("", one, std::string(1 << 20, 'x')).then("", two);
    REQUIRE(slip.to_header().size() > (1u << 20));

    const std::size_t limit = f.transport().describe().max_properties_bytes;
    if (limit != 0 && limit < (1u << 20)) {
        try {
            acemq::start(f.bus(), slip, Order{"big", 1});
            FAIL("a 1 MB header went out on a transport that takes " << limit << " bytes of properties");
        } catch (const acemq::PublishError& error) {
            CHECK(error.reason() == acemq::PublishError::Reason::too_large);
        }
        CHECK(f.transport().queue_depth(one) == 0);
        CHECK(hops.all().empty());
    } else {
        acemq::start(f.bus(), slip, Order{"big", 1});
        REQUIRE(f.harness().wait_settled(two, Outcome::acked, 1, 10s));
        CHECK(hops.all().size() == 2);
        CHECK(metrics->counter("acemq.pipeline.run.total", run_labels("", two)) == 1);
    }
}
