// A small HTTP endpoint for what a bus measures and how it is: turn it on with one call.
//
//   auto metrics = std::make_shared<acemq::InMemoryMetrics>();
//   acemq::Bus bus = acemq::connect(url, {.metrics = metrics});
//   acemq::TelemetryServer server = acemq::serve_telemetry(bus, metrics);   // 127.0.0.1:9464
//
//   GET /acemq-metrics           the Prometheus text of `metrics`
//   GET /acemq-health            readiness: the bus's health ("broker") and your checks, at
//                                once under one deadline; JSON, 200 when up or degraded,
//                                503 when down
//   GET /acemq-health/liveness   200 {"status":"up"} while the process serves; never asks the
//                                broker (a broker outage must not get the process restarted)
//   GET /acemq-info              {"library":"acemq-cpp","version":...,"transport":{...}}
//
// Unauthenticated, so it listens on loopback unless told otherwise. Built on cpp-httplib
// (Debian's libcpp-httplib-dev), serving on two threads of its own. The bus and the metrics
// must outlive the server. Thread-safe: a TelemetryServer is used from one thread (start,
// stop); the requests are served on its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <acemq/aggregate_health.hpp>
#include <acemq/bus.hpp>
#include <acemq/metrics.hpp>

namespace acemq {

struct TelemetryServerOptions {
    std::string address = "127.0.0.1";
    std::uint16_t port = 9464;          // the family's; 0 picks a free port (see TelemetryServer::port)
    std::vector<HealthCheck> checks{};  // asked with the bus's own "broker" check
    std::chrono::milliseconds health_deadline = std::chrono::seconds(5);
};

class TelemetryServer {
public:
    // Listening when constructed; Error naming the address and port when it cannot listen
    // there (in use: pick another port, or 0).
    TelemetryServer(Bus& bus, std::shared_ptr<InMemoryMetrics> metrics, TelemetryServerOptions options = {});
    TelemetryServer(TelemetryServer&&) noexcept;
    TelemetryServer& operator=(TelemetryServer&&) noexcept;
    ~TelemetryServer();  // stops

    std::uint16_t port() const;
    std::string url() const;  // "http://127.0.0.1:9464"
    // Stops serving and joins its threads. Idempotent.
    void stop();

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

inline TelemetryServer serve_telemetry(Bus& bus, std::shared_ptr<InMemoryMetrics> metrics,
                                       TelemetryServerOptions options = {}) {
    return TelemetryServer(bus, std::move(metrics), std::move(options));
}

}  // namespace acemq
