// Reading the broker's answers on a raw DEALER of a test's own (no acemq client), bounded.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

#include <zmq.hpp>

#include "zmq/protocol.hpp"

namespace zmq_test {

// The next frame from the broker that is not a heartbeat; nullopt when none comes within
// `limit` in all (heartbeats go on arriving while the broker ignores what was sent, so a
// bound per poll alone would wait forever).
inline std::optional<std::vector<std::byte>> next_answer(::zmq::socket_t& dealer,
                                                         std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::vector<::zmq::pollitem_t> items{{dealer.handle(), 0, ZMQ_POLLIN, 0}};
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || ::zmq::poll(items, left) == 0) return std::nullopt;
        ::zmq::message_t reply;
        (void)dealer.recv(reply);
        const auto* data = static_cast<const std::byte*>(reply.data());
        std::vector<std::byte> bytes(data, data + reply.size());
        if (acemq::zmq::wire::Frame::parse(bytes).command() != acemq::zmq::wire::Command::heartbeat) return bytes;
    }
}

}  // namespace zmq_test
