// Metrics under the family's names (docs/wire-contract.md §10): a small seam any telemetry
// system plugs into — count, observe (seconds), gauge — and an in-memory collector that can
// print itself in the Prometheus text format. Nothing is measured unless a Metrics is given:
//
//   auto metrics = std::make_shared<acemq::InMemoryMetrics>();
//   acemq::Bus bus = acemq::connect(url, {.metrics = metrics});   // publisher and consumers
//   acemq::OutboxRelay relay{bus, outbox, {.observer = acemq::outbox_metrics(metrics)}};
//   std::cout << metrics->prometheus_text();    // acemq_consume_total{...} 3
//
// The engine binds its instruments once (per publisher destination, per consumer queue and
// outcome) and then counts through them: a message costs no string building and no lookup.
// A Metrics that only implements the three calls still works; the default binders forward
// to them with the labels kept.
//
// Every member of InMemoryMetrics is thread-safe; a Metrics implementation must be too, and
// so must the instruments it hands out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace acemq {

// The family's metric names and tag names, byte for byte.
namespace metric {
inline constexpr std::string_view publish_total = "acemq.publish.total";
inline constexpr std::string_view publish_duration = "acemq.publish.duration";
inline constexpr std::string_view consume_total = "acemq.consume.total";
inline constexpr std::string_view consume_duration = "acemq.consume.duration";
inline constexpr std::string_view consume_in_flight = "acemq.consume.in.flight";
inline constexpr std::string_view retried_total = "acemq.messages.retried.total";
inline constexpr std::string_view dead_lettered_total = "acemq.messages.dead.lettered.total";
inline constexpr std::string_view set_aside_failed = "acemq.messages.set.aside.failed";
inline constexpr std::string_view rung_missing = "acemq.retry.rung.missing";
inline constexpr std::string_view outbox_total = "acemq.outbox.total";
inline constexpr std::string_view outbox_lag = "acemq.outbox.lag";
inline constexpr std::string_view request_total = "acemq.request.total";
inline constexpr std::string_view request_duration = "acemq.request.duration";
inline constexpr std::string_view consume_attempts = "acemq.consume.attempts";  // a count, not seconds
// The end of a routing-slip run (follow_slip), labelled pipeline, step and outcome; the
// duration is the message's age then.
inline constexpr std::string_view pipeline_run_total = "acemq.pipeline.run.total";
inline constexpr std::string_view pipeline_run_duration = "acemq.pipeline.run.duration";
// The C++ member's own (no family name exists): a delivery the idempotent consumer found
// already done, acked without running the handler.
inline constexpr std::string_view idempotency_duplicates = "acemq.idempotency.duplicates.total";
// The C++ member's own too: a delivery that carried no id (no x-acemq-id header, no
// message-id property) and was given a fresh one, which a redelivery of it will not share,
// so idempotent() cannot recognise that redelivery unless given a key function.
inline constexpr std::string_view messages_without_id = "acemq.messages.without.id.total";
// The C++ member's own too (the family names no connection metrics; docs/observability.md):
// a client connection to a broker (zmq, amqp), labelled `transport`. The state gauge has one
// series a state (`state` label: connected, reconnecting, blocked, closed), 1 for the
// current one and 0 for the others; the duration is each outage's length, observed when it
// ends.
inline constexpr std::string_view connection_state = "acemq.connection.state";
inline constexpr std::string_view connection_lost_total = "acemq.connection.lost.total";
inline constexpr std::string_view connection_recoveries_total = "acemq.connection.recoveries.total";
inline constexpr std::string_view connection_disconnected_duration = "acemq.connection.disconnected.duration";
// A broker's own (acemq-broker --metrics, <acemq/broker_metrics.hpp>): per queue (`queue`
// label), then the broker's totals and its data file.
inline constexpr std::string_view broker_queue_ready = "acemq.broker.queue.messages.ready";
inline constexpr std::string_view broker_queue_unacked = "acemq.broker.queue.messages.unacked";
inline constexpr std::string_view broker_queue_consumers = "acemq.broker.queue.consumers";
inline constexpr std::string_view broker_queue_bytes = "acemq.broker.queue.bytes";
inline constexpr std::string_view broker_queue_oldest_age = "acemq.broker.queue.oldest.age.seconds";
inline constexpr std::string_view broker_published_total = "acemq.broker.published.total";
inline constexpr std::string_view broker_delivered_total = "acemq.broker.delivered.total";
inline constexpr std::string_view broker_acked_total = "acemq.broker.acked.total";
inline constexpr std::string_view broker_commits_total = "acemq.broker.commits.total";
inline constexpr std::string_view broker_commit_latency_mean = "acemq.broker.commit.latency.mean.seconds";
inline constexpr std::string_view broker_commit_latency_max = "acemq.broker.commit.latency.max.seconds";
inline constexpr std::string_view broker_data_bytes = "acemq.broker.data.bytes";
inline constexpr std::string_view broker_wal_bytes = "acemq.broker.wal.bytes";
inline constexpr std::string_view broker_free_disk_bytes = "acemq.broker.free.disk.bytes";
inline constexpr std::string_view broker_quarantined = "acemq.broker.quarantined.messages";
inline constexpr std::string_view broker_sessions = "acemq.broker.sessions";
inline constexpr std::string_view broker_uptime = "acemq.broker.uptime.seconds";
inline constexpr std::string_view broker_info = "acemq.broker.info";  // 1, labelled product, version, name
}  // namespace metric

