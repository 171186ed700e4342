// Tracing across the broker: W3C trace context in the message headers, and a Tracer/Span
// seam the engine reports through with the family's span names, kinds, attributes, events
// and status (docs/observability.md). Nothing is traced unless a Tracer is given:
//
//   acemq::Bus bus = acemq::connect(url, {.tracer = acemq::json_lines_tracer(std::clog)});
//
// A publish opens "<destination> publish" (PRODUCER) and writes its context into the
// message's `traceparent` / `tracestate` headers; a delivery opens "<queue> process"
// (CONSUMER) whose parent is read from those headers — never from the thread it runs on —
// and which stays open until the engine settled the delivery, so it ends with the engine's
// outcome. The headers travel with every copy the engine makes (retry rungs, requeued
// copies, dead letters, parked messages, replays) and with outbox records, so one trace
// follows a message however often it comes round. A publish made inside a handler is a
// child of that delivery's span (current_trace()).
//
// To send spans to OpenTelemetry C++, implement Tracer and Span over its API: see
// docs/observability.md, "Bridging to OpenTelemetry".
//
// Thread-safety: a Tracer is called from every publishing and consuming thread at once and
// must be thread-safe (start_span and flush alike); one Span is used by one thread at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <acemq/field.hpp>

namespace acemq {

inline constexpr std::string_view traceparent_header = "traceparent";
inline constexpr std::string_view tracestate_header = "tracestate";
// The instrumentation scope of every member of the family.
inline constexpr std::string_view tracing_scope = "org.acemq.amqp";

// A W3C trace context: which trace, which span in it, whether it is sampled, and the vendor
// state that rides along.
struct TraceContext {
    std::array<std::uint8_t, 16> trace_id{};
    std::array<std::uint8_t, 8> span_id{};
    std::uint8_t flags = 0;  // bit 0: sampled
    std::string state{};     // tracestate, as received (at most 512 bytes are kept)

    bool valid() const noexcept;  // neither id is all zeros
    bool sampled() const noexcept { return (flags & 0x01) != 0; }
    // "00-<32 hex>-<16 hex>-<2 hex>", lowercase.
    std::string traceparent() const;
    // The same into a buffer of the caller's, for a path that should not allocate for it.
    static constexpr std::size_t traceparent_size = 55;
    void write_traceparent(std::span<char, traceparent_size> out) const noexcept;
    std::string trace_id_hex() const;
    std::string span_id_hex() const;

