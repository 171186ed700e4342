#include "http_listener.hpp"

#include <chrono>

#include <acemq/error.hpp>

namespace acemq::detail {

namespace {

constexpr int serving_threads = 2;
constexpr std::chrono::seconds start_limit{5};

}  // namespace

HttpListener::HttpListener(std::string_view what, std::string address, std::uint16_t port,
                           const std::function<void(httplib::Server&)>& routes)
    : address_(std::move(address)) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(serving_threads); };
    // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, which would let a second
    // server share the port and take half the scrapes instead of failing to start.
    server_.set_socket_options([](socket_t socket) {
        int yes = 1;
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    routes(server_);
    const std::string where = address_ + ":" + std::to_string(port);
    const bool bound =
        port == 0 ? (port_ = server_.bind_to_any_port(address_)) > 0 : server_.bind_to_port(address_, port_ = port);
    if (!bound)
        throw Error("acemq: the " + std::string(what) + " cannot listen on " + where +
                    ": the port is taken or the address is not this machine's; pick another port, or 0 for "
                    "any free one");
    serving_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is ignored until the server runs: wait for it, or the destructor could hang.
    const auto until = std::chrono::steady_clock::now() + start_limit;
    while (!server_.is_running() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!server_.is_running()) {
        stop();
        throw Error("acemq: the " + std::string(what) + " on " + where + " did not start serving within 5 s");
    }
}

HttpListener::~HttpListener() { stop(); }

void HttpListener::stop() {
    if (!serving_.joinable()) return;
    server_.stop();
    serving_.join();
}

}  // namespace acemq::detail
