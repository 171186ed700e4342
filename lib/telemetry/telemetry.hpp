// What the engine measures and traces (not a public header): the instruments bound once per
// publisher destination and per consumer queue, and the spans of publishes and deliveries,
// under the family's names (docs/wire-contract.md §10, docs/observability.md). Everything
// here is a no-op when the bus was given no Metrics and no Tracer; the callers test for null
// first, so that an unobserved bus pays one branch per message.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <acemq/envelope.hpp>
#include <acemq/metrics.hpp>
#include <acemq/settlement.hpp>
#include <acemq/tracing.hpp>
#include <acemq/transport.hpp>

namespace acemq::detail {

// The family's outcome words of a publish, in the order of the instruments' arrays. Not
// "published" (a publish with confirms off): every acemq-cpp publish waits for its confirm.
enum class PublishOutcome { confirmed, unroutable, failed, refused };
inline constexpr std::size_t publish_outcomes = 4;
std::string_view to_string(PublishOutcome outcome) noexcept;
// A publish the transport answered: unroutable only when it was mandatory; refused when the
// broker paused publishing (safe to send again later); failed for any other refusal.
PublishOutcome outcome_of(const PublishResult& result, bool mandatory) noexcept;

// Where a retry waits, the `where` label of acemq.messages.retried.total.
enum class RetryWhere { consumer, broker, requeued };
inline constexpr std::size_t retry_wheres = 3;

using Seconds = std::chrono::duration<double>;

// acemq.publish.total and acemq.publish.duration of one exchange and routing key.
class PublishInstruments {
public:
    PublishInstruments(Metrics& metrics, std::string_view exchange, std::string_view routing_key);
    void record(PublishOutcome outcome, Seconds took) const;

private:
    std::array<std::shared_ptr<Counter>, publish_outcomes> total_;
    std::array<std::shared_ptr<Distribution>, publish_outcomes> duration_;
};

// Everything counted about the deliveries of one queue. Shared by the consumers of that
// queue on one bus, so that their in-flight gauge adds up.
class ConsumeInstruments {
public:
    ConsumeInstruments(Metrics& metrics, std::string_view queue);
    void started(std::int32_t attempt) const;  // in flight +1, and the attempt number
    // At settlement: consume total (and duration when it reached a handler), the retry's
    // second view, the dead letter's. In flight -1.
    void settled(Outcome outcome, std::optional<Seconds> handler, RetryWhere where) const;
    void abandoned() const;  // in flight -1: no settlement (the consumer closed under it)
    void set_aside_failed(bool to_parked) const;
    void rung_missing(std::string_view rung) const;
    void without_id() const;  // a delivery whose id read_envelope made up

private:
    static constexpr std::size_t outcomes = 6;  // of acemq::Outcome
    Metrics& metrics_;
    std::string queue_;
    std::array<std::shared_ptr<Counter>, outcomes> total_;
    std::array<std::shared_ptr<Distribution>, outcomes> duration_;
    std::array<std::shared_ptr<Counter>, retry_wheres> retried_;
    std::array<std::shared_ptr<Counter>, 3> dead_lettered_;     // dead_lettered, rejected, parked
    std::array<std::shared_ptr<Counter>, 2> set_aside_failed_;  // {queue}.dlq, {queue}.parked
    std::shared_ptr<Gauge> in_flight_;
    std::shared_ptr<Distribution> attempts_;
};

class Telemetry {
public:
    Telemetry(std::shared_ptr<Metrics> metrics, std::shared_ptr<Tracer> tracer, TransportInfo transport);

    bool measuring() const noexcept { return metrics_ != nullptr; }
    bool tracing() const noexcept { return tracer_ != nullptr; }
    const std::shared_ptr<Metrics>& metrics() const noexcept { return metrics_; }
    const std::shared_ptr<Tracer>& tracer() const noexcept { return tracer_; }

    // Bound on first use and kept; null when not measuring. Thread-safe.
    std::shared_ptr<const PublishInstruments> publishing(std::string_view exchange, std::string_view routing_key);
    std::shared_ptr<const ConsumeInstruments> consuming(std::string_view queue);

    // "<destination> publish" (PRODUCER), a child of the trace the message's headers already
    // carry, else of the delivery this thread handles, else a new trace; writes its own
    // context into the headers. Null when not tracing.
    struct Published {
        std::string_view exchange, routing_key, message_id, correlation, type;
    };
    std::unique_ptr<Span> start_publish(const Published& publish, Headers& headers) const;
    // The same for a message not packed yet: the trace it carries is in `carried` (its
    // application headers), and the span's own context is for the caller to write as it packs
    // them (detail::pack_traced_headers), each header in its place and no table between.
    std::unique_ptr<Span> start_publish_span(const Published& publish, const Headers& carried) const;
    static void end_publish(Span& span, PublishOutcome outcome, std::string_view error = {});
    // "<destination> request" (CLIENT) around one call of a Requester: a child of the trace
    // the request's headers carry, else of the delivery this thread handles, else a new
    // trace; writes its own context into the headers, so that the request's publish is its
    // child. Null when not tracing. `outcome` is answered, timed_out or failed; only failed
    // is an error.
    std::unique_ptr<Span> start_request(std::string_view exchange, std::string_view routing_key,
                                        std::string_view correlation, Headers& headers) const;
    static void end_request(Span& span, std::string_view outcome, std::string_view error = {});
    // "<queue> process" (CONSUMER), a child of the trace in the message's headers. Null
    // when not tracing.
    std::unique_ptr<Span> start_process(std::string_view queue, const Envelope& envelope) const;
    static void end_process(Span& span, const Settlement& settlement);

private:
    std::shared_ptr<Metrics> metrics_;
    std::shared_ptr<Tracer> tracer_;
    std::string system_;
    std::mutex lock_;
    std::map<std::pair<std::string, std::string>, std::shared_ptr<const PublishInstruments>, std::less<>> publishing_;
    std::map<std::string, std::shared_ptr<const ConsumeInstruments>, std::less<>> consuming_;
};

// Makes `span` what current_span() answers on this thread for the scope: the engine's
// around a handler.
class SpanScope {
public:
    explicit SpanScope(Span& span) noexcept;
    ~SpanScope();
    SpanScope(const SpanScope&) = delete;
    SpanScope& operator=(const SpanScope&) = delete;

private:
    Span* previous_;
};

// "<exchange>", or the routing key for the default exchange: what a publish span is named after.
std::string_view trace_destination(std::string_view exchange, std::string_view routing_key) noexcept;

}  // namespace acemq::detail