    // Reads a traceparent header by the W3C rules (version "ff" and all-zero ids refused,
    // uppercase hex refused, a later version's extra fields ignored); nullopt when it is not
    // one. `tracestate` is kept only with a valid traceparent.
    static std::optional<TraceContext> parse(std::string_view traceparent, std::string_view tracestate = {});
    // A new random trace (sampled) or a new random span in this one.
    static TraceContext new_root();
    TraceContext new_child() const;
};

// The trace context carried by a message's headers (Envelope::headers, or the rendered
// headers of a message); nullopt when they have none or what they have is malformed (a
// malformed one is ignored, never an error).
std::optional<TraceContext> extract_trace(const Headers& headers);
// Writes `context` into the headers (traceparent always; tracestate when not empty, else
// removed), replacing what was there.
void inject_trace(const TraceContext& context, Headers& headers);

enum class SpanKind { internal, producer, consumer, client };
std::string_view to_string(SpanKind kind);  // "INTERNAL", "PRODUCER", "CONSUMER", "CLIENT"

using AttributeValue = std::variant<std::string, std::int64_t, double, bool>;
using Attributes = std::vector<std::pair<std::string, AttributeValue>>;

// An attribute a span starts with, borrowed: the key and the text are the caller's and live
// only as long as the start_span call, so a publish hands over its attributes without
// building a string. A tracer copies what it keeps (to_owned).
using AttributeValueView = std::variant<std::string_view, std::int64_t, double, bool>;
struct AttributeView {
    std::string_view key;
    AttributeValueView value;
};
AttributeValue to_owned(const AttributeValueView& value);
Attributes to_owned(std::span<const AttributeView> attributes);

// The family's attribute and event names.
namespace span_attribute {
inline constexpr std::string_view system = "messaging.system";
inline constexpr std::string_view destination = "messaging.destination.name";
inline constexpr std::string_view operation = "messaging.operation";  // publish, process, request
inline constexpr std::string_view message_id = "messaging.message.id";
inline constexpr std::string_view conversation_id = "messaging.message.conversation_id";
inline constexpr std::string_view routing_key = "messaging.rabbitmq.destination.routing_key";
inline constexpr std::string_view message_type = "messaging.acemq.message_type";
inline constexpr std::string_view attempt = "messaging.acemq.attempt";
inline constexpr std::string_view outcome = "messaging.acemq.outcome";
inline constexpr std::string_view reason = "messaging.acemq.reason";
inline constexpr std::string_view retry_delay_ms = "messaging.acemq.retry_delay_ms";
inline constexpr std::string_view run_age_ms = "messaging.acemq.run_age_ms";
inline constexpr std::string_view outbox_lag_ms = "messaging.acemq.outbox_lag_ms";
}  // namespace span_attribute

namespace span_event {
inline constexpr std::string_view retried = "message.retried";
inline constexpr std::string_view dead_lettered = "message.dead_lettered";
inline constexpr std::string_view outbox_publish_failed = "outbox.publish_failed";
// A routing-slip run ended (follow_slip), with the bare attributes pipeline, step, outcome.
inline constexpr std::string_view pipeline_run_finished = "pipeline.run_finished";
}  // namespace span_event

class Span {
public:
    virtual ~Span() = default;  // a span not ended is ended here
    // The context this span writes into the messages it publishes.
    virtual const TraceContext& context() const = 0;
    virtual void set_attribute(std::string_view key, AttributeValue value) = 0;
    virtual void add_event(std::string_view name, Attributes attributes = {}) = 0;
    // Status ERROR with a description; the status is unset otherwise.
    virtual void set_error(std::string_view description) = 0;
    // Idempotent: the second call does nothing.
    virtual void end() = 0;
};

struct SpanStart {
    std::string_view name;
    SpanKind kind = SpanKind::internal;
    const TraceContext* parent = nullptr;  // null: a new trace
    std::span<const AttributeView> attributes{};
};

class Tracer {
public:
    virtual ~Tracer() = default;
    // Never null.
    virtual std::unique_ptr<Span> start_span(const SpanStart& start) = 0;
    // Returns when every span ended before the call has been handed on (written, exported);
    // a tracer that does that as each span ends has nothing to do. For tests and for a
    // program that must see every span before it exits.
    virtual void flush() {}
};

// The trace of the delivery this thread is handling (set by the engine around a handler and
// by a TraceScope), or null.
const TraceContext* current_trace() noexcept;

// The span of the delivery this thread is handling (the engine's "<queue> process" span,
// open until the delivery is settled), or null: outside a handler, on a thread the handler
// started, or with no tracer. For code a handler runs that reports on its delivery, such as
// follow_slip's pipeline.run_finished event. Use it on this thread only, before returning.
Span* current_span() noexcept;

// Makes `context` current on this thread for the scope, restoring the previous one after;
// e.g. around work started by an HTTP request whose traceparent you read yourself.
class TraceScope {
public:
    explicit TraceScope(const TraceContext& context) noexcept;
    ~TraceScope();
    TraceScope(const TraceScope&) = delete;
    TraceScope& operator=(const TraceScope&) = delete;

private:
    const TraceContext* previous_;
};

// A tracer that writes each ended span as one line of JSON:
//   {"name":"orders publish","kind":"PRODUCER","traceId":"...","spanId":"...",
//    "parentSpanId":"...","start":"2026-12-02T10:00:00.000123Z","attributes":{...},
//    "durationMicros":42,"status":"ERROR","statusDescription":"...","events":[{"name":...,
//    "time":"...","attributes":{...}}],"scope":"org.acemq.amqp"}
// "parentSpanId", "status" and "statusDescription" are left out when there is none.
//
// Off the hot path, as OpenTelemetry's batch span processor: an ended span is a small
// record put in a bounded queue, without a lock; a writer thread of the tracer's renders
// the lines and writes them in batches — at once when it was idle, else when a batch has
// gathered or shortly after. So a line appears a little after its span ends, and in the
// order the spans ended. flush() returns when every span ended before it is written;
// destroying the tracer (the last of it and of its spans) writes every span that ended and
// stops the writer, so a clean shutdown loses nothing. A span ended while the queue is full
// is dropped and counted (dropped()), never waited for: tracing must not slow the messages
// it watches. The writer is a thread of this process: a child made by fork() has none, and
// should make a tracer of its own.
//
// Thread-safety: start_span, flush and dropped from any thread; `write` is called on the
// writer thread only, one line (no newline) at a time, so it need not be thread-safe; it
// must not call flush(). A write that throws loses that line, which is counted as dropped.
struct JsonLinesOptions {
    // Ended spans waiting for the writer, at most (rounded up to a power of two); 2048, as
    // OpenTelemetry's, take under a megabyte. The writer is woken each time a quarter of it
    // has filled, so it only has to absorb what the writer falls behind by.
    std::size_t queue_capacity = 2048;
};

class JsonLinesTracer : public Tracer {
public:
    // Spans that ended but were not written: the queue was full, or `write` threw.
    virtual std::uint64_t dropped() const noexcept = 0;
};

std::shared_ptr<JsonLinesTracer> json_lines_tracer(std::function<void(std::string_view line)> write,
                                                   JsonLinesOptions options = {});
// The same into a stream, one line each, flushed after each batch; the stream must outlive
// the tracer.
std::shared_ptr<JsonLinesTracer> json_lines_tracer(std::ostream& out, JsonLinesOptions options = {});

}  // namespace acemq
