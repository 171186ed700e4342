#include <acemq/telemetry_server.hpp>

#include <httplib.h>

#include <thread>

#include <acemq/config.hpp>
#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>

namespace acemq {

namespace {

constexpr int serving_threads = 2;
constexpr std::chrono::seconds start_limit{5};

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
        server_.new_task_queue = [] { return new httplib::ThreadPool(serving_threads); };
        // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, which would let a second
        // server share the port and take half the scrapes instead of failing to start.
        server_.set_socket_options([](socket_t socket) {
            int yes = 1;
            setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        });
        server_.Get("/acemq-metrics", [this](const httplib::Request&, httplib::Response& response) {
            response.set_content(metrics_->prometheus_text(), "text/plain; version=0.0.4; charset=utf-8");
        });
        server_.Get("/acemq-health", [this](const httplib::Request&, httplib::Response& response) {
            const AggregateHealth health = readiness();
            response.status = health.status == Health::Status::down ? 503 : 200;
            response.set_content(to_json(health, std::chrono::system_clock::now()), "application/json");
        });
        server_.Get("/acemq-health/liveness", [](const httplib::Request&, httplib::Response& response) {
            response.set_content("{\"status\":\"up\"}", "application/json");
        });
        server_.Get("/acemq-info", [this](const httplib::Request&, httplib::Response& response) {
            response.set_content(info_json(bus_.transport().describe()), "application/json");
        });
        const std::string where = options_.address + ":" + std::to_string(options_.port);
        const bool bound = options_.port == 0 ? (port_ = server_.bind_to_any_port(options_.address)) > 0
                                              : server_.bind_to_port(options_.address, port_ = options_.port);
        if (!bound)
            throw Error("acemq: the telemetry server cannot listen on " + where +
                        ": the port is taken or the address is not this machine's; pick another port, or 0 for "
                        "any free one");
        serving_ = std::thread([this] { server_.listen_after_bind(); });
        // stop() is ignored until the server runs: wait for it, or the destructor could hang.
        const auto until = std::chrono::steady_clock::now() + start_limit;
        while (!server_.is_running() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (!server_.is_running()) {
            stop();
            throw Error("acemq: the telemetry server on " + where + " did not start serving within 5 s");
        }
    }
    ~Impl() { stop(); }

    void stop() {
        if (!serving_.joinable()) return;
        server_.stop();
        serving_.join();
    }
    int port() const { return port_; }
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
    httplib::Server server_;
    int port_ = 0;
    std::thread serving_;
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
