// A stand-in for another version of the broker: a ROUTER on a fresh ipc endpoint whose thread
// hands each frame a client sends to `answer` and sends back what it returns (nothing for
// nullopt). Stops and joins its thread when destroyed. For tests of how a client meets a
// broker that speaks differently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "broker_process.hpp"
#include "zmq/protocol.hpp"

namespace zmq_test {

class FakeBroker {
public:
    using Answer = std::function<std::optional<msgpack::sbuffer>(std::span<const std::byte> frame)>;

    FakeBroker(std::string_view name, Answer answer)
        : router_(context_, ::zmq::socket_type::router), endpoint_(fresh_ipc_endpoint(name)) {
        router_.set(::zmq::sockopt::linger, 0);
        router_.bind(endpoint_);
        thread_ = std::thread([this, answer = std::move(answer)] { serve(answer); });
    }
    FakeBroker(const FakeBroker&) = delete;
    FakeBroker& operator=(const FakeBroker&) = delete;
    ~FakeBroker() {
        stop_.store(true);
        thread_.join();
    }

    // The URL a client opens: "zmq+ipc://...".
    std::string url() const { return "zmq+" + endpoint_; }

private:
    void serve(const Answer& answer) {
        std::vector<::zmq::pollitem_t> items{{router_.handle(), 0, ZMQ_POLLIN, 0}};
        while (!stop_.load()) {
            if (::zmq::poll(items, std::chrono::milliseconds(50)) == 0) continue;
            ::zmq::message_t identity, frame;
            (void)router_.recv(identity);
            (void)router_.recv(frame);
            const std::optional<msgpack::sbuffer> reply =
                answer(std::span(static_cast<const std::byte*>(frame.data()), frame.size()));
            if (!reply) continue;
            router_.send(identity, ::zmq::send_flags::sndmore);
            router_.send(::zmq::buffer(reply->data(), reply->size()), ::zmq::send_flags::none);
        }
    }

    ::zmq::context_t context_;
    ::zmq::socket_t router_;
    std::string endpoint_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace zmq_test
