// A Prometheus scrape endpoint for a process that has metrics to show but no Bus to go with
// them, such as a broker (`acemq-broker --metrics`, with broker_prometheus_text from
// <acemq/broker_metrics.hpp>): GET /metrics answers the text `render` returns, asked afresh
// for every scrape; a `render` that throws answers 503 with the error's text. A program with a
// Bus uses TelemetryServer (<acemq/telemetry_server.hpp>) instead.
//
//   acemq::MetricsEndpoint endpoint([&] { return acemq::broker_prometheus_text(*management); },
//                                   {.port = 9465});
//
// Unauthenticated, so it listens on loopback unless told otherwise. Built on cpp-httplib,
// serving on two threads of its own: `render` runs on them, one scrape at a time or two at
// once, and must be safe for that. A MetricsEndpoint is started and stopped from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace acemq {

struct MetricsEndpointOptions {
    std::string address = "127.0.0.1";
    std::uint16_t port = 9465;  // 0 picks a free port (see MetricsEndpoint::port)
};

class MetricsEndpoint {
public:
    // Listening when constructed; Error naming the address and port when it cannot listen
    // there (in use: pick another port, or 0).
    explicit MetricsEndpoint(std::function<std::string()> render, MetricsEndpointOptions options = {});
    MetricsEndpoint(MetricsEndpoint&&) noexcept;
    MetricsEndpoint& operator=(MetricsEndpoint&&) noexcept;
    ~MetricsEndpoint();  // stops

    std::uint16_t port() const;
    std::string url() const;  // "http://127.0.0.1:9465/metrics"
    // Stops serving and joins its threads. Idempotent.
    void stop();

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace acemq
