// What an operator does with `acemq` on any broker, checked the same way on each: the same
// topology and messages, the same expected listings and messages back. Each broker's test
// file (inproc data file, acemq-broker process, RabbitMQ) runs it against its URL.
#pragma once

#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/uuid.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "acemq_process.hpp"

namespace operator_test {

using namespace std::chrono_literals;

struct Target {
    std::string url;
    std::vector<std::string> options{};  // before the subcommand, e.g. --management-url
};

inline Run run_on(const Target& target, std::vector<std::string> arguments, RunOptions options = {}) {
    std::vector<std::string> all{"--url", target.url};
    all.insert(all.end(), target.options.begin(), target.options.end());
    all.insert(all.end(), arguments.begin(), arguments.end());
    return run_acemq(all, options);
}

// The one JSON document a --json run wrote.
inline acemq::Value document(const Run& run) {
    INFO(told(run));
    REQUIRE(run.status == 0);
    const auto* first = reinterpret_cast<const std::byte*>(run.out.data());
    return acemq::JsonCodec().decode(std::span<const std::byte>(first, run.out.size()), "application/json");
}

inline std::string text(const acemq::Value& value) { return value.is_null() ? "null" : value.as_string(); }

// A bus on the target for the length of `body`, closed after: a durable inproc broker's data
// file is held by one process at a time, and the `acemq` runs need it next.
inline void with_bus(const Target& target, const std::function<void(acemq::Bus&)>& body) {
    acemq::Bus bus = acemq::connect(target.url);
    body(bus);
    bus.close();
}

// The queues listed as the brokers all tell them: "NAME TYPE durable=D ready=R unacked=U
// consumers=C", for those whose name starts with `prefix`, in name order.
inline std::string queue_lines(const Target& target, const std::string& prefix) {
    std::string lines;
    const acemq::Value queues = document(run_on(target, {"--json", "queues"}));
    for (const acemq::Value& queue : queues.as_array()) {
        const std::string& name = queue.find("name")->as_string();
        if (name.rfind(prefix, 0) != 0) continue;
        lines += name.substr(prefix.size()) + " " + queue.find("type")->as_string() +
                 " durable=" + (queue.find("durable")->as_bool() ? "yes" : "no") +
                 " ready=" + std::to_string(queue.find("ready")->as_uint64()) +
                 " unacked=" + std::to_string(queue.find("unacked")->as_uint64()) +
                 " consumers=" + std::to_string(queue.find("consumers")->as_uint64()) + "\n";
    }
    return lines;
}

inline std::string json_text(const acemq::Value& value) {
    const std::vector<std::byte> bytes = acemq::JsonCodec().encode(value);
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// The bodies of the first `count` messages of `queue`, one JSON text a line.
inline std::string bodies(const Target& target, const std::string& queue, int count = 10) {
    std::string lines;
    const acemq::Value peeked = document(run_on(target, {"--json", "peek", queue, "-n", std::to_string(count)}));
    for (const acemq::Value& message : peeked.find("messages")->as_array())
        lines += json_text(*message.find("body")) + "\n";
    return lines;
}

// queue_lines once it reads `expected`, or as it reads after 30 s: RabbitMQ's management API
// counts from statistics it gathers every few seconds, so a listing lags what just happened.
inline std::string queue_lines_when(const Target& target, const std::string& prefix, const std::string& expected) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    std::string lines = queue_lines(target, prefix);
    while (lines != expected && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(250ms);
        lines = queue_lines(target, prefix);
    }
    return lines;
}

struct OrderPlaced {
    std::string order_id;
    std::int64_t total_cents;
};

// The whole round: publish, list, peek, tail, dead letters and their replay, purge, delete.
inline void operate(const Target& target) {
    const std::string prefix = "op-" + acemq::new_uuid().substr(0, 8) + ".";
    const std::string queue = prefix + "orders";
    const std::string dlq = queue + ".dlq";
    with_bus(target, [&](acemq::Bus& bus) {
        bus.declare(acemq::Topology{}.queue(queue, {.dead_letter = true, .type = acemq::QueueType::classic}));
    });

    // publish: the body from standard input, confirmed, exit 0.
    for (const std::string order : {"o-1", "o-2"}) {
        const Run published = run_on(target, {"publish", queue}, {.input = R"({"order":")" + order + R"("})"});
        INFO(told(published));
        CHECK(published.status == 0);
        CHECK(published.out.find("CONFIRMED") != std::string::npos);
    }
    const Run with_headers = run_on(target, {"publish", queue, "--header", "note=hi", "--message-id", "m-3"},
                                    {.input = R"({"order":"o-3"})"});
    INFO(told(with_headers));
    REQUIRE(with_headers.status == 0);
    with_bus(target, [&](acemq::Bus& bus) {
        bus.publisher_to_queue(queue, {.codec = std::make_shared<acemq::MsgpackCodec>()})
            .send(OrderPlaced{"o-4", 4250});
    });
    const Run text_body =
        run_on(target, {"publish", queue, "--content-type", "text/plain"}, {.input = "red \x1b[31m alert o-5"});
    INFO(told(text_body));
    REQUIRE(text_body.status == 0);

    // publish that is not confirmed, or reaches no queue: exit 1 and the reason.
    const Run no_exchange = run_on(target, {"publish", "k", "--exchange", prefix + "missing"}, {.input = "{}"});
    INFO(told(no_exchange));
    CHECK(no_exchange.status == 1);
    CHECK(no_exchange.err.find("not confirmed") != std::string::npos);
    const Run no_queue = run_on(target, {"publish", prefix + "nobody"}, {.input = "{}"});
    INFO(told(no_queue));
    CHECK(no_queue.status == 1);
    CHECK(no_queue.err.find("reached no queue") != std::string::npos);

    // The same listing on every broker.
    const std::string five_ready =
        "orders classic durable=yes ready=5 unacked=0 consumers=0\n"
        "orders.dlq classic durable=yes ready=0 unacked=0 consumers=0\n"
        "orders.parked classic durable=yes ready=0 unacked=0 consumers=0\n";
    CHECK(queue_lines_when(target, prefix, five_ready) == five_ready);
    const Run table = run_on(target, {"queues"});
    INFO(told(table));
    CHECK(table.out.find("NAME") == 0);

    // peek: every body decoded by its content type, nothing taken, the order kept.
    const std::string expected_bodies =
        "{\"order\":\"o-1\"}\n{\"order\":\"o-2\"}\n{\"order\":\"o-3\"}\n"
        "[\"o-4\",4250]\n\"red \\u001b[31m alert o-5\"\n";
    CHECK(bodies(target, queue) == expected_bodies);
    CHECK(bodies(target, queue) == expected_bodies);
    CHECK(queue_lines_when(target, prefix, five_ready) == five_ready);
    const acemq::Value third = document(run_on(target, {"--json", "peek", queue, "--from", "2", "-n", "1"}));
    const acemq::Value& message = third.find("messages")->as_array().at(0);
    CHECK(message.find("position")->as_uint64() == 2);
    CHECK(text(*message.find("id")) == "m-3");
    CHECK(text(*message.find("bodyEncoding")) == "json");
    CHECK(text(*message.find("headers")->find("note")) == "hi");
    const Run human = run_on(target, {"peek", queue, "-n", "5"});
    INFO(told(human));
    CHECK(human.out.find("\"order\": \"o-1\"") != std::string::npos);  // JSON pretty
    CHECK(human.out.find("body          msgpack") != std::string::npos);
    CHECK(human.out.find("red \\x1B[31m alert") != std::string::npos);  // the escape shown, not sent
    CHECK(human.out.find('\x1b') == std::string::npos);
    CHECK(run_on(target, {"peek", prefix + "absent"}).status == 5);

    // tail without --ack leaves every message where it was; with --ack takes them.
    const Run tailed = run_on(target, {"tail", queue, "--count", "2", "--timeout", "1s"});
    INFO(told(tailed));
    CHECK(tailed.status == 0);
    CHECK(tailed.out.find("o-1") != std::string::npos);
    CHECK(tailed.out.find("o-2") != std::string::npos);
    CHECK(bodies(target, queue) == expected_bodies);
    const Run acked = run_on(target, {"tail", queue, "--ack", "--count", "1", "--timeout", "1s"});
    INFO(told(acked));
    CHECK(acked.status == 0);
    CHECK(bodies(target, queue, 1) == "{\"order\":\"o-2\"}\n");

    // Dead letters: a consumer that always fails sends all four to orders.dlq.
    with_bus(target, [&](acemq::Bus& bus) {
        acemq::testing::Harness harness{bus};
        acemq::Consumer failing = bus.consume_raw(queue, [](const acemq::Message<acemq::Bytes>&) -> acemq::Ack {
            throw std::runtime_error("the warehouse is not answering");
        });
        REQUIRE(harness.wait_dead_lettered(queue, 4, 20s));
        failing.close();
    });
    const acemq::Value listed = document(run_on(target, {"--json", "dlq", "list", queue}));
    REQUIRE(listed.find("messages")->as_array().size() == 4);
    for (const acemq::Value& dead : listed.find("messages")->as_array())
        CHECK(text(*dead.find("error")).find("the warehouse is not answering") != std::string::npos);
    const Run list_table = run_on(target, {"dlq", "list", queue});
    INFO(told(list_table));
    CHECK(list_table.out.find("ERROR") != std::string::npos);

    // replay: --dry-run moves nothing, --match picks, --limit bounds, the summary tells.
    const acemq::Value dry =
        document(run_on(target, {"--json", "dlq", "replay", queue, "--dry-run", "--match", "o-3"}));
    CHECK(dry.find("wouldMove")->as_uint64() == 1);
    CHECK(dry.find("left")->as_uint64() == 3);
    const std::string four_dead =
        "orders classic durable=yes ready=0 unacked=0 consumers=0\n"
        "orders.dlq classic durable=yes ready=4 unacked=0 consumers=0\n"
        "orders.parked classic durable=yes ready=0 unacked=0 consumers=0\n";
    CHECK(queue_lines_when(target, prefix, four_dead) == four_dead);
    const acemq::Value matched = document(run_on(target, {"--json", "dlq", "replay", queue, "--match", "o-3"}));
    CHECK(matched.find("moved")->as_uint64() == 1);
    CHECK(matched.find("skipped")->as_uint64() == 3);
    CHECK(matched.find("left")->as_uint64() == 3);
    CHECK(bodies(target, queue) == "{\"order\":\"o-3\"}\n");
    const Run limited = run_on(target, {"dlq", "replay", queue, "--limit", "1"});
    INFO(told(limited));
    CHECK(limited.status == 0);
    CHECK(limited.out.find("MOVED") != std::string::npos);
    const std::string two_each =
        "orders classic durable=yes ready=2 unacked=0 consumers=0\n"
        "orders.dlq classic durable=yes ready=2 unacked=0 consumers=0\n"
        "orders.parked classic durable=yes ready=0 unacked=0 consumers=0\n";
    CHECK(queue_lines_when(target, prefix, two_each) == two_each);

    // purge and delete refuse without --yes off a terminal, naming it; with it, do it.
    for (const std::string command : {"purge", "delete"}) {
        const Run refused = run_on(target, {command, dlq});
        INFO(told(refused));
        CHECK(refused.status == 2);
        CHECK(refused.err.find("--yes") != std::string::npos);
    }
    CHECK(queue_lines_when(target, prefix, two_each) == two_each);
    const acemq::Value purged = document(run_on(target, {"--json", "purge", dlq, "--yes"}));
    CHECK(purged.find("purged")->as_uint64() == 2);
    const Run deleted = run_on(target, {"delete", queue, "--yes"});
    INFO(told(deleted));
    CHECK(deleted.status == 0);
    const std::string deleted_one =
        "orders.dlq classic durable=yes ready=0 unacked=0 consumers=0\n"
        "orders.parked classic durable=yes ready=0 unacked=0 consumers=0\n";
    CHECK(queue_lines_when(target, prefix, deleted_one) == deleted_one);
    for (const std::string& leftover : {dlq, queue + ".parked"}) run_on(target, {"delete", leftover, "--yes"});
}

}  // namespace operator_test
