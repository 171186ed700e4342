// What a Requester reports through the bus's Metrics and Tracer (docs/request-reply.md §4,
// docs/wire-contract.md §10): acemq.request.total and acemq.request.duration by
// routing key and outcome, and a "<destination> request" CLIENT span per call whose child is
// the request's publish, on the transport the suite names (ACEMQ_CONFORMANCE_URL).
#include "../conformance/conformance.hpp"

#include <mutex>
#include <regex>
#include <vector>

using namespace conformance;
using acemq::Labels;
using acemq::Message;
using test_messages::Payment;
namespace metric = acemq::metric;

namespace {

Labels requested(const std::string& routing_key, std::string_view outcome) {
    return {{"routing.key", routing_key}, {"outcome", std::string(outcome)}};
}

// The lines a json_lines_tracer wrote, kept for the test to search.
struct SpanLines {
    std::mutex lock;
    std::vector<std::string> lines;

    std::vector<std::string> named(const std::string& name) {
        std::lock_guard guard(lock);
        std::vector<std::string> found;
        for (const std::string& line : lines)
            if (line.find("\"name\":\"" + name + "\"") != std::string::npos) found.push_back(line);
        return found;
    }
};

std::string field_of(const std::string& line, const std::string& field) {
    std::smatch match;
    const std::regex pattern("\"" + field + "\":\"([0-9a-f]+)\"");
    return std::regex_search(line, match, pattern) ? match[1].str() : std::string("<none>");
}

bool has(const std::string& line, const std::string& text) { return line.find(text) != std::string::npos; }

}  // namespace

TEST_CASE("a requester counts each call by routing key and outcome, and traces it as a request CLIENT span") {
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    auto spans = std::make_shared<SpanLines>();
    auto tracer = acemq::json_lines_tracer([spans](std::string_view line) {
        std::lock_guard guard(spans->lock);
        spans->lines.emplace_back(line);
    });
    Fixture f{{.metrics = metrics, .tracer = tracer}};
    const std::string quotes = f.source_queue("quotes");
    const std::string silent = f.source_queue("silent");
    acemq::Responder responder = acemq::serve<Order>(f.bus(), quotes, [](const Message<Order>& request) {
        if (request.payload.cents < 0) throw std::invalid_argument("a negative amount");
        return Payment{request.payload.id, request.payload.cents};
    });
    acemq::Requester asker{f.bus(), "", quotes};
    acemq::Requester unheard{f.bus(), "", silent};

    CHECK(asker.ask<Payment>(Order{"o-1", 5}, {.timeout = 10s}).cents == 5);
    CHECK_THROWS_AS(asker.ask<Payment>(Order{"o-2", -1}, {.timeout = 10s}), acemq::ResponderError);
    CHECK_THROWS_AS(unheard.ask<Payment>(Order{"o-3", 1}, {.timeout = 300ms}), acemq::RequestTimeoutError);

    CHECK(metrics->counter(metric::request_total, requested(quotes, "answered")) == 1);
    CHECK(metrics->counter(metric::request_total, requested(quotes, "failed")) == 1);
    CHECK(metrics->counter(metric::request_total, requested(quotes, "timed_out")) == 0);
    CHECK(metrics->counter(metric::request_total, requested(silent, "timed_out")) == 1);
    CHECK(metrics->summary(metric::request_duration, requested(quotes, "answered")).count == 1);
    CHECK(metrics->summary(metric::request_duration, requested(silent, "timed_out")).count == 1);
    CHECK(metrics->summary(metric::request_duration, requested(silent, "timed_out")).sum >= 0.3);

    tracer->flush();
    const std::vector<std::string> calls = spans->named(quotes + " request");
    REQUIRE(calls.size() == 2);
    for (const std::string& call : calls) {
        CHECK(has(call, "\"kind\":\"CLIENT\""));
        CHECK(has(call, "\"messaging.operation\":\"request\""));
        CHECK(has(call, "\"messaging.destination.name\":\"" + quotes + "\""));
    }
    const std::string& answered = calls[0];
    CHECK(has(answered, "\"messaging.acemq.outcome\":\"answered\""));
    CHECK_FALSE(has(answered, "\"status\""));
    const std::string& failed = calls[1];
    CHECK(has(failed, "\"messaging.acemq.outcome\":\"failed\""));
    CHECK(has(failed,
              "\"status\":\"ERROR\",\"statusDescription\":\"acemq: the responder failed: "
              "std::invalid_argument: a negative amount\""));
    const std::vector<std::string> timed_out = spans->named(silent + " request");
    REQUIRE(timed_out.size() == 1);
    CHECK(has(timed_out[0], "\"messaging.acemq.outcome\":\"timed_out\""));
    CHECK_FALSE(has(timed_out[0], "\"status\""));

    // The request's publish is the call's child, and the responder's handling is in its trace.
    const std::vector<std::string> publishes = spans->named(quotes + " publish");
    REQUIRE(publishes.size() >= 1);
    CHECK(field_of(publishes[0], "parentSpanId") == field_of(answered, "spanId"));
    CHECK(field_of(publishes[0], "traceId") == field_of(answered, "traceId"));
    const std::vector<std::string> handled = spans->named(quotes + " process");
    REQUIRE(handled.size() >= 1);
    CHECK(field_of(handled[0], "traceId") == field_of(answered, "traceId"));
}
