// The family's tutorial 4, "seeing what happens": twenty orders published, sixteen handled,
// four given up on after a retry, three outbox records relayed; then what the bus measured,
// in the Prometheus text that /acemq-metrics serves.
//
//   build/examples/seeing_what_happens [--url URL] [--port N] [--serve-seconds S]
//
// --port picks the telemetry endpoint's port (9464 by default, 0 for any free one);
// --serve-seconds keeps serving /acemq-metrics, /acemq-health and /acemq-info that long
// after the work is done, for a Prometheus to scrape (tests/prometheus/prometheus_scrape.sh).
// Run it twice on RabbitMQ and the queues hold the first run's invoices: it counts only
// what this run did.
#include <acemq/acemq.hpp>
#include <acemq/stores/memory_outbox_store.hpp>

#include "command_line.hpp"

#include <cstdio>
#include <thread>

using namespace std::chrono_literals;

struct Order {
    std::string id;
    std::int64_t cents = 0;
};

namespace {

constexpr int orders_sent = 20;

// Waits (bounded) until `done` is true.
template <class Done>
bool wait_until(Done done, std::chrono::milliseconds limit = 20s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

int run(const std::string& url, std::uint16_t port, int serve_seconds) {
    // 1. Turn it on: nothing is measured unless a Metrics is given.
    auto metrics = std::make_shared<acemq::InMemoryMetrics>();
    acemq::Bus bus = acemq::connect(url, {.origin = "tutorial@seeing-what-happens", .metrics = metrics});
    acemq::TelemetryServer server = acemq::serve_telemetry(bus, metrics, {.port = port});
    std::printf("serving %s/acemq-metrics\n", server.url().c_str());

    bus.declare(acemq::Topology{}
                    .exchange("orders-events", acemq::ExchangeKind::topic)
                    .queue("shipping.orders", {.dead_letter = true})
                    .bind("shipping.orders", "orders-events", "order.placed")
                    .queue("billing.invoices")
                    .bind("billing.invoices", "orders-events", "order.invoiced"));

    // Every fifth order has no address: the handler cannot ship it, however often it tries.
    acemq::Consumer shipping =
        bus.consume<Order>("shipping.orders",
                           [](const acemq::Message<Order>& message) {
                               if (message.payload.cents % 5 == 0)
                                   return acemq::retry(std::runtime_error("no shipping address"));
                               return acemq::accept();
                           },
                           {.retry = acemq::fixed_retry(2, 50ms)});

    acemq::Publisher orders = bus.publisher("orders-events", "order.placed", {.mandatory = true});
    for (int i = 1; i <= orders_sent; ++i) orders.send(Order{"order-" + std::to_string(i), i});

    // The outbox: records written with the business rows, published after the commit.
    acemq::InMemoryOutboxStore outbox;
    for (int i = 1; i <= 3; ++i)
        outbox.add(acemq::record(bus, "orders-events", "order.invoiced", Order{"invoice-" + std::to_string(i), i}));
    std::this_thread::sleep_for(20ms);  // a little lag to measure
    acemq::OutboxRelay relay{bus, outbox};
    relay.sweep();

    const acemq::Labels acked{{"queue", "shipping.orders"}, {"outcome", "acked"}};
    const acemq::Labels given_up{{"queue", "shipping.orders"}, {"outcome", "dead_lettered"}};
    if (!wait_until([&] {
            return metrics->counter(acemq::metric::consume_total, acked) +
                       metrics->counter(acemq::metric::consume_total, given_up) ==
                   orders_sent;
        })) {
        std::fprintf(stderr, "the orders were not all settled within 20 s\n");
        return 1;
    }
    shipping.close();

    std::printf("%s", metrics->prometheus_text().c_str());
    std::printf("%d published, %lld handled, %lld given up on\n", orders_sent,
                static_cast<long long>(metrics->counter(acemq::metric::consume_total, acked)),
                static_cast<long long>(metrics->counter(acemq::metric::consume_total, given_up)));
    if (serve_seconds > 0) {
        std::printf("serving for %d s more\n", serve_seconds);
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::seconds(serve_seconds));
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string url = example::option(argc, argv, "--url").value_or("inproc://seeing-what-happens");
    const int port = std::stoi(example::option(argc, argv, "--port").value_or("9464"));
    const int serve_seconds = std::stoi(example::option(argc, argv, "--serve-seconds").value_or("0"));
    return example::run("seeing_what_happens",
                        [&] { return run(url, static_cast<std::uint16_t>(port), serve_seconds); });
}
