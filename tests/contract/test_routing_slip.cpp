// The routing slip's two wire forms (docs/routing-slips.md §1, §2):
// the JSON header byte for byte, the declared route's reading, and what the step-names form
// refuses. Pure values: no broker.
#include <catch2/catch.hpp>

#include <acemq/envelope.hpp>
#include <acemq/routing_slip.hpp>
#include "../support/thrown.hpp"

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

using namespace acemq;

namespace {

// 2026-11-30T12:00:00.789Z
std::chrono::system_clock::time_point noonish() {
    using namespace std::chrono;
    return sys_days{year{2026} / 11 / 30} + hours(12) + milliseconds(789);
}

Envelope carrying(std::vector<std::string> route, std::int32_t position, std::string run_id = "run-1") {
    Envelope envelope = Envelope::for_new_message("orders.validate");
    envelope.route = std::move(route);
    envelope.route_position = position;
    envelope.route_id = std::move(run_id);
    return envelope;
}

std::string refusal_of(const RoutingSlip& slip) {
    try {
        (void)slip.written_as(SlipForm::step_names);
    } catch (const InvalidArgument& error) {
        return error.what();
    }
    return "(not refused)";
}

}  // namespace

TEST_CASE("the JSON header byte for byte: camelCase keys, empty name and completedAt left out, done only when any") {
    const RoutingSlip slip = RoutingSlip{}.then("orders", "validate", "check").then("billing", "charge");
    CHECK(slip.to_header() == R"({"steps":[{"exchange":"orders","routingKey":"validate","name":"check"},)"
                              R"({"exchange":"billing","routingKey":"charge"}]})");

    const RoutingSlip advanced = slip.advance(noonish());
    CHECK(
        advanced.to_header() ==
        R"({"steps":[{"exchange":"billing","routingKey":"charge"}],)"
        R"("done":[{"exchange":"orders","routingKey":"validate","name":"check","completedAt":"2026-11-30T12:00:00.789Z"}]})");

    const RoutingSlip finished = advanced.advance(noonish());
    CHECK(finished.finished());
    CHECK_FALSE(finished.next());
    CHECK(
        finished.to_header() ==
        R"({"steps":[],"done":[{"exchange":"orders","routingKey":"validate","name":"check","completedAt":)"
        R"("2026-11-30T12:00:00.789Z"},{"exchange":"billing","routingKey":"charge","completedAt":"2026-11-30T12:00:00.789Z"}]})");
    CHECK(finished.advance() == finished);  // advancing a finished slip changes nothing
    CHECK(RoutingSlip{}.to_header() == R"({"steps":[]})");
}

TEST_CASE("a slip is a value: then and advance return new slips and leave the old one as it was") {
    const RoutingSlip one = RoutingSlip{}.then("orders", "validate");
    const RoutingSlip two = one.then("orders", "ship");
    CHECK(one.steps().size() == 1);
    CHECK(two.steps().size() == 2);
    const RoutingSlip moved = two.advance(noonish());
    CHECK(two.done().empty());
    REQUIRE(moved.next());
    CHECK(moved.next()->routing_key == "ship");
    CHECK(moved.done().at(0).completed_at == "2026-11-30T12:00:00.789Z");
}

TEST_CASE("the JSON form reads back from an envelope, as bytes too; it wins over a declared route") {
    const RoutingSlip slip =
        RoutingSlip{}.then("orders", "validate", "check").then("billing", "charge").advance(noonish());
    Envelope envelope = slip.onto(carrying({"a", "b"}, 1));
    CHECK(envelope.route.empty());  // onto removes the other form
    std::optional<RoutingSlip> read = slip_from(envelope);
    REQUIRE(read);
    CHECK(*read == slip);
    CHECK(read->form() == SlipForm::json_header);

    const std::string text = slip.to_header();
    Bytes bytes(text.size());
    std::memcpy(bytes.data(), text.data(), text.size());
    envelope.headers.insert_or_assign(std::string(header::routing_slip), FieldValue(bytes));
    envelope.route = {"a", "b"};
    read = slip_from(envelope, "pipeline");
    REQUIRE(read);
    CHECK(*read == slip);
}

