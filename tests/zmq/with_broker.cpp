// Runs the Catch2 tests linked with it (the conformance suite, unchanged) against an acemq
// ZeroMQ broker this program starts first: in a thread of its own (ACEMQ_ZMQ_BROKER=thread)
// or as a separate acemq-broker process (ACEMQ_ZMQ_BROKER=PATH of the program), durable when
// ACEMQ_ZMQ_BROKER_DATA names its data file. The tests reach it through
// ACEMQ_CONFORMANCE_URL, which this program sets.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "broker_process.hpp"

int main(int argc, char* argv[]) {
    const char* mode = std::getenv("ACEMQ_ZMQ_BROKER");
    if (mode == nullptr || *mode == '\0') {
        std::cerr << "ACEMQ_ZMQ_BROKER is not set: say `thread`, or the path of acemq-broker\n";
        return 2;
    }
    const std::string endpoint = zmq_test::fresh_ipc_endpoint("conformance");
    std::optional<zmq_test::ThreadBroker> in_thread;
    std::optional<zmq_test::BrokerProcess> process;
    if (std::string_view(mode) == "thread")
        in_thread.emplace(endpoint);
    else if (const char* data = std::getenv("ACEMQ_ZMQ_BROKER_DATA"); data != nullptr && *data != '\0') {
        std::filesystem::remove(data);  // a run starts from an empty broker
        process.emplace(mode, std::vector<std::string>{"--listen", endpoint, "--data", data});
    } else {
        process.emplace(mode, std::vector<std::string>{"--listen", endpoint});
    }
    const std::string url = "zmq+" + (in_thread ? in_thread->endpoint() : process->endpoint());
    ::setenv("ACEMQ_CONFORMANCE_URL", url.c_str(), 1);
    std::cerr << "conformance against " << url
              << (in_thread                              ? " (broker in a thread)"
                  : std::getenv("ACEMQ_ZMQ_BROKER_DATA") ? " (durable acemq-broker process)"
                                                         : " (acemq-broker process)")
              << "\n";
    return Catch::Session().run(argc, argv);
}
