#include <acemq/broker_metrics.hpp>

#include <chrono>

#include <acemq/metrics.hpp>

namespace acemq {

namespace {

double seconds(std::chrono::microseconds value) { return std::chrono::duration<double>(value).count(); }

}  // namespace

std::string broker_prometheus_text(const BrokerInfo& info, std::span<const QueueSummary> queues,
                                   std::uint64_t sessions) {
    // InMemoryMetrics writes the exposition (names, HELP and TYPE lines, escaping) as the
    // client's endpoint does; a fresh one a scrape holds exactly what the broker says now.
    InMemoryMetrics metrics;
    const Labels none;
    for (const QueueSummary& queue : queues) {
        const Labels labels{{std::string(tag::queue), queue.name}};
        metrics.gauge(metric::broker_queue_ready, static_cast<double>(queue.ready), labels);
        metrics.gauge(metric::broker_queue_unacked, static_cast<double>(queue.unacked), labels);
        metrics.gauge(metric::broker_queue_consumers, static_cast<double>(queue.consumers), labels);
        metrics.gauge(metric::broker_queue_bytes, static_cast<double>(queue.bytes), labels);
        if (queue.oldest_age)
            metrics.gauge(metric::broker_queue_oldest_age, std::chrono::duration<double>(*queue.oldest_age).count(),
                          labels);
    }
    const auto total = [&](std::string_view name, const std::optional<std::uint64_t>& value) {
        if (value) metrics.count(name, static_cast<std::int64_t>(*value), none);
    };
    total(metric::broker_published_total, info.published);
    total(metric::broker_delivered_total, info.delivered);
    total(metric::broker_acked_total, info.acked);
    if (!info.data_file.empty()) {
        total(metric::broker_commits_total, info.commits);
        metrics.gauge(metric::broker_data_bytes, static_cast<double>(info.data_bytes), none);
        metrics.gauge(metric::broker_wal_bytes, static_cast<double>(info.wal_bytes), none);
        metrics.gauge(metric::broker_quarantined, static_cast<double>(info.quarantined), none);
    }
    if (info.free_disk_bytes)
        metrics.gauge(metric::broker_free_disk_bytes, static_cast<double>(*info.free_disk_bytes), none);
    if (info.commit_latency_mean)
        metrics.gauge(metric::broker_commit_latency_mean, seconds(*info.commit_latency_mean), none);
    if (info.commit_latency_max)
        metrics.gauge(metric::broker_commit_latency_max, seconds(*info.commit_latency_max), none);
    metrics.gauge(metric::broker_sessions, static_cast<double>(sessions), none);
    metrics.gauge(metric::broker_uptime, static_cast<double>(info.uptime.count()), none);
    metrics.gauge(metric::broker_info, 1, {{"product", info.product}, {"version", info.version}, {"name", info.name}});
    return metrics.prometheus_text();
}

std::string broker_prometheus_text(Management& broker) {
    const BrokerInfo info = broker.info();
    const std::vector<QueueSummary> queues = broker.queues();
    return broker_prometheus_text(info, queues, broker.sessions().size());
}

}  // namespace acemq
