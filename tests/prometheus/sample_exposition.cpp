// Prints an exposition with every family name of the contract, as an engine writes them
// (bound instruments and the three calls), plus hostile names and label values, for
// promtool_check.sh to hand to `promtool check metrics`. An argument adds a counter of that
// name, to show the check refuses one named against Prometheus' conventions.
//   sample_exposition [COUNTER-NAME]
#include <acemq/metrics.hpp>

#include <iostream>
#include <limits>

using namespace acemq;

int main(int argc, char** argv) {
    InMemoryMetrics metrics;
    const Labels destination{{"exchange", "orders-events"}, {"routing.key", "order.placed"}};
    for (const char* outcome : {"confirmed", "unroutable", "refused"}) {
        Labels labels = destination;
        labels.emplace_back("outcome", outcome);
        metrics.bind_counter(metric::publish_total, labels)->add(20);
        metrics.bind_distribution(metric::publish_duration, labels)->record(0.0021);
    }
    for (const char* outcome : {"acked", "retried", "dead_lettered", "parked"}) {
        const Labels labels{{"queue", "shipping.orders"}, {"outcome", outcome}};
        metrics.count(metric::consume_total, 4, labels);
        metrics.observe(metric::consume_duration, 0.5, labels);
        metrics.observe(metric::consume_duration, 1e-9, labels);
    }
    metrics.bind_gauge(metric::consume_in_flight, {{"queue", "shipping.orders"}})->add(3);
    metrics.count(metric::retried_total, 2,
                  {{"queue", "shipping.orders"}, {"outcome", "retried"}, {"where", "consumer"}});
    metrics.count(metric::dead_lettered_total, 4, {{"queue", "shipping.orders"}, {"outcome", "dead_lettered"}});
    metrics.count(metric::set_aside_failed, 0, {{"queue", "shipping.orders"}, {"target", "shipping.orders.dlq"}});
    metrics.count(metric::rung_missing, 1, {{"queue", "shipping.orders"}, {"rung", "5s"}});
    metrics.count(metric::outbox_total, 3,
                  {{"exchange", "orders-events"}, {"routing.key", "order.placed"}, {"outcome", "published"}});
    metrics.observe(metric::outbox_lag, 0.012,
                    {{"exchange", "orders-events"}, {"routing.key", "order.placed"}, {"outcome", "published"}});
    metrics.count(metric::request_total, 1, {{"routing.key", "price.quote"}, {"outcome", "timed_out"}});
    metrics.observe(metric::request_duration, 3.0, {{"routing.key", "price.quote"}, {"outcome", "timed_out"}});
    metrics.observe(metric::consume_attempts, 2, {{"queue", "shipping.orders"}});
    metrics.count(metric::idempotency_duplicates, 1, {{"queue", "payments"}});
    metrics.count("my-app.9lives/total", 1, {{"weird label", "quote \" backslash \\ newline \n end"}});
    metrics.gauge("my.app.temperature", -std::numeric_limits<double>::infinity(), {{"sensor", "a"}});
    metrics.gauge("my.app.temperature", std::numeric_limits<double>::quiet_NaN(), {{"sensor", "b"}});
    if (argc > 1) metrics.count(argv[1], 1, {{"queue", "shipping.orders"}});
    std::cout << metrics.prometheus_text();
}
