#include <acemq/envelope.hpp>
#include <acemq/tracing.hpp>

#include <catch2/catch.hpp>

#include <iterator>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace acemq;

namespace {
const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string span = "00f067aa0ba902b7";
const std::string good = "00-" + trace + "-" + span + "-01";
}  // namespace

TEST_CASE("traceparent parsing follows W3C trace context") {
    auto parsed = TraceContext::parse(good, "a=1");
    REQUIRE(parsed);
    CHECK(parsed->trace_id_hex() == trace);
    CHECK(parsed->span_id_hex() == span);
    CHECK(parsed->sampled());
    CHECK(parsed->state == "a=1");
    CHECK(parsed->traceparent() == good);

    CHECK_FALSE(TraceContext::parse("00-4BF92F3577B34DA6A3CE929D0E0E4736-" + span + "-01"));
    CHECK_FALSE(TraceContext::parse("00-" + std::string(32, '0') + "-" + span + "-01"));
    CHECK_FALSE(TraceContext::parse("00-" + trace + "-" + std::string(16, '0') + "-01"));
    CHECK_FALSE(TraceContext::parse("ff-" + trace + "-" + span + "-01"));
    CHECK(TraceContext::parse("01-" + trace + "-" + span + "-01-extra"));
    CHECK_FALSE(TraceContext::parse("01-" + trace + "-" + span + "-01extra"));
    CHECK_FALSE(TraceContext::parse(good + "-extra"));
    CHECK_FALSE(TraceContext::parse(good.substr(0, 54)));
    CHECK_FALSE(TraceContext::parse("00_" + trace + "-" + span + "-01"));
    CHECK_FALSE(TraceContext::parse("00-" + trace + "_" + span + "-01"));
    CHECK_FALSE(TraceContext::parse("00-" + trace + "-" + span + "-0g"));
    CHECK_FALSE(TraceContext::parse(""));
}

TEST_CASE("tracestate is cut at a member boundary to 512 bytes, or dropped") {
    std::string member = "k=" + std::string(98, 'v');  // 100 bytes
    std::string state = member;
    for (int i = 0; i < 5; ++i) state += "," + member;  // 605 bytes
    auto parsed = TraceContext::parse(good, state);
    REQUIRE(parsed);
    CHECK(parsed->state.size() <= 512);
    CHECK(parsed->state.size() == 5 * 100 + 4);
    CHECK(TraceContext::parse(good, std::string(600, 'x'))->state.empty());
}

TEST_CASE("new roots and children") {
    auto root = TraceContext::new_root();
    CHECK(root.valid());
    CHECK(root.sampled());
    root.state = "s=1";
    auto child = root.new_child();
    CHECK(child.trace_id == root.trace_id);
    CHECK(child.span_id != root.span_id);
    CHECK(child.flags == root.flags);
    CHECK(child.state == "s=1");
    CHECK(TraceContext::parse(child.traceparent())->span_id == child.span_id);
}

TEST_CASE("inject and extract through an envelope") {
    Envelope envelope;
    CHECK_FALSE(extract_trace(envelope.headers));
    auto context = *TraceContext::parse(good, "a=1");
    inject_trace(context, envelope.headers);
    auto back = extract_trace(envelope.headers);
    REQUIRE(back);
    CHECK(back->traceparent() == good);
    CHECK(back->state == "a=1");
    context.state.clear();
    inject_trace(context, envelope.headers);
    CHECK_FALSE(envelope.headers.contains(tracestate_header));

    envelope.headers.insert_or_assign(std::string(traceparent_header), FieldValue(std::int64_t{42}));
    CHECK_FALSE(extract_trace(envelope.headers));
    envelope.headers.insert_or_assign(std::string(traceparent_header), FieldValue("garbage"));
    CHECK_FALSE(extract_trace(envelope.headers));
}

TEST_CASE("TraceScope nests and restores") {
    CHECK(current_trace() == nullptr);
    auto outer = TraceContext::new_root();
    auto inner = outer.new_child();
    {
        TraceScope a(outer);
        CHECK(current_trace() == &outer);
        {
            TraceScope b(inner);
            CHECK(current_trace() == &inner);
        }
        CHECK(current_trace() == &outer);
    }
    CHECK(current_trace() == nullptr);
}

TEST_CASE("json lines tracer writes one line per span") {
    std::vector<std::string> lines;
    auto tracer = json_lines_tracer([&](std::string_view line) { lines.emplace_back(line); });
    Attributes none;
    Attributes start_attributes{{"messaging.system", std::string("rabbitmq")}};
    auto parent =
        tracer->start_span({.name = "orders publish", .kind = SpanKind::producer, .attributes = start_attributes});
    auto child = tracer->start_span(
        {.name = "orders process", .kind = SpanKind::consumer, .parent = &parent->context(), .attributes = none});
    CHECK(child->context().trace_id == parent->context().trace_id);
    child->set_attribute("n", std::int64_t{3});
    child->set_attribute("d", 1.5);
    child->set_attribute("b", true);
    child->set_attribute("s", std::string("q\"x"));
    child->add_event(span_event::retried, {{"messaging.acemq.retry_delay_ms", std::int64_t{100}}});
    child->set_error("it broke");
    child->end();
    child->end();
    REQUIRE(lines.size() == 1);
    const auto& line = lines[0];
    CHECK(line.find("\"name\":\"orders process\"") != std::string::npos);
    CHECK(line.find("\"kind\":\"CONSUMER\"") != std::string::npos);
    CHECK(line.find("\"parentSpanId\":\"" + parent->context().span_id_hex() + "\"") != std::string::npos);
    CHECK(line.find("\"status\":\"ERROR\",\"statusDescription\":\"it broke\"") != std::string::npos);
    CHECK(line.find("\"attributes\":{\"n\":3,\"d\":1.5,\"b\":true,\"s\":\"q\\\"x\"}") != std::string::npos);
    CHECK(line.find("\"events\":[{\"name\":\"message.retried\",\"time\":\"") != std::string::npos);
    CHECK(line.find("\"attributes\":{\"messaging.acemq.retry_delay_ms\":100}}]") != std::string::npos);
    CHECK(line.find("\"scope\":\"org.acemq.amqp\"}") != std::string::npos);
    // RFC 3339 in UTC to the microsecond, the span's start and the event's time alike.
    const std::regex stamp(R"re("(start|time)":"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")re");
    CHECK(std::distance(std::sregex_iterator(line.begin(), line.end(), stamp), std::sregex_iterator()) == 2);
    parent.reset();
    REQUIRE(lines.size() == 2);
    CHECK(lines[1].find("parentSpanId") == std::string::npos);
    CHECK(lines[1].find("\"status\"") == std::string::npos);
    CHECK(lines[1].find("\"kind\":\"PRODUCER\"") != std::string::npos);
    CHECK(lines[1].find("\"attributes\":{\"messaging.system\":\"rabbitmq\"}") != std::string::npos);
}

TEST_CASE("json lines tracer is thread-safe") {
    std::ostringstream out;
    auto tracer = json_lines_tracer(out);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&] {
            Attributes none;
            for (int i = 0; i < 200; ++i) {
                auto span = tracer->start_span({.name = "q process", .kind = SpanKind::consumer, .attributes = none});
                span->set_attribute("i", std::int64_t{i});
            }
        });
    }
    for (auto& thread : threads) thread.join();
    std::istringstream in(out.str());
    std::string line;
    int count = 0;
    while (std::getline(in, line)) {
        ++count;
        CHECK(line.front() == '{');
        CHECK(line.back() == '}');
    }
    CHECK(count == 8 * 200);
}
