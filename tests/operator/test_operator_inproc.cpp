// `acemq` on a durable inproc://NAME?data=FILE: each run opens the data file in its own
// process, as an operator does on a box where no broker is running; and what every run
// shares whatever the broker: the help, and a command line that cannot be run.
#include "scenario.hpp"

#include "../support/temp_dir.hpp"

using operator_test::run_acemq;
using operator_test::run_on;
using operator_test::told;

TEST_CASE("acemq operates a durable inproc data file: listings, peek, publish, tail, dlq, purge, delete",
          "[operator]") {
    testing_support::TempDir dir("operator-inproc");
    operator_test::operate({"inproc://operator-file?data=" + (dir.path() / "broker.db").string()});
}

TEST_CASE("acemq --help and each command's --help list the exit codes", "[operator]") {
    for (const std::vector<std::string>& arguments : std::vector<std::vector<std::string>>{
             {"--help"}, {"queues", "--help"}, {"dlq", "replay", "--help"}, {"publish", "--help"}}) {
        const operator_test::Run help = run_acemq(arguments);
        INFO(told(help));
        CHECK(help.status == 0);
        CHECK(help.out.find("Exit status:") != std::string::npos);
        CHECK(help.out.find("3  no broker, database or endpoint answered at the URL") != std::string::npos);
    }
}

TEST_CASE("acemq without a URL, with an unknown scheme or a bad option exits 2 saying what to do", "[operator]") {
    const operator_test::Run no_url = run_acemq({"queues"}, {.unset = {"ACEMQ_URL"}});
    INFO(told(no_url));
    CHECK(no_url.status == 2);
    CHECK(no_url.err.find("--url URL or set ACEMQ_URL") != std::string::npos);
    const operator_test::Run scheme = run_acemq({"--url", "nope://user:s3cret@host/", "queues"});
    INFO(told(scheme));
    CHECK(scheme.status == 2);
    CHECK(scheme.err.find("s3cret") == std::string::npos);
    const operator_test::Run duration = run_acemq({"--url", "inproc://x", "--timeout", "5", "queues"});
    INFO(told(duration));
    CHECK(duration.status == 2);
    CHECK(duration.err.find("500ms") != std::string::npos);
    CHECK(run_acemq({"--url", "inproc://x", "frobnicate"}).status == 2);
    CHECK(run_acemq({"--url", "inproc://x", "publish", "q", "--header", "nonsense"}, {.input = "{}"}).status == 2);
}

TEST_CASE("acemq peek shows a body no codec names as hex; move takes a queue's messages to another", "[operator]") {
    testing_support::TempDir dir("operator-inproc-move");
    const operator_test::Target target{"inproc://operator-move?data=" + (dir.path() / "broker.db").string()};
    operator_test::with_bus(target, [](acemq::Bus& bus) {
        bus.declare(acemq::Topology{}
                        .queue("from", {.type = acemq::QueueType::classic})
                        .queue("to", {.type = acemq::QueueType::classic}));
    });
    const operator_test::Run published =
        run_on(target, {"publish", "from", "--content-type", "application/x-protobuf"}, {.input = "\x01\x02\xff"});
    INFO(told(published));
    REQUIRE(published.status == 0);
    const acemq::Value peeked = operator_test::document(run_on(target, {"--json", "peek", "from"}));
    const acemq::Value& message = peeked.find("messages")->as_array().at(0);
    CHECK(message.find("bodyEncoding")->as_string() == "hex");
    CHECK(message.find("body")->as_string() == "0102ff");

    const acemq::Value moved = operator_test::document(run_on(target, {"--json", "move", "from", "to"}));
    CHECK(moved.find("moved")->as_uint64() == 1);
    CHECK(moved.find("left")->as_uint64() == 0);
    CHECK(operator_test::bodies(target, "to") == "\"0102ff\"\n");
    CHECK(run_on(target, {"move", "to", "to"}).status == 2);
}
