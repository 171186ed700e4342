// Starts an acemq ZeroMQ broker before the first test of the Catch2 tests linked with it (the
// conformance suite, unchanged) and stops it after the last: in a thread of its own
// (ACEMQ_ZMQ_BROKER=thread) or as a separate acemq-broker process (ACEMQ_ZMQ_BROKER=PATH of
// the program), durable when ACEMQ_ZMQ_BROKER_DATA names its data file. The tests reach it
// through ACEMQ_CONFORMANCE_URL, which this listener sets. A listener, not a main of its
// own, so the executable links Catch's main like every other test.
#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener base
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "../zmq/broker_process.hpp"

namespace {

class BrokerForTheRun : public Catch::TestEventListenerBase {
public:
    using TestEventListenerBase::TestEventListenerBase;

    void testRunStarting(const Catch::TestRunInfo&) override {
        const char* mode = std::getenv("ACEMQ_ZMQ_BROKER");
        if (mode == nullptr || *mode == '\0')
            throw std::runtime_error("ACEMQ_ZMQ_BROKER is not set: say `thread`, or the path of acemq-broker");
        const std::string endpoint = zmq_test::fresh_ipc_endpoint("conformance");
        const char* data = std::getenv("ACEMQ_ZMQ_BROKER_DATA");
        const bool durable = data != nullptr && *data != '\0';
        if (std::string_view(mode) == "thread") {
            in_thread_.emplace(endpoint);
        } else if (durable) {
            std::filesystem::remove(data);  // a run starts from an empty broker
            process_.emplace(mode, std::vector<std::string>{"--listen", endpoint, "--data", data});
        } else {
            process_.emplace(mode, std::vector<std::string>{"--listen", endpoint});
        }
        const std::string url = "zmq+" + (in_thread_ ? in_thread_->endpoint() : process_->endpoint());
        ::setenv("ACEMQ_CONFORMANCE_URL", url.c_str(), 1);
        std::cerr << "conformance against " << url
                  << (in_thread_ ? " (broker in a thread)"
                      : durable  ? " (durable acemq-broker process)"
                                 : " (acemq-broker process)")
                  << "\n";
    }

    void testRunEnded(const Catch::TestRunStats&) override {
        in_thread_.reset();
        process_.reset();
    }

private:
    std::optional<zmq_test::ThreadBroker> in_thread_;
    std::optional<zmq_test::BrokerProcess> process_;
};

}  // namespace

CATCH_REGISTER_LISTENER(BrokerForTheRun)
