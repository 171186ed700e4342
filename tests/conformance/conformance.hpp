// What every conformance test shares. The suite is written once against the Bus and run
// once per transport: the meson suite sets ACEMQ_CONFORMANCE_URL ("inproc://", or a broker
// URL), and each test gets a fresh bus and queue names no other test uses.
#pragma once

#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include "../support/gate.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include "../support/messages.hpp"

namespace conformance {

using namespace std::chrono_literals;

using test_messages::Order;

// ACEMQ_CONFORMANCE_URL is a URL, or "env:NAME" for a URL that scripts/test puts in the
// variable NAME when it starts the broker. Missing either is a failure, never a skip.
inline std::string transport_url() {
    const char* url = std::getenv("ACEMQ_CONFORMANCE_URL");
    if (url == nullptr || *url == '\0')
        throw std::runtime_error(
            "ACEMQ_CONFORMANCE_URL is not set: run this through `meson test --suite conformance-*`");
    const std::string_view text(url);
    if (!text.starts_with("env:")) return url;
    const std::string variable(text.substr(4));
    const char* from_variable = std::getenv(variable.c_str());
    if (from_variable == nullptr || *from_variable == '\0')
        throw std::runtime_error(variable +
                                 " is not set: this suite needs the broker that scripts/test starts "
                                 "(or `source scripts/servers.sh; start_rabbitmq` by hand)");
    return from_variable;
}

// A fresh bus and a namespace of queue names for one test.
class Fixture {
public:
    explicit Fixture(acemq::BusOptions options = {})
        : prefix_("c" + acemq::new_uuid().substr(0, 8)), bus_(acemq::connect(bus_url(prefix_), std::move(options))),
          harness_(bus_) {}

    acemq::Bus& bus() { return bus_; }
    acemq::testing::Harness& harness() { return harness_; }
    acemq::Transport& transport() { return bus_.transport(); }
    std::string name(std::string_view base) const { return prefix_ + "." + std::string(base); }

    // Declares `queue` as its owner would: durable, quorum, with dead letters.
    std::string source_queue(std::string_view base, acemq::QueueOptions options = {.dead_letter = true}) {
        std::string queue = name(base);
        bus_.declare(acemq::Topology{}.queue(queue, std::move(options)));
        return queue;
    }

    // Takes one message off `queue`, waiting up to `timeout` for one to arrive.
    std::optional<acemq::Delivery> pull(const std::string& queue, std::chrono::milliseconds timeout = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            if (auto delivery = transport().pull(queue)) return delivery;
            if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
            std::this_thread::sleep_for(5ms);
        }
    }

    // Waits up to `timeout` until `queue` holds exactly `depth` ready messages.
    bool wait_depth(const std::string& queue, std::uint64_t depth, std::chrono::milliseconds timeout = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            if (transport().queue_depth(queue) == depth) return true;
            if (std::chrono::steady_clock::now() >= deadline) return false;
            std::this_thread::sleep_for(5ms);
        }
    }

private:
    static std::string bus_url(const std::string& prefix) {
        std::string url = transport_url();
        // The embedded broker is one per name: give each test its own, and a durable one its
        // own data file in the directory the suite names.
        if (url == "inproc://") url += prefix;
        if (const std::string durable = "inproc://?data="; url.starts_with(durable)) {
            const std::filesystem::path directory = url.substr(durable.size());
            std::filesystem::create_directories(directory);
            url = "inproc://" + prefix + "?data=" + (directory / (prefix + ".db")).string();
        }
        return url;
    }

    std::string prefix_;
    acemq::Bus bus_;
    acemq::testing::Harness harness_;
};

inline acemq::Envelope envelope_of(const acemq::Delivery& delivery) {
    const acemq::InboundMessage& message = delivery.message();
    return acemq::read_envelope(message);
}

using testing_support::Gate;

}  // namespace conformance
