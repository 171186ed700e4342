#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/naming.hpp>
#include <acemq/topology_file.hpp>
#include "../support/thrown.hpp"

using namespace acemq;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// Every field of every kind of declaration, the shared halves, and names declared elsewhere.
constexpr std::string_view every_field = R"j({
  "existingExchanges": ["billing"],
  "existingQueues": ["payments.new"],
  "exchanges": [
    {"name": "orders", "type": "topic"},
    {"name": "audit", "type": "fanout", "durable": false, "autoDelete": true, "arguments": {"alternate-exchange": "orders"}}
  ],
  "queues": [
    {"name": "orders.new", "deadLetter": true, "retry": "exponential(6, 10s, 1m)", "arguments": {"x-max-length": 10000}},
    {"name": "orders.paid", "deadLetter": true, "type": "classic"},
    {"name": "audit.tmp", "durable": false, "exclusive": true, "autoDelete": true},
    {"name": "orders.log", "type": "stream", "arguments": {"x-max-age": "7D", "x-custom": [1, "two", true, 2.5, {"deep": null}]}}
  ],
  "bindings": [
    {"queue": "orders.new", "exchange": "orders", "routingKey": "order.*"},
    {"queue": "audit.tmp", "exchange": "audit"},
    {"queue": "payments.new", "exchange": "billing", "routingKey": "paid", "arguments": {"x-match": "all"}}
  ]
})j";

void check_refused(std::string_view file, const std::string& where_and_why) {
    INFO(file);
    CHECK_THAT(testing_support::what_of<TopologyError>([&] { parse_topology_file(file, "deploy/topology.json"); }),
               Catch::StartsWith("acemq: deploy/topology.json: ") && Catch::Contains(where_and_why));
}

}  // namespace

TEST_CASE("a topology file declares what the builder would") {
    const Topology read = parse_topology_file(every_field);
    const Topology built =
        Topology{}
            .existing_exchange("billing")
            .existing_queue("payments.new")
            .exchange("orders", ExchangeKind::topic)
            .exchange("audit", ExchangeKind::fanout,
                      {.durable = false, .auto_delete = true, .arguments = {{"alternate-exchange", "orders"}}})
            .queue("orders.new", {.dead_letter = true,
                                  .retry = exponential_retry(6, seconds(10), std::chrono::minutes(1)),
                                  .arguments = {{"x-max-length", std::int64_t{10000}}}})
            .queue("orders.paid", {.dead_letter = true, .type = QueueType::classic})
            .queue("audit.tmp", {.durable = false, .exclusive = true, .auto_delete = true})
            .queue("orders.log", {.type = QueueType::stream,
                                  .arguments = {{"x-max-age", "7D"},
                                                {"x-custom", FieldArray{std::int64_t{1}, "two", true, 2.5,
                                                                        FieldTable{{"deep", FieldValue()}}}}}})
            .bind("orders.new", "orders", "order.*")
            .bind("audit.tmp", "audit", "")
            .bind("payments.new", "billing", "paid", {{"x-match", "all"}});
    CHECK(read == built);
    // The retry half is there: the rungs of the policy's broker waits.
    CHECK(read.find_queue(rung_queue("orders.new", seconds(40))) != nullptr);
    CHECK(read.find_queue(rung_queue("orders.new", seconds(60))) != nullptr);
    CHECK(read.find_exchange(retry_exchange) != nullptr);
}

TEST_CASE("a printed topology file reads back as the same topology") {
    const Topology read = parse_topology_file(every_field);
    const std::string printed = print_topology_file(read);
    INFO(printed);
    const Topology again = parse_topology_file(printed, "printed");
    CHECK(again == read);
    CHECK(print_topology_file(again) == printed);
    // An empty topology is a file too.
    CHECK(parse_topology_file(print_topology_file(Topology{})) == Topology{});
}

TEST_CASE("a printed topology file spells every declaration out, one a line") {
    const Topology topology = Topology{}
                                  .exchange("orders", ExchangeKind::topic)
                                  .queue("orders.new", {.dead_letter = true})
                                  .bind("orders.new", "orders", "order.*");
    CHECK(print_topology_file(topology) ==
          R"j({
  "exchanges": [
    {"name": "orders", "type": "topic"},
    {"name": "acemq.dlx", "type": "direct"}
  ],
  "queues": [
    {"name": "orders.new", "type": "quorum", "arguments": {"x-dead-letter-exchange": "acemq.dlx", "x-dead-letter-routing-key": "orders.new.dlq"}},
    {"name": "orders.new.dlq", "type": "classic"},
    {"name": "orders.new.parked", "type": "classic"}
  ],
  "bindings": [
    {"queue": "orders.new.dlq", "exchange": "acemq.dlx", "routingKey": "orders.new.dlq"},
    {"queue": "orders.new.parked", "exchange": "acemq.dlx", "routingKey": "orders.new.parked"},
    {"queue": "orders.new", "exchange": "orders", "routingKey": "order.*"}
  ]
}
)j");
}