TEST_CASE("an unreadable JSON slip is a FatalError that says so; no slip at all is nullopt") {
    Envelope envelope = Envelope::for_new_message("orders.validate");
    CHECK_FALSE(slip_from(envelope));
    for (const FieldValue& bad :
         {FieldValue("{not json"), FieldValue(std::int64_t{42}), FieldValue(R"(["steps"])"),
          FieldValue(R"({"steps":[{"routingKey":"x"}]})"), FieldValue(R"({"steps":[{"exchange":1,"routingKey":"x"}]})"),
          FieldValue(R"({"steps":"validate"})"), FieldValue(Bytes{std::byte{0xff}, std::byte{0xfe}})}) {
        INFO(bad.to_string());
        envelope.headers.insert_or_assign(std::string(header::routing_slip), bad);
        CHECK_THAT(testing_support::what_of<FatalError>([&] { (void)slip_from(envelope); }),
                   Catch::Matchers::Contains("cannot read the routing slip") && Catch::Matchers::Contains(envelope.id));
    }
}

TEST_CASE("the declared route reads as steps on the pipeline's exchange, done up to the clamped position") {
    std::optional<RoutingSlip> read = slip_from(carrying({"validate", "charge", "ship"}, 1, "run-7"), "orders");
    REQUIRE(read);
    CHECK(read->form() == SlipForm::step_names);
    CHECK(read->run_id() == "run-7");
    REQUIRE(read->done().size() == 1);
    CHECK(read->done()[0] == SlipStep{"orders", "validate", "validate", ""});
    REQUIRE(read->steps().size() == 2);
    CHECK(read->steps()[0] == SlipStep{"orders", "charge", "charge", ""});
    CHECK(read->steps()[1] == SlipStep{"orders", "ship", "ship", ""});

    read = slip_from(carrying({"validate", "charge"}, 9), "orders");  // past the end: finished
    REQUIRE(read);
    CHECK(read->finished());
    CHECK(read->done().size() == 2);

    read = slip_from(carrying({"validate", "charge"}, -3), "orders");  // negative: from the start
    REQUIRE(read);
    CHECK(read->done().empty());
    CHECK(read->steps().size() == 2);

    // An unreadable position reads as 0 (read_envelope's tolerant reading).
    Headers headers = render_headers(carrying({"validate", "charge"}, 1));
    headers.insert_or_assign(std::string(header::route_position), FieldValue("first"));
    read = slip_from(read_envelope(headers, "orders.validate"), "orders");
    REQUIRE(read);
    CHECK(read->done().empty());

    read = slip_from(carrying({"validate"}, 0));  // no pipeline: the default exchange
    REQUIRE(read);
    CHECK(read->steps()[0].exchange.empty());
}

TEST_CASE("the step-names form writes route, position and run id, and reads back the same") {
    const RoutingSlip declared = route_of("orders", {"validate", "charge", "ship"}, "run-9").advance();
    const Envelope envelope = declared.onto(Envelope::for_new_message("x"));
    CHECK(envelope.route == std::vector<std::string>{"validate", "charge", "ship"});
    CHECK(envelope.route_position == 1);
    CHECK(envelope.route_id == "run-9");
    CHECK_FALSE(envelope.headers.contains(header::routing_slip));
    const Headers wire = render_headers(envelope);
    CHECK(wire.at(header::route) == FieldValue("validate,charge,ship"));
    CHECK(wire.at(header::route_position) == FieldValue(std::int32_t{1}));

    const std::optional<RoutingSlip> read = slip_from(read_envelope(wire, "x"), "orders");
    REQUIRE(read);
    CHECK(read->step_names() == declared.step_names());
    CHECK(read->done().size() == 1);
    CHECK(read->run_id() == "run-9");

    // A route with no run id gets a fresh one when written.
    const RoutingSlip fresh = route_of("orders", {"validate"});
    CHECK(fresh.run_id().size() == 36);
    CHECK(route_of("orders", {"validate"}).run_id() != fresh.run_id());
    CHECK_THAT(testing_support::what_of<InvalidArgument>([&] { (void)route_of("orders", {}); }),
               Catch::Matchers::Contains("at least one step"));

    // The other way: a declared slip written as JSON loses its route headers.
    Envelope routed = carrying({"validate", "charge"}, 0);
    const Envelope as_json = slip_from(routed, "orders")->written_as(SlipForm::json_header).onto(routed);
    CHECK(as_json.route.empty());
    CHECK(as_json.route_id.empty());
    CHECK(as_json.headers.contains(header::routing_slip));
}

