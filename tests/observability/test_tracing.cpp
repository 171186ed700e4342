#include <acemq/envelope.hpp>
#include <acemq/error.hpp>
#include <acemq/tracing.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace acemq;
using namespace std::chrono_literals;

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
    const AttributeView start_attributes[]{{"messaging.system", std::string_view("rabbitmq")}};
    auto parent =
        tracer->start_span({.name = "orders publish", .kind = SpanKind::producer, .attributes = start_attributes});
    auto child =
        tracer->start_span({.name = "orders process", .kind = SpanKind::consumer, .parent = &parent->context()});
    CHECK(child->context().trace_id == parent->context().trace_id);
    child->set_attribute("n", std::int64_t{3});
    child->set_attribute("d", 1.5);
    child->set_attribute("b", true);
    child->set_attribute("s", std::string("q\"x"));
    child->add_event(span_event::retried, {{"messaging.acemq.retry_delay_ms", std::int64_t{100}}});
    child->set_error("it broke");
    child->end();
    child->end();
    tracer->flush();
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
    tracer->flush();
    REQUIRE(lines.size() == 2);
    CHECK(lines[1].find("parentSpanId") == std::string::npos);
    CHECK(lines[1].find("\"status\"") == std::string::npos);
    CHECK(lines[1].find("\"kind\":\"PRODUCER\"") != std::string::npos);
    CHECK(lines[1].find("\"attributes\":{\"messaging.system\":\"rabbitmq\"}") != std::string::npos);
}

namespace {

// The attributes object of a JSON line, as written.
std::string attributes_of(const std::string& line) {
    const auto begin = line.find("\"attributes\":{");
    const auto end = line.find("},\"durationMicros\"");
    REQUIRE(begin != std::string::npos);
    REQUIRE(end != std::string::npos);
    return line.substr(begin + 13, end + 1 - (begin + 13));
}

}  // namespace

TEST_CASE("json lines tracer: a later attribute replaces one of the same key, wherever it is") {
    std::vector<std::string> lines;
    auto tracer = json_lines_tracer([&](std::string_view line) { lines.emplace_back(line); });
    // A value that looks like a member, and a key that needs escaping, must not fool it.
    const AttributeView start[]{{"first", std::int64_t{1}},
                                {"trap", std::string_view(R"(x,"middle":2,"first":3)")},
                                {"middle", std::string_view("m")},
                                {"odd\"key", true},
                                {"last", 2.5}};
    auto span = tracer->start_span({.name = "q publish", .kind = SpanKind::producer, .attributes = start});
    span->set_attribute("middle", std::string("M"));
    span->set_attribute("first", std::int64_t{10});
    span->set_attribute("odd\"key", false);
    span->set_attribute("new", std::string("n"));
    span->set_attribute("new", std::string("N"));
    span->set_attribute("last", std::string("L"));
    span->end();
    span->set_attribute("after", std::string("end"));  // ignored: the line is written
    tracer->flush();
    REQUIRE(lines.size() == 1);
    CHECK(attributes_of(lines[0]) ==
          R"({"trap":"x,\"middle\":2,\"first\":3","middle":"M","first":10,"odd\"key":false,"new":"N","last":"L"})");
}

TEST_CASE("json lines tracer escapes every byte that needs it, at any position in a long text") {
    std::vector<std::string> lines;
    auto tracer = json_lines_tracer([&](std::string_view line) { lines.emplace_back(line); });
    auto span = tracer->start_span({.name = "q publish", .kind = SpanKind::producer});
    for (std::size_t at = 0; at < 19; ++at) {
        for (char special : {'"', '\\', '\x01', '\x1f'}) {
            std::string text(19, 'a');
            text[at] = special;
            span->set_attribute("k", text);
            span->end();
            tracer->flush();
            REQUIRE(!lines.empty());
            std::string expected(19, 'a');
            const std::string escaped = special == '"'      ? "\\\""
                                        : special == '\\'   ? "\\\\"
                                        : special == '\x01' ? "\\u0001"
                                                            : "\\u001f";
            expected.replace(at, 1, escaped);
            CHECK(attributes_of(lines.back()) == "{\"k\":\"" + expected + "\"}");
            span = tracer->start_span({.name = "q publish", .kind = SpanKind::producer});
        }
    }
    // Text above 0x7f (UTF-8) passes unescaped.
    span->set_attribute("k", std::string("caf\xc3\xa9 na\xc3\xafve long enough"));
    span->end();
    tracer->flush();
    CHECK(attributes_of(lines.back()) == "{\"k\":\"caf\xc3\xa9 na\xc3\xafve long enough\"}");
}