TEST_CASE("a topology file that is wrong says where and what") {
    const std::vector<std::pair<std::string_view, std::string>> wrong{
        {R"j({"queues": [)j", "the file: the body is not valid JSON"},
        {R"j([])j", "the file: expected an object, found an array"},
        {R"j({"queue": []})j", "the file: unknown field \"queue\"; the fields here are exchanges, queues, bindings"},
        {R"j({"queues": [], "queues": []})j", "the file: field \"queues\" is given twice"},
        {R"j({"exchanges": {}})j", "exchanges: expected an array, found an object"},
        {R"j({"queues": ["orders.new"]})j", "queues[0]: expected an object, found the text \"orders.new\""},
        {R"j({"queues": [{"durable": true}]})j", "queues[0]: field \"name\" is missing"},
        {R"j({"queues": [{"name": 5}]})j", "queues[0].name: expected text, found the number 5"},
        {R"j({"queues": [{"name": "orders.new", "durable": "yes"}]})j",
         "queues[0] (\"orders.new\").durable: expected true or false, found the text \"yes\""},
        {R"j({"queues": [{"name": "orders.new", "dead_letter": true}]})j",
         "queues[0] (\"orders.new\"): unknown field \"dead_letter\"; the fields here are name, type, durable"},
        {R"j({"queues": [{"name": "orders.new", "type": "lazy"}]})j",
         "queues[0] (\"orders.new\").type: \"lazy\" is not one of quorum, classic, stream"},
        {R"j({"queues": [{"name": "orders.new", "retry": "fixed(4)"}]})j",
         "queues[0] (\"orders.new\").retry: retry policy \"fixed(4)\": fixed takes 2 arguments, got 1"},
        {R"j({"queues": [{"name": "orders.new", "retry": 4}]})j",
         "queues[0] (\"orders.new\").retry: expected text, found the number 4"},
        {R"j({"queues": [{"name": "orders.new", "arguments": [1]}]})j",
         "queues[0] (\"orders.new\").arguments: expected an object, found an array"},
        {R"j({"queues": [{"name": "orders.new", "arguments": {"x-max-length": 1, "x-max-length": 2}}]})j",
         "queues[0] (\"orders.new\").arguments: argument \"x-max-length\" is given twice"},
        {R"j({"queues": [{"name": "orders.new", "type": "quorum", "exclusive": true}]})j",
         "queues[0] (\"orders.new\"): queue \"orders.new\" asks to be quorum and also exclusive"},
        {R"j({"queues": [{"name": "orders.new", "deadLetter": true, "arguments": {"x-dead-letter-exchange": "x"}}]})j",
         "queues[0] (\"orders.new\"): queue \"orders.new\" asks for dead_letter and also sets x-dead-letter-exchange"},
        {R"j({"queues": [{"name": "orders.new"}, {"name": "orders.new", "type": "classic"}]})j",
         "queues[1] (\"orders.new\"): queue \"orders.new\" is declared twice in one topology"},
        {R"j({"queues": [{"name": "amq.orders"}]})j",
         "queues[0] (\"amq.orders\"): queue name \"amq.orders\" starts with"},
        {R"j({"exchanges": [{"name": "orders"}]})j", "exchanges[0] (\"orders\"): field \"type\" is missing"},
        {R"j({"exchanges": [{"name": "orders", "type": "x-delayed"}]})j",
         "exchanges[0] (\"orders\").type: \"x-delayed\" is not one of direct, topic, fanout, headers"},
        {R"j({"exchanges": [{"name": "orders", "type": "topic", "internal": true}]})j",
         "exchanges[0] (\"orders\"): unknown field \"internal\""},
        {R"j({"queues": [{"name": "orders.new"}], "bindings": [{"queue": "orders.new", "exchange": "orders"}]})j",
         "bindings[0] (\"orders.new\"): queue \"orders.new\" is bound to exchange \"orders\", which this topology "
         "does not declare"},
        {R"j({"exchanges": [{"name": "orders", "type": "topic"}], "bindings": [{"queue": "orders.new", "exchange": "orders"}]})j",
         "bindings[0] (\"orders.new\"): a binding names queue \"orders.new\", which this topology does not declare"},
        {R"j({"queues": [{"name": "orders.new"}], "bindings": [{"queue": "orders.new", "exchange": ""}]})j",
         "bindings[0] (\"orders.new\"): queue \"orders.new\" cannot be bound to the default exchange"},
        {R"j({"bindings": [{"exchange": "orders"}]})j", "bindings[0]: field \"queue\" is missing"},
        {R"j({"existingQueues": [7]})j", "existingQueues[0]: expected a name, found the number 7"},
        {R"j({"existingQueues": [""]})j", "existingQueues[0]: queue name is empty"},
    };
    for (const auto& [file, where_and_why] : wrong) check_refused(file, where_and_why);
}

TEST_CASE("a topology file that cannot be read or printed says so") {
    CHECK_THAT(testing_support::what_of<TopologyError>([] { read_topology_file("/nonexistent/topology.json"); }),
               Catch::Contains("cannot read topology file /nonexistent/topology.json"));
    const Topology with_bytes = Topology{}.queue("orders.new", {.arguments = {{"x-blob", Bytes{std::byte{1}}}}});
    CHECK_THAT(testing_support::what_of<InvalidArgument>([&] { print_topology_file(with_bytes); }),
               Catch::Contains("argument \"x-blob\" holds bytes, which a topology file cannot hold"));
}