TEST_CASE(
    "written as step names, a slip is refused with the reason: no steps, two exchanges, no name, two words, a comma") {
    CHECK_THAT(refusal_of(RoutingSlip{}), Catch::Matchers::Contains("no steps"));
    CHECK_THAT(refusal_of(RoutingSlip{}.then("orders", "validate").then("billing", "charge")),
               Catch::Matchers::Contains("span more than one exchange") && Catch::Matchers::Contains("\"billing\""));
    CHECK_THAT(refusal_of(RoutingSlip{}.then("orders", "validate").then("orders", "")),
               Catch::Matchers::Contains("step 2") && Catch::Matchers::Contains("neither a name nor a routing key"));
    CHECK_THAT(refusal_of(RoutingSlip{}.then("orders", "validate", "check")),
               Catch::Matchers::Contains("one word for both"));
    CHECK_THAT(refusal_of(RoutingSlip{}.then("orders", "a,b")), Catch::Matchers::Contains("contains a comma"));
    // Allowed: a name equal to the key, or only one of them.
    CHECK(RoutingSlip{}.then("orders", "validate", "validate").then("orders", "", "ship").step_names() ==
          std::vector<std::string>{"validate", "ship"});
    CHECK_NOTHROW(RoutingSlip{}.then("orders", "validate").then("billing", "charge").written_as(SlipForm::json_header));
}

TEST_CASE("a declared pipeline's topology: direct exchange = pipeline, queue {pipeline}.{step} bound on the step") {
    const Topology topology = pipeline_topology("orders", {"validate", "ship"});
    REQUIRE(topology.exchanges().size() == 1);
    CHECK(topology.exchanges()[0].name == "orders");
    CHECK(topology.exchanges()[0].kind == ExchangeKind::direct);
    REQUIRE(topology.bindings().size() == 2);
    CHECK(topology.bindings()[0].queue == "orders.validate");
    CHECK(topology.bindings()[0].exchange == "orders");
    CHECK(topology.bindings()[0].routing_key == "validate");
    CHECK(topology.bindings()[1].queue == "orders.ship");
    CHECK(topology.bindings()[1].routing_key == "ship");
    CHECK_THROWS_AS(pipeline_topology("orders", {"a,b"}), InvalidArgument);
    CHECK_THROWS_AS(pipeline_topology("", {"a"}), InvalidArgument);
}

TEST_CASE("the pipeline's metric and event names, byte for byte") {
    CHECK(metric::pipeline_run_total == "acemq.pipeline.run.total");
    CHECK(metric::pipeline_run_duration == "acemq.pipeline.run.duration");
    CHECK(tag::pipeline == "pipeline");
    CHECK(tag::step == "step");
    CHECK(span_event::pipeline_run_finished == "pipeline.run_finished");
    CHECK(span_attribute::run_age_ms == "messaging.acemq.run_age_ms");
    CHECK(header::routing_slip == "acemq-routing-slip");
    CHECK(to_string(SlipForm::json_header) == "json header");
    CHECK(to_string(SlipForm::step_names) == "step names");
}
