#include <catch2/catch.hpp>

#include <acemq/metrics.hpp>

using namespace acemq;

TEST_CASE("counters, summaries and gauges keyed by name and labels in any order") {
    InMemoryMetrics metrics;
    metrics.count(metric::consume_total, 1, {{"queue", "orders.new"}, {"outcome", "acked"}});
    metrics.count(metric::consume_total, 2, {{"outcome", "acked"}, {"queue", "orders.new"}});
    metrics.count(metric::consume_total, 1, {{"queue", "orders.new"}, {"outcome", "retried"}});
    CHECK(metrics.counter("acemq.consume.total", {{"queue", "orders.new"}, {"outcome", "acked"}}) == 3);
    CHECK(metrics.counter("acemq.consume.total", {{"queue", "orders.new"}, {"outcome", "retried"}}) == 1);
    CHECK(metrics.counter("acemq.consume.total", {{"queue", "other"}, {"outcome", "acked"}}) == 0);

    metrics.observe(metric::consume_duration, 0.25, {{"queue", "q"}});
    metrics.observe(metric::consume_duration, 0.75, {{"queue", "q"}});
    const auto summary = metrics.summary("acemq.consume.duration", {{"queue", "q"}});
    CHECK(summary.count == 2);
    CHECK(summary.sum == 1.0);
    CHECK(summary.min == 0.25);
    CHECK(summary.max == 0.75);

    metrics.gauge(metric::consume_in_flight, 3, {{"queue", "q"}});
    metrics.gauge(metric::consume_in_flight, 1, {{"queue", "q"}});
    CHECK(metrics.gauge_value("acemq.consume.in.flight", {{"queue", "q"}}) == 1);
}

TEST_CASE("the Prometheus text: underscores in names, dots kept in values, quotes escaped") {
    InMemoryMetrics metrics;
    metrics.count(metric::outbox_total, 2,
                  {{"routing.key", "order.placed"}, {"exchange", "shop \"eu\""}, {"outcome", "published"}});
    metrics.observe(metric::outbox_lag, 1.5, {{"outcome", "published"}});
    metrics.gauge(metric::consume_in_flight, 4, {});
    CHECK(metrics.prometheus_text() ==
          "# TYPE acemq_outbox_total counter\n"
          "acemq_outbox_total{exchange=\"shop \\\"eu\\\"\",outcome=\"published\",routing_key=\"order.placed\"} 2\n"
          "# TYPE acemq_outbox_lag summary\n"
          "acemq_outbox_lag_count{outcome=\"published\"} 1\n"
          "acemq_outbox_lag_sum{outcome=\"published\"} 1.5\n"
          "# TYPE acemq_consume_in_flight gauge\n"
          "acemq_consume_in_flight 4\n");
}
