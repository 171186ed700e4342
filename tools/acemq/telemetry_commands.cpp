// health and metrics: a telemetry endpoint over HTTP (serve_telemetry's, or a broker's
// --metrics), or the broker at --url directly.
#include <chrono>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <httplib.h>

#include <acemq/broker_metrics.hpp>
#include <acemq/health.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/url.hpp>
#include "broker_commands.hpp"
#include "output.hpp"
#include "plan_commands.hpp"

namespace acemq::cli {
namespace {

struct Endpoint {
    std::string base;  // "http://127.0.0.1:9464"
    std::string path;  // "/acemq-health"
    std::string url() const { return base + path; }
};

// --endpoint as the server and the path to GET: the path given, else `default_path` (the
// library's telemetry server's).
Endpoint endpoint_of(const std::string& given, std::string_view default_path) {
    if (!given.starts_with("http://"))
        throw CommandFailed(Exit::usage, "--endpoint " + quoted_name(redacted_url(given)) +
                                             " is not an http:// URL: give http://HOST:PORT (the telemetry endpoint "
                                             "listens on plain HTTP, on loopback by default)");
    const std::size_t slash = given.find('/', 7);
    if (slash == std::string::npos || slash + 1 == given.size())
        return {given.substr(0, slash), std::string(default_path)};
    return {given.substr(0, slash), given.substr(slash)};
}

// GETs `endpoint`; the status and body, or CommandFailed (unreachable) naming what failed.
httplib::Result get(const Endpoint& endpoint, std::chrono::milliseconds timeout) {
    httplib::Client client(endpoint.base);
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout - seconds);
    client.set_connection_timeout(seconds.count(), micros.count());
    client.set_read_timeout(seconds.count(), micros.count());
    httplib::Result result = client.Get(endpoint.path);
    if (!result)
        throw CommandFailed(Exit::unreachable, "nothing answered at " + redacted_url(endpoint.url()) + ": " +
                                                   httplib::to_string(result.error()) +
                                                   "; check --endpoint and that the endpoint is running");
    return result;
}

void check(const std::string& status, const std::string& where, const std::string& detail) {
    if (status != "up")
        throw CommandFailed(Exit::check_failed, "the health at " + where + " is " + status +
                                                    (detail.empty() ? "" : ": " + printable(detail)));
}

void endpoint_health(const Context& context, const std::string& given) {
    const Endpoint endpoint = endpoint_of(given, "/acemq-health");
    const httplib::Result result = get(endpoint, context.timeout);
    Value report;
    try {
        report =
            JsonCodec{}.decode(std::as_bytes(std::span(result->body.data(), result->body.size())), content_types::json);
    } catch (const DecodeError&) {
        throw CommandFailed(Exit::failed, "GET " + redacted_url(endpoint.url()) + " answered " +
                                              std::to_string(result->status) +
                                              " without a health report: give the health path in --endpoint, e.g. "
                                              "http://HOST:PORT/acemq-health");
    }
    const Value* status = report.kind() == Value::Kind::map ? report.find("status") : nullptr;
    if (status == nullptr || status->kind() != Value::Kind::string)
        throw CommandFailed(Exit::failed,
                            "GET " + redacted_url(endpoint.url()) + " answered JSON without a \"status\"");
    const Value* detail = report.find("detail");
    if (context.json)
        std::printf("%s\n", pretty_json(report).c_str());
    else
        std::printf("%s at %s\n%s\n", printable(status->as_string()).c_str(), redacted_url(endpoint.url()).c_str(),
                    pretty_json(report).c_str());
    std::fflush(stdout);
    check(status->as_string(), redacted_url(endpoint.url()),
          detail != nullptr && detail->kind() == Value::Kind::string ? detail->as_string() : "");
}

// A broker that cannot be reached is down: that is the answer a health check gives, not a
// failure to ask it.
Health asked_health(const Context& context) {
    try {
        const std::shared_ptr<Transport> transport = open_connection(context);
        Health health = transport->check_health(context.timeout);
        transport->close();
        return health;
    } catch (const ConnectionError& unreachable) {
        return Health{.status = Health::Status::down, .detail = std::string(without_prefix(unreachable.what()))};
    }
}

void broker_health(const Context& context) {
    const Health health = asked_health(context);
    const std::string report = to_json(health, std::chrono::system_clock::now());
    if (context.json) {
        const Value parsed =
            JsonCodec{}.decode(std::as_bytes(std::span(report.data(), report.size())), content_types::json);
        std::printf("%s\n", pretty_json(parsed).c_str());
    } else {
        std::printf("%s at %s", std::string(to_string(health.status)).c_str(), redacted_url(context.url).c_str());
        if (health.round_trip.count() > 0)
            std::printf(" (round trip %.3f ms)", static_cast<double>(health.round_trip.count()) / 1000.0);
        std::printf("\n");
        if (!health.detail.empty()) std::printf("%s\n", printable(health.detail).c_str());
    }
    std::fflush(stdout);
    check(std::string(to_string(health.status)), redacted_url(context.url), health.detail);
}

void endpoint_metrics(const Context& context, const std::string& given) {
    Endpoint endpoint = endpoint_of(given, "/acemq-metrics");
    httplib::Result result = get(endpoint, context.timeout);
    // No path given: a Bus's telemetry server answers /acemq-metrics, a broker's endpoint
    // (acemq-broker --metrics) /metrics.
    if (result->status == 404 && endpoint_of(given, "").path.empty()) {
        endpoint.path = "/metrics";
        result = get(endpoint, context.timeout);
    }
    if (result->status != 200)
        throw CommandFailed(result->status == 404 ? Exit::not_found : Exit::failed,
                            "GET " + redacted_url(endpoint.url()) + " answered " + std::to_string(result->status) +
                                ": give the metrics path in --endpoint, e.g. http://HOST:PORT/metrics");
    std::fwrite(result->body.data(), 1, result->body.size(), stdout);
    std::fflush(stdout);
}

void broker_metrics(const Context& context) {
    const std::string text = broker_prometheus_text(*open_broker(context));
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

}  // namespace

void add_telemetry_commands(CLI::App& app, const Context& context) {
    auto health_endpoint = std::make_shared<std::string>();
    CLI::App* health = app.add_subcommand(
        "health",
        "is it up: a telemetry endpoint's health report, or the broker at --url asked directly; exit 1 "
        "unless up");
    health->add_option("--endpoint", *health_endpoint,
                       "http://HOST:PORT[/PATH] of a telemetry endpoint (PATH defaults to /acemq-health)");
    health->callback([&context, health_endpoint] {
        if (health_endpoint->empty())
            broker_health(context);
        else
            endpoint_health(context, *health_endpoint);
    });

    auto metrics_endpoint = std::make_shared<std::string>();
    CLI::App* metrics = app.add_subcommand(
        "metrics",
        "Prometheus text: a telemetry endpoint's (serve_telemetry, acemq-broker --metrics), or the broker's "
        "at --url rendered from its management answers (queues, traffic, data file, sessions)");
    metrics->add_option("--endpoint", *metrics_endpoint,
                        "http://HOST:PORT[/PATH] of the endpoint (PATH: /acemq-metrics, else /metrics)");
    metrics->callback([&context, metrics_endpoint] {
        if (metrics_endpoint->empty())
            broker_metrics(context);
        else
            endpoint_metrics(context, *metrics_endpoint);
    });
}

}  // namespace acemq::cli
