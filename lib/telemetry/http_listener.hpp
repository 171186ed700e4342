// Internal: a cpp-httplib server on one address and port, serving on two threads of its own,
// for the library's HTTP endpoints (TelemetryServer, MetricsEndpoint). Listening when
// constructed; stopped (its threads joined) by stop() or the destructor.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include <httplib.h>

namespace acemq::detail {

class HttpListener {
public:
    // `routes` adds the handlers before the server listens. Error naming `what`, the address
    // and the port when it cannot listen there; port 0 picks a free one.
    HttpListener(std::string_view what, std::string address, std::uint16_t port,
                 const std::function<void(httplib::Server&)>& routes);
    ~HttpListener();
    HttpListener(const HttpListener&) = delete;
    HttpListener& operator=(const HttpListener&) = delete;

    void stop();
    std::uint16_t port() const noexcept { return static_cast<std::uint16_t>(port_); }
    const std::string& address() const noexcept { return address_; }

private:
    httplib::Server server_;
    std::string address_;
    int port_ = 0;
    std::thread serving_;
};

}  // namespace acemq::detail