namespace tag {
inline constexpr std::string_view queue = "queue";
inline constexpr std::string_view outcome = "outcome";
inline constexpr std::string_view exchange = "exchange";
inline constexpr std::string_view routing_key = "routing.key";
inline constexpr std::string_view rung = "rung";
inline constexpr std::string_view target = "target";
inline constexpr std::string_view where = "where";  // of a retry: consumer, broker, requeued
inline constexpr std::string_view message_type = "message.type";
inline constexpr std::string_view transport = "transport";
inline constexpr std::string_view state = "state";  // of acemq.connection.state
inline constexpr std::string_view pipeline = "pipeline";
inline constexpr std::string_view step = "step";
}  // namespace tag

// Tag name and value pairs; their order does not matter (collectors sort them).
using Labels = std::vector<std::pair<std::string, std::string>>;

// Instruments bound to one name and one set of labels.
class Counter {
public:
    virtual ~Counter() = default;
    virtual void add(std::int64_t delta) = 0;
};
class Distribution {  // durations in seconds, or counts such as acemq.consume.attempts
public:
    virtual ~Distribution() = default;
    virtual void record(double value) = 0;
};
class Gauge {
public:
    virtual ~Gauge() = default;
    virtual void set(double value) = 0;
    virtual void add(double delta) = 0;  // for up-down values such as in-flight deliveries
};

class Metrics {
public:
    virtual ~Metrics() = default;
    virtual void count(std::string_view name, std::int64_t delta, const Labels& labels) = 0;
    virtual void observe(std::string_view name, double seconds, const Labels& labels) = 0;
    virtual void gauge(std::string_view name, double value, const Labels& labels) = 0;

    // Never null. The defaults keep the name and labels and call the three methods above
    // (a bound gauge keeps its value, so add() sets value + delta); override them for
    // instruments that skip the lookup.
    virtual std::shared_ptr<Counter> bind_counter(std::string_view name, const Labels& labels);
    virtual std::shared_ptr<Distribution> bind_distribution(std::string_view name, const Labels& labels);
    virtual std::shared_ptr<Gauge> bind_gauge(std::string_view name, const Labels& labels);
};

// Keeps everything in memory: counters, observations as a summary (count, sum, min, max),
// gauges. For tests, for a /metrics endpoint of a small service, or to look at by hand.
//
// A bound instrument goes straight to its cell (an atomic, or a summary under its own small
// lock): no shared lock and no key built per call. Bound instruments and the three calls
// with the same name and labels share the cell. The instruments refer to this object, so it
// must outlive them.
class InMemoryMetrics final : public Metrics {
public:
    InMemoryMetrics();
    ~InMemoryMetrics() override;

    struct Summary {
        std::uint64_t count = 0;
        double sum = 0, min = 0, max = 0;
    };

    void count(std::string_view name, std::int64_t delta, const Labels& labels) override;
    void observe(std::string_view name, double seconds, const Labels& labels) override;
    void gauge(std::string_view name, double value, const Labels& labels) override;

    std::shared_ptr<Counter> bind_counter(std::string_view name, const Labels& labels) override;
    std::shared_ptr<Distribution> bind_distribution(std::string_view name, const Labels& labels) override;
    std::shared_ptr<Gauge> bind_gauge(std::string_view name, const Labels& labels) override;

    // 0 / an empty summary / 0 when nothing was recorded under that name and labels.
    std::int64_t counter(std::string_view name, const Labels& labels) const;
    Summary summary(std::string_view name, const Labels& labels) const;
    double gauge_value(std::string_view name, const Labels& labels) const;

    // The Prometheus text format 0.0.4, as a scrape endpoint serves it: one HELP and one TYPE
    // line per family; dots (and any other character Prometheus does not allow) become
    // underscores in metric and label names, label values keep theirs, escaped; counters are
    // `counter`, durations a `summary` (_count, _sum) with `<name>_min` and `<name>_max`
    // gauges beside it, gauges `gauge`.
    std::string prometheus_text() const;

private:
    struct Cells;  // the cells of every name and labels, and the lock of their maps
    std::unique_ptr<Cells> cells_;
};

}  // namespace acemq
