// `acemq` against acemq-broker processes, in memory and with --data: the operator's round,
// and what only a running broker has: sessions, info, an online backup, and the errors of a
// broker that is gone, that refuses management, or that holds the data file asked for.
#include "scenario.hpp"

#include <acemq/inproc.hpp>

#include "../support/temp_dir.hpp"
#include "../zmq/broker_process.hpp"

using operator_test::document;
using operator_test::run_on;
using operator_test::told;
using zmq_test::BrokerProcess;

namespace {

std::vector<std::string> tcp_broker(const std::vector<std::string>& more = {}) {
    std::vector<std::string> arguments{"--listen", "tcp://127.0.0.1:0"};
    arguments.insert(arguments.end(), more.begin(), more.end());
    return arguments;
}

}  // namespace

TEST_CASE("acemq operates an acemq-broker in memory", "[operator]") {
    BrokerProcess broker(ACEMQ_BROKER_PROGRAM, tcp_broker());
    operator_test::operate({broker.url()});
}

TEST_CASE("acemq operates an acemq-broker with --data, and backs its data file up while it runs", "[operator]") {
    testing_support::TempDir dir("operator-zmq");
    const std::string data = (dir.path() / "broker.db").string();
    BrokerProcess broker(ACEMQ_BROKER_PROGRAM, tcp_broker({"--data", data}));
    const operator_test::Target target{broker.url()};
    operator_test::operate(target);

    // info names the data file; sessions shows a client that is connected.
    acemq::Bus bus = acemq::connect(broker.url());
    bus.declare(acemq::Topology{}.queue("kept", {.type = acemq::QueueType::classic}));
    for (int i = 0; i < 3; ++i) bus.publisher_to_queue("kept").send(std::string("message ") + std::to_string(i));
    const acemq::Value info = document(run_on(target, {"--json", "info"}));
    CHECK(info.find("dataFile")->as_string() == data);
    CHECK(document(run_on(target, {"--json", "sessions"})).as_array().size() >= 2);  // the bus, and acemq itself

    // backup: a file that opens as a data file, holding the same messages.
    const std::string copy = (dir.path() / "copy.db").string();
    const acemq::Value backup = document(run_on(target, {"--json", "backup", copy}));
    CHECK(backup.find("path")->as_string() == copy);
    bus.close();
    {
        std::shared_ptr<acemq::Transport> restored = acemq::inproc::open("inproc://operator-restored?data=" + copy);
        CHECK(restored->queue_depth("kept") == 3);
        std::optional<acemq::Delivery> first = restored->pull("kept");
        REQUIRE(first);
        CHECK(first->message().body().size() > 0);
        first->requeue();
        restored->close();
    }
    const operator_test::Run again = run_on(target, {"backup", copy});
    INFO(told(again));
    CHECK(again.status == 6);  // the file exists: nothing overwritten

    // The broker holds its data file: managing the file in-process is refused, naming the way in.
    const operator_test::Run held =
        operator_test::run_acemq({"--url", "inproc://operator-held?data=" + data, "queues"});
    INFO(told(held));
    CHECK(held.status == 4);
    CHECK(held.err.find("zmq+tcp://") != std::string::npos);

    // A stopped broker: cannot be reached, exit 3, saying what to check.
    broker.stop(SIGTERM);
    const operator_test::Run stopped = run_on(target, {"--timeout", "1s", "queues"});
    INFO(told(stopped));
    CHECK(stopped.status == 3);
    CHECK(stopped.err.find("running") != std::string::npos);
}

TEST_CASE("acemq on a broker in memory: backup is refused as unsupported, exit 6", "[operator]") {
    BrokerProcess broker(ACEMQ_BROKER_PROGRAM, tcp_broker());
    testing_support::TempDir dir("operator-zmq-memory");
    const operator_test::Run refused = run_on({broker.url()}, {"backup", (dir.path() / "copy.db").string()});
    INFO(told(refused));
    CHECK(refused.status == 6);
    CHECK(!std::filesystem::exists(dir.path() / "copy.db"));
}

TEST_CASE("acemq on a broker that refuses management: exit 4, naming --no-management", "[operator]") {
    BrokerProcess broker(ACEMQ_BROKER_PROGRAM, tcp_broker({"--no-management"}));
    const operator_test::Run refused = run_on({broker.url()}, {"queues"});
    INFO(told(refused));
    CHECK(refused.status == 4);
    CHECK(refused.err.find("--no-management") != std::string::npos);
}

TEST_CASE("acemq where nothing listens: exit 3 within the timeout", "[operator]") {
    const operator_test::Run nobody = run_on({"zmq+tcp://127.0.0.1:1"}, {"--timeout", "1s", "queues"});
    INFO(told(nobody));
    CHECK(nobody.status == 3);
    CHECK(nobody.err.find("--url or ACEMQ_URL") != std::string::npos);
}
