#include "zmq/endpoint.hpp"

#include <charconv>

#include <acemq/error.hpp>
#include <acemq/url.hpp>

namespace acemq::zmq {

namespace {

// Splits "HOST:PORT" ("[::1]:PORT" for IPv6); false when there is no port.
bool split_host_port(std::string_view address, std::string_view& host, std::string_view& port) {
    const auto colon = address.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == address.size()) return false;
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
    return true;
}

bool is_port(std::string_view port) {
    if (port == "*") return true;
    unsigned value = 0;
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    return error == std::errc{} && end == port.data() + port.size() && value <= 65535;
}

bool is_loopback(std::string_view host) { return host == "localhost" || host == "::1" || host.starts_with("127."); }

}  // namespace

void check_bind_endpoint(std::string_view endpoint, bool allow_remote) {
    const std::string shown(endpoint);
    if (endpoint.starts_with("ipc://")) {
        if (endpoint.size() == 6)
            throw InvalidArgument("acemq: zmq endpoint \"" + shown + "\" names no path: write ipc:///PATH");
        return;
    }
    std::string_view host, port;
    if (!endpoint.starts_with("tcp://") || !split_host_port(endpoint.substr(6), host, port) || !is_port(port))
        throw InvalidArgument("acemq: \"" + shown +
                              "\" is not a zmq endpoint the broker can listen on: write tcp://HOST:PORT (port 0 or * "
                              "for any free one) or ipc:///PATH");
    if (!allow_remote && !is_loopback(host))
        throw InvalidArgument("acemq: the zmq broker listens on loopback unless told otherwise, and \"" + shown +
                              "\" is not loopback: use tcp://127.0.0.1:PORT, or allow remote clients explicitly "
                              "(ServerOptions::allow_remote, acemq-broker --allow-remote) and give them CurveZMQ keys");
}

std::string bind_endpoint(std::string_view endpoint) {
    constexpr std::string_view localhost = "tcp://localhost:";
    if (endpoint.starts_with(localhost)) return "tcp://127.0.0.1:" + std::string(endpoint.substr(localhost.size()));
    return std::string(endpoint);
}

std::string endpoint_of_url(std::string_view url) {
    std::string_view host, port;
    if (url.starts_with("zmq+ipc://") && url.size() > 10) return "ipc://" + std::string(url.substr(10));
    if (url.starts_with("zmq+tcp://") && url.find('?') == std::string_view::npos &&
        split_host_port(url.substr(10), host, port) && port != "*" && is_port(port) && port != "0")
        return "tcp://" + std::string(url.substr(10));
    throw InvalidArgument("acemq: cannot open \"" + redacted_url(url) +
                          "\" as a zmq transport: write zmq+tcp://HOST:PORT or zmq+ipc:///PATH (no query: settings "
                          "go in acemq::zmq::Options)");
}

}  // namespace acemq::zmq
