#include <acemq/telemetry_server.hpp>

#include <optional>

#include <acemq/config.hpp>
#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>
#include "http_listener.hpp"

namespace acemq {

namespace {

std::string info_json(const TransportInfo& transport) {
    std::string capabilities;
    for (const std::string& capability : transport.capabilities)
        capabilities += (capabilities.empty() ? "" : ",") + json_quoted(capability);
    return "{\"library\":\"acemq-cpp\",\"version\":" + json_quoted(ACEMQ_VERSION) +
           ",\"transport\":{\"name\":" + json_quoted(transport.name) +
           ",\"messagingSystem\":" + json_quoted(transport.messaging_system) +
           ",\"address\":" + json_quoted(transport.address) + ",\"capabilities\":[" + capabilities + "]}}";
}

}  // namespace

class TelemetryServer::Impl {
public:
    Impl(Bus& bus, std::shared_ptr<InMemoryMetrics> metrics, TelemetryServerOptions options)
        : bus_(bus), metrics_(std::move(metrics)), options_(std::move(options)) {
        if (!metrics_) throw InvalidArgument("acemq: serve_telemetry was given no metrics to serve");
        listener_.emplace("telemetry server", options_.address, options_.port, [this](httplib::Server& server) {
            server.Get("/acemq-metrics", [this](const httplib::Request&, httplib::Response& response) {
                response.set_content(metrics_->prometheus_text(), "text/plain; version=0.0.4; charset=utf-8");
            });
            server.Get("/acemq-health", [this](const httplib::Request&, httplib::Response& response) {
                const AggregateHealth health = readiness();
                response.status = health.status == Health::Status::down ? 503 : 200;
                response.set_content(to_json(health, std::chrono::system_clock::now()), "application/json");
            });
            server.Get("/acemq-health/liveness", [](const httplib::Request&, httplib::Response& response) {
                response.set_content("{\"status\":\"up\"}", "application/json");
            });
            server.Get("/acemq-info", [this](const httplib::Request&, httplib::Response& response) {
                response.set_content(info_json(bus_.transport().describe()), "application/json");
            });
        });
    }

    void stop() { listener_->stop(); }
    int port() const { return listener_->port(); }
    const std::string& address() const { return options_.address; }

private:
    AggregateHealth readiness() {
        std::vector<HealthCheck> checks{
            {"broker", [this](std::chrono::milliseconds deadline) { return bus_.health(deadline); }}};
        checks.insert(checks.end(), options_.checks.begin(), options_.checks.end());
        return aggregate_health(checks, options_.health_deadline);
    }

    Bus& bus_;
    std::shared_ptr<InMemoryMetrics> metrics_;
    TelemetryServerOptions options_;
    std::optional<detail::HttpListener> listener_;  // last: stopped before what its handlers use goes
};

TelemetryServer::TelemetryServer(Bus& bus, std::shared_ptr<InMemoryMetrics> metrics, TelemetryServerOptions options)
    : impl_(std::make_unique<Impl>(bus, std::move(metrics), std::move(options))) {}
TelemetryServer::TelemetryServer(TelemetryServer&&) noexcept = default;
TelemetryServer& TelemetryServer::operator=(TelemetryServer&&) noexcept = default;
TelemetryServer::~TelemetryServer() = default;

std::uint16_t TelemetryServer::port() const { return static_cast<std::uint16_t>(impl_->port()); }
std::string TelemetryServer::url() const { return "http://" + impl_->address() + ":" + std::to_string(port()); }
void TelemetryServer::stop() {
    if (impl_) impl_->stop();
}

}  // namespace acemq
