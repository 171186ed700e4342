#include <acemq/metrics_endpoint.hpp>

#include <exception>

#include "http_listener.hpp"

namespace acemq {

class MetricsEndpoint::Impl {
public:
    Impl(std::function<std::string()> render, const MetricsEndpointOptions& options)
        : render_(std::move(render)),
          listener_("metrics endpoint", options.address, options.port, [this](httplib::Server& server) {
              server.Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
                  try {
                      response.set_content(render_(), "text/plain; version=0.0.4; charset=utf-8");
                  } catch (const std::exception& error) {
                      // Prometheus marks the target down and shows this text: the scrape says why.
                      response.status = 503;
                      response.set_content(error.what(), "text/plain; charset=utf-8");
                  }
              });
          }) {}

    detail::HttpListener& listener() { return listener_; }

private:
    std::function<std::string()> render_;
    detail::HttpListener listener_;  // last: stopped before render_ goes
};

MetricsEndpoint::MetricsEndpoint(std::function<std::string()> render, MetricsEndpointOptions options)
    : impl_(std::make_unique<Impl>(std::move(render), options)) {}
MetricsEndpoint::MetricsEndpoint(MetricsEndpoint&&) noexcept = default;
MetricsEndpoint& MetricsEndpoint::operator=(MetricsEndpoint&&) noexcept = default;
MetricsEndpoint::~MetricsEndpoint() = default;

std::uint16_t MetricsEndpoint::port() const { return impl_->listener().port(); }
std::string MetricsEndpoint::url() const {
    return "http://" + impl_->listener().address() + ":" + std::to_string(port()) + "/metrics";
}
void MetricsEndpoint::stop() {
    if (impl_) impl_->listener().stop();
}

}  // namespace acemq