TEST_CASE("json lines tracer is thread-safe") {
    std::ostringstream out;
    auto tracer = json_lines_tracer(out);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 200; ++i) {
                auto span = tracer->start_span({.name = "q process", .kind = SpanKind::consumer});
                span->set_attribute("i", std::int64_t{i});
            }
        });
    }
    for (auto& thread : threads) thread.join();
    tracer->flush();
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

TEST_CASE("json lines tracer: every ended span is written by flush(), and by the tracer's end") {
    std::mutex lock;
    std::vector<std::string> lines;
    auto written = [&] {
        std::lock_guard guard(lock);
        return lines.size();
    };
    auto tracer = json_lines_tracer([&](std::string_view line) {
        std::lock_guard guard(lock);
        lines.emplace_back(line);
    });
    // More than a batch (a quarter of the queue), from two threads.
    std::thread other([&] {
        for (int i = 0; i < 700; ++i) tracer->start_span({.name = "q process", .kind = SpanKind::consumer});
    });
    for (int i = 0; i < 700; ++i) tracer->start_span({.name = "q publish", .kind = SpanKind::producer});
    other.join();
    tracer->flush();
    CHECK(written() == 1400);

    // A span that outlives its tracer is written when it ends; the tracer's end writes the rest.
    auto late = tracer->start_span({.name = "q late", .kind = SpanKind::producer});
    for (int i = 0; i < 10; ++i) tracer->start_span({.name = "q last", .kind = SpanKind::producer});
    tracer.reset();
    late->set_attribute("n", std::int64_t{1});
    late.reset();
    REQUIRE(written() == 1411);
    CHECK(lines.back().find("\"name\":\"q late\"") != std::string::npos);
    CHECK(lines.back().find("\"attributes\":{\"n\":1}") != std::string::npos);
}

TEST_CASE("json lines tracer: a span ended while the queue is full is dropped and counted, never waited for") {
    std::mutex lock;
    std::condition_variable changed;
    bool writing = false, released = false;
    std::vector<std::string> lines;
    // The first write holds the writer until the test releases it, so the queue fills.
    auto tracer = json_lines_tracer(
        [&](std::string_view line) {
            std::unique_lock guard(lock);
            writing = true;
            changed.notify_all();
            changed.wait(guard, [&] { return released; });
            if (line.find("\"name\":\"q fails\"") != std::string::npos) throw std::runtime_error("disk full");
            lines.emplace_back(line);
        },
        {.queue_capacity = 4});
    tracer->start_span({.name = "q first", .kind = SpanKind::producer});
    {
        std::unique_lock guard(lock);
        REQUIRE(changed.wait_for(guard, 10s, [&] { return writing; }));
    }
    for (int i = 0; i < 4; ++i) tracer->start_span({.name = "q kept", .kind = SpanKind::producer});
    for (int i = 0; i < 3; ++i) tracer->start_span({.name = "q dropped", .kind = SpanKind::producer});
    CHECK(tracer->dropped() == 3);
    {
        std::lock_guard guard(lock);
        released = true;
    }
    changed.notify_all();
    tracer->flush();
    CHECK(lines.size() == 5);
    CHECK(tracer->dropped() == 3);
    // A line the write function throws on is lost too, and counted with them.
    tracer->start_span({.name = "q fails", .kind = SpanKind::producer});
    tracer->start_span({.name = "q after", .kind = SpanKind::producer});
    tracer->flush();
    CHECK(tracer->dropped() == 4);
    REQUIRE(lines.size() == 6);
    CHECK(lines.back().find("\"name\":\"q after\"") != std::string::npos);

    CHECK_THROWS_AS(json_lines_tracer([](std::string_view) {}, {.queue_capacity = 0}), InvalidArgument);
}
