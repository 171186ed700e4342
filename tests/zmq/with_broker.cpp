// Runs the Catch2 tests linked with it (the conformance suite, unchanged) against an acemq
// ZeroMQ broker this program starts first: in a thread of its own (ACEMQ_ZMQ_BROKER=thread)
// or as a separate acemq-broker process (ACEMQ_ZMQ_BROKER=PATH of the program). The tests
// reach it through ACEMQ_CONFORMANCE_URL, which this program sets.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
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
    else
        process.emplace(mode, std::vector<std::string>{"--listen", endpoint});
    const std::string url = "zmq+" + (in_thread ? in_thread->endpoint() : process->endpoint());
    ::setenv("ACEMQ_CONFORMANCE_URL", url.c_str(), 1);
    std::cerr << "conformance against " << url << (in_thread ? " (broker in a thread)" : " (acemq-broker process)")
              << "\n";
    return Catch::Session().run(argc, argv);
}
