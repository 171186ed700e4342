#include <catch2/catch.hpp>

#include <acemq/metrics.hpp>

#include <limits>
#include <string>
#include <thread>
#include <vector>

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
          "# HELP acemq_consume_in_flight Deliveries being handled now.\n"
          "# TYPE acemq_consume_in_flight gauge\n"
          "acemq_consume_in_flight 4\n"
          "# HELP acemq_outbox_lag Seconds from an outbox record's commit to its publish.\n"
          "# TYPE acemq_outbox_lag summary\n"
          "acemq_outbox_lag_count{outcome=\"published\"} 1\n"
          "acemq_outbox_lag_sum{outcome=\"published\"} 1.5\n"
          "# HELP acemq_outbox_lag_max The largest value so far of acemq_outbox_lag.\n"
          "# TYPE acemq_outbox_lag_max gauge\n"
          "acemq_outbox_lag_max{outcome=\"published\"} 1.5\n"
          "# HELP acemq_outbox_lag_min The smallest value so far of acemq_outbox_lag.\n"
          "# TYPE acemq_outbox_lag_min gauge\n"
          "acemq_outbox_lag_min{outcome=\"published\"} 1.5\n"
          "# HELP acemq_outbox_total Outbox records relayed, by destination and outcome.\n"
          "# TYPE acemq_outbox_total counter\n"
          "acemq_outbox_total{exchange=\"shop \\\"eu\\\"\",outcome=\"published\",routing_key=\"order.placed\"} 2\n");
}

TEST_CASE("the Prometheus text: one HELP and TYPE per family, samples together, odd names made valid") {
    InMemoryMetrics metrics;
    metrics.count(metric::consume_total, 1, {{"queue", "a"}, {"outcome", "acked"}});
    metrics.count("my-app.jobs/done", 1, {{"kind of", "line\nbreak \\ here"}});
    metrics.count(metric::consume_total, 2, {{"queue", "b"}, {"outcome", "acked"}});
    metrics.gauge(metric::consume_total, 1, {});  // the same name as another kind
    const std::string text = metrics.prometheus_text();
    CHECK(text ==
          "# HELP acemq_consume_total Deliveries settled, by queue and the consumer's decision.\n"
          "# TYPE acemq_consume_total counter\n"
          "acemq_consume_total{outcome=\"acked\",queue=\"a\"} 1\n"
          "acemq_consume_total{outcome=\"acked\",queue=\"b\"} 2\n"
          "# HELP acemq_consume_total_gauge Deliveries settled, by queue and the consumer's decision.\n"
          "# TYPE acemq_consume_total_gauge gauge\n"
          "acemq_consume_total_gauge 1\n"
          "# HELP my_app_jobs_done An acemq-cpp metric.\n"
          "# TYPE my_app_jobs_done counter\n"
          "my_app_jobs_done{kind_of=\"line\\nbreak \\\\ here\"} 1\n");
}

TEST_CASE("the Prometheus text: whole numbers without a point, others round-trip, infinities spelled") {
    InMemoryMetrics metrics;
    metrics.gauge("g", 20.0, {{"n", "20"}});
    metrics.gauge("g", 0.1, {{"n", "0.1"}});
    metrics.gauge("g", 1.0 / 3.0, {{"n", "third"}});
    metrics.gauge("g", std::numeric_limits<double>::infinity(), {{"n", "inf"}});
    metrics.gauge("g", -std::numeric_limits<double>::infinity(), {{"n", "minus"}});
    metrics.gauge("g", std::numeric_limits<double>::quiet_NaN(), {{"n", "nan"}});
    const std::string text = metrics.prometheus_text();
    CHECK_THAT(text, Catch::Contains("g{n=\"20\"} 20\n"));
    CHECK_THAT(text, Catch::Contains("g{n=\"0.1\"} 0.1\n"));
    CHECK_THAT(text, Catch::Contains("g{n=\"third\"} 0.3333333333333333\n"));
    CHECK_THAT(text, Catch::Contains("g{n=\"inf\"} +Inf\n"));
    CHECK_THAT(text, Catch::Contains("g{n=\"minus\"} -Inf\n"));
    CHECK_THAT(text, Catch::Contains("g{n=\"nan\"} NaN\n"));
}

TEST_CASE("bound instruments and the three calls share one cell") {
    InMemoryMetrics metrics;
    const Labels labels{{"queue", "q"}, {"outcome", "acked"}};
    auto counter = metrics.bind_counter(metric::consume_total, labels);
    counter->add(2);
    metrics.count(metric::consume_total, 1, {{"outcome", "acked"}, {"queue", "q"}});
    CHECK(metrics.counter(metric::consume_total, labels) == 3);

    auto duration = metrics.bind_distribution(metric::consume_duration, {{"queue", "q"}});
    duration->record(0.5);
    metrics.observe(metric::consume_duration, 0.25, {{"queue", "q"}});
    const auto summary = metrics.summary(metric::consume_duration, {{"queue", "q"}});
    CHECK(summary.count == 2);
    CHECK(summary.sum == 0.75);
    CHECK(summary.min == 0.25);
    CHECK(summary.max == 0.5);

    auto in_flight = metrics.bind_gauge(metric::consume_in_flight, {{"queue", "q"}});
    in_flight->add(2);
    in_flight->add(-1);
    CHECK(metrics.gauge_value(metric::consume_in_flight, {{"queue", "q"}}) == 1);
    metrics.gauge(metric::consume_in_flight, 5, {{"queue", "q"}});
    in_flight->add(1);
    CHECK(metrics.gauge_value(metric::consume_in_flight, {{"queue", "q"}}) == 6);
}

TEST_CASE("bound instruments count exactly under threads, while others bind, count and read") {
    InMemoryMetrics metrics;
    constexpr int threads = 4, rounds = 20000;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&metrics, t] {
            auto counter = metrics.bind_counter(metric::publish_total, {{"outcome", "confirmed"}});
            auto duration = metrics.bind_distribution(metric::publish_duration, {});
            auto gauge = metrics.bind_gauge(metric::consume_in_flight, {});
            for (int i = 0; i < rounds; ++i) {
                counter->add(1);
                duration->record(1.0);
                gauge->add(1);
                gauge->add(-1);
                if (i % 1000 == 0) {
                    metrics.count("acemq.thread." + std::to_string(t), 1, {{"i", std::to_string(i)}});
                    (void)metrics.prometheus_text();
                }
            }
        });
    }
    for (auto& worker : workers) worker.join();
    CHECK(metrics.counter(metric::publish_total, {{"outcome", "confirmed"}}) == threads * rounds);
    CHECK(metrics.summary(metric::publish_duration, {}).count == threads * rounds);
    CHECK(metrics.summary(metric::publish_duration, {}).sum == threads * rounds);
    CHECK(metrics.gauge_value(metric::consume_in_flight, {}) == 0);
}
