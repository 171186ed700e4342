#include <catch2/catch.hpp>

#include <set>
#include <sstream>

#include <acemq/error.hpp>
#include <acemq/topology.hpp>
#include "../support/fixtures.hpp"

using namespace acemq;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// The operator's half of the fixture topology: an exchange, the source queue with dead
// letters, and its binding.
Topology operator_topology() {
    return Topology{}
        .exchange("orders", ExchangeKind::topic)
        .queue("orders.new", {.dead_letter = true})
        .bind("orders.new", "orders", "order.*");
}

const RetryPolicy fixture_policy = exponential_retry(6, seconds(10), std::chrono::minutes(5));

bool declared_by(const boost::json::value& entry, const std::string& who) {
    const std::string by = fixtures::text(entry.at("declaredBy"));
    return by == who || by == "both";
}

void check_against_fixture(const Topology& topology, const std::string& who) {
    const auto document = fixtures::load("contract-fixtures.json");
    const auto& fixture = document.at("topology");
    std::size_t exchanges = 0, queues = 0, bindings = 0;

    for (const auto& entry : fixture.at("exchanges").as_array()) {
        if (!declared_by(entry, who)) continue;
        ++exchanges;
        const std::string name = fixtures::text(entry.at("name"));
        INFO("exchange " << name);
        const ExchangeDeclaration* exchange = topology.find_exchange(name);
        REQUIRE(exchange != nullptr);
        CHECK(to_string(exchange->kind) == fixtures::text(entry.at("type")));
        CHECK(exchange->durable == entry.at("durable").as_bool());
        CHECK(exchange->arguments.empty());
    }
    for (const auto& entry : fixture.at("queues").as_array()) {
        if (!declared_by(entry, who)) continue;
        ++queues;
        const std::string name = fixtures::text(entry.at("name"));
        INFO("queue " << name);
        const QueueDeclaration* queue = topology.find_queue(name);
        REQUIRE(queue != nullptr);
        const std::string type = fixtures::text(entry.at("type"));
        CHECK(to_string(queue->type) == type);
        CHECK(queue->durable == entry.at("durable").as_bool());
        FieldTable expected = fixtures::table(entry.at("arguments").as_object());
        // Quorum is an argument on the wire; classic is its absence.
        if (type != "classic") expected.emplace("x-queue-type", FieldValue(type));
        CHECK(queue->arguments == expected);
    }
    for (const auto& entry : fixture.at("bindings").as_array()) {
        if (!declared_by(entry, who)) continue;
        ++bindings;
        BindingDeclaration expected{fixtures::text(entry.at("queue")),
                                    fixtures::text(entry.at("exchange")),
                                    fixtures::text(entry.at("routingKey")),
                                    {}};
        INFO("binding " << expected.queue << " from " << expected.exchange);
        CHECK(std::count(topology.bindings().begin(), topology.bindings().end(), expected) == 1);
    }
    // Nothing beyond what the fixture lists.
    CHECK(topology.exchanges().size() == exchanges);
    CHECK(topology.queues().size() == queues);
    CHECK(topology.bindings().size() == bindings);
}

}  // namespace

TEST_CASE("the fixture's policy has the fixture's ladder") {
    const auto document = fixtures::load("contract-fixtures.json");
    const auto& fixture = document.at("topology");
    std::vector<milliseconds> schedule, rungs;
    for (const auto& v : fixture.at("policyScheduleMillis").as_array()) schedule.push_back(fixtures::millis(v));
    for (const auto& v : fixture.at("policyRungDelaysMillis").as_array()) rungs.push_back(fixtures::millis(v));
    CHECK(fixture_policy.schedule() == schedule);
    CHECK(fixture_policy.broker_rungs() == rungs);
}

TEST_CASE("the operator's topology is the fixture's 'topology' and 'both' declarations") {
    check_against_fixture(operator_topology(), "topology");
}

TEST_CASE("a consumer declares the fixture's 'consumer' and 'both' declarations") {
    check_against_fixture(consumer_topology("orders.new", fixture_policy), "consumer");
}

TEST_CASE("the whole declared topology: both halves merged, shared declarations once") {
    Topology whole = operator_topology();
    whole.merge(consumer_topology("orders.new", fixture_policy));
    const auto document = fixtures::load("contract-fixtures.json");
    const auto& fixture = document.at("topology");
    CHECK(whole.exchanges().size() == fixture.at("exchanges").as_array().size());
    CHECK(whole.queues().size() == fixture.at("queues").as_array().size());
    CHECK(whole.bindings().size() == fixture.at("bindings").as_array().size());
    CHECK_NOTHROW(whole.validate());
}

TEST_CASE("a queue with retry= declares the consumer's retry half itself") {
    Topology topology = Topology{}.queue("orders.new", {.dead_letter = true, .retry = fixture_policy});
    CHECK(topology.find_exchange("acemq.retry") != nullptr);
    CHECK(topology.find_queue("orders.new.retry.40s") != nullptr);
    CHECK(topology.find_queue("orders.new.retry.160s") != nullptr);
    CHECK(topology.queues().size() == 6);
}

TEST_CASE("no broker waits, no acemq.retry and no rungs") {
    const Topology topology = consumer_topology("payments", exponential_retry(5, seconds(1), seconds(8)));
    CHECK(topology.find_exchange("acemq.retry") == nullptr);
    CHECK(topology.queues().size() == 2);
    CHECK(topology.bindings().size() == 2);
    CHECK(consumer_topology("payments", no_retry()) == topology);
    // A threshold of zero sends nothing to the broker.
    CHECK(consumer_topology("payments", fixed_retry(3, std::chrono::minutes(5)).wait_in_broker_from(milliseconds(0))) ==
          topology);
}

TEST_CASE("rungs within one second collapse into one rung") {
    const RetryPolicy policy =
        exponential_retry(4, milliseconds(30000), milliseconds(30500)).wait_in_broker_from(seconds(30));
    REQUIRE(policy.broker_rungs().size() == 2);  // 30000 and 30500
    const Topology topology = consumer_topology("q", policy);
    CHECK(topology.find_queue("q.retry.30s") != nullptr);
    CHECK(topology.queues().size() == 3);
    CHECK(topology.find_queue("q.retry.30s")->arguments.at("x-message-ttl").as_integer() == 30000);
}

TEST_CASE("every queue-type default of the contract fixture") {
    const auto document = fixtures::load("contract-fixtures.json");
    const auto& defaults = document.at("queueTypeDefaults");
    Topology topology = Topology{}
                            .queue("source")
                            .queue("source.dl", {.dead_letter = true})
                            .queue("explicit.classic", {.type = QueueType::classic})
                            .queue("explicit.classic.dl", {.dead_letter = true, .type = QueueType::classic});
    topology.merge(consumer_topology("source", fixed_retry(2, seconds(30))));
    auto type_of = [&](const std::string& name) {
        const QueueDeclaration* queue = topology.find_queue(name);
        REQUIRE(queue != nullptr);
        return std::string(to_string(queue->type));
    };
    CHECK(type_of("source") == fixtures::text(defaults.at("sourceQueue")));
    CHECK(type_of("source.dl") == fixtures::text(defaults.at("sourceQueueWithDeadLetter")));
    CHECK(type_of("explicit.classic") == fixtures::text(defaults.at("explicitClassicQueue")));
    CHECK(type_of("explicit.classic.dl") == fixtures::text(defaults.at("explicitClassicQueueWithDeadLetter")));
    CHECK(type_of("source.dlq") == fixtures::text(defaults.at("deadLetterQueue")));
    CHECK(type_of("source.parked") == fixtures::text(defaults.at("parkedQueue")));
    CHECK(type_of("source.retry.30s") == fixtures::text(defaults.at("retryRung")));
    CHECK(defaults.at("durability").at("everyDeclaredQueueIsDurable").as_bool());
    for (const QueueDeclaration& queue : topology.queues()) {
        INFO(queue.name);
        CHECK(queue.durable);
        CHECK(queue.arguments.contains("x-queue-type") == (queue.type != QueueType::classic));
    }
}

TEST_CASE("exclusive, auto-delete and transient queues stay classic; quorum with them is refused") {
    Topology topology =
        Topology{}.queue("a", {.exclusive = true}).queue("b", {.auto_delete = true}).queue("c", {.durable = false});
    for (const QueueDeclaration& queue : topology.queues()) {
        CHECK(queue.type == QueueType::classic);
        CHECK(queue.arguments.empty());
    }
    CHECK_THROWS_WITH(Topology{}.queue("d", {.type = QueueType::quorum, .exclusive = true}),
                      Catch::Contains("\"d\"") && Catch::Contains("only allows those flags on classic queues"));
    CHECK_THROWS_AS(Topology{}.queue("e", {.type = QueueType::quorum, .durable = false}), TopologyError);
    CHECK_NOTHROW(Topology{}.queue("f", {.type = QueueType::classic, .exclusive = true}));
}

TEST_CASE("contradictions and repeats are refused with the reason") {
    CHECK_THROWS_WITH(Topology{}.queue("q").queue("q"), Catch::Contains("\"q\" is declared twice"));
    CHECK_THROWS_WITH(Topology{}.exchange("x", ExchangeKind::topic).exchange("x", ExchangeKind::direct),
                      Catch::Contains("\"x\" is declared twice"));
    CHECK_THROWS_WITH(
        Topology{}.queue("q", {.dead_letter = true, .arguments = {{"x-dead-letter-exchange", FieldValue("mine")}}}),
        Catch::Contains("asks for dead_letter and also sets x-dead-letter-exchange; pick one"));
    CHECK_THROWS_WITH(
        Topology{}.queue("q", {.type = QueueType::quorum, .arguments = {{"x-queue-type", FieldValue("quorum")}}}),
        Catch::Contains("pick one"));
    CHECK_THROWS_AS(Topology{}.queue("q", {.arguments = {{"x-queue-type", FieldValue("lazy")}}}), TopologyError);
    CHECK_THROWS_AS(Topology{}.queue("q").bind("q", "", "q"), TopologyError);
    // Dead letters for two queues share one acemq.dlx.
    Topology two = Topology{}.queue("a", {.dead_letter = true}).queue("b", {.dead_letter = true});
    CHECK(two.exchanges().size() == 1);
    CHECK(two.queues().size() == 6);
}

TEST_CASE("hostile names are refused") {
    CHECK_THROWS_WITH(Topology{}.queue(""), Catch::Contains("queue name is empty"));
    CHECK_THROWS_WITH(Topology{}.queue(std::string(256, 'q')), Catch::Contains("at most 255"));
    CHECK_NOTHROW(Topology{}.queue(std::string(255, 'q')));
    CHECK_THROWS_WITH(Topology{}.exchange("amq.topic", ExchangeKind::topic), Catch::Contains("reserves"));
    CHECK_THROWS_AS(consumer_topology("", no_retry()), InvalidArgument);
}

TEST_CASE("validation: bindings must name what the topology declares") {
    Topology dangling = Topology{}.queue("q").bind("q", "nowhere", "k");
    CHECK_THROWS_WITH(dangling.validate(),
                      Catch::Contains("exchange \"nowhere\"") && Catch::Contains("existing_exchange"));
    CHECK(dangling.to_string().starts_with("Topology{invalid: acemq: queue \"q\" is bound to exchange \"nowhere\""));
    Topology no_queue = Topology{}.exchange("x", ExchangeKind::fanout).bind("ghost", "x", "");
    CHECK_THROWS_WITH(no_queue.validate(), Catch::Contains("queue \"ghost\""));
}

TEST_CASE("queues and exchanges owned elsewhere are named, not declared") {
    Topology topology = Topology{}.queue("mine").existing_exchange("amq.topic").bind("mine", "amq.topic", "a.#");
    CHECK_NOTHROW(topology.validate());
    CHECK(topology.exchanges().empty());
    Topology theirs = Topology{}.existing_queue("theirs").exchange("x", ExchangeKind::direct).bind("theirs", "x", "k");
    CHECK_NOTHROW(theirs.validate());
    CHECK(theirs.queues().empty());
    // The source queue is named, not declared: a consumer never declares it.
    const std::string printed = consumer_topology("orders.new", fixture_policy).to_string();
    CHECK(printed.starts_with("Topology: 2 exchanges, 5 queues, 3 bindings\n"));
    CHECK(
        printed.ends_with("  declare binding orders.new (from acemq.retry on orders.new)\n"
                          "  expect queue orders.new (declared by its owner)\n"));
}

TEST_CASE("streams carry only the retention asked for") {
    Topology topology = Topology{}
                            .stream("events", {.max_age = std::chrono::days(7), .max_length_bytes = 1000000})
                            .stream("audit", {.max_age = std::chrono::minutes(90)})
                            .stream("bare");
    const QueueDeclaration* events = topology.find_queue("events");
    CHECK(events->type == QueueType::stream);
    CHECK(events->arguments == FieldTable{{"x-max-age", FieldValue("7D")},
                                          {"x-max-length-bytes", FieldValue(std::int64_t{1000000})},
                                          {"x-queue-type", FieldValue("stream")}});
    CHECK(topology.find_queue("audit")->arguments.at("x-max-age").as_text() == "90m");
    CHECK(topology.find_queue("bare")->arguments.size() == 1);
}

TEST_CASE("the printed form a person reads before applying it") {
    Topology whole = operator_topology();
    whole.merge(consumer_topology("orders.new", fixture_policy));
    std::ostringstream printed;
    printed << whole;
    CHECK(printed.str() ==
          "Topology: 3 exchanges, 6 queues, 4 bindings\n"
          "  declare exchange orders (topic)\n"
          "  declare exchange acemq.dlx (direct)\n"
          "  declare exchange acemq.retry (direct)\n"
          "  declare queue orders.new (durable, quorum, x-dead-letter-exchange=acemq.dlx, "
          "x-dead-letter-routing-key=orders.new.dlq)\n"
          "  declare queue orders.new.dlq (durable, classic)\n"
          "  declare queue orders.new.parked (durable, classic)\n"
          "  declare queue orders.new.retry.40s (durable, classic, x-dead-letter-exchange=acemq.retry, "
          "x-dead-letter-routing-key=orders.new, x-message-ttl=40000)\n"
          "  declare queue orders.new.retry.80s (durable, classic, x-dead-letter-exchange=acemq.retry, "
          "x-dead-letter-routing-key=orders.new, x-message-ttl=80000)\n"
          "  declare queue orders.new.retry.160s (durable, classic, x-dead-letter-exchange=acemq.retry, "
          "x-dead-letter-routing-key=orders.new, x-message-ttl=160000)\n"
          "  declare binding orders.new.dlq (from acemq.dlx on orders.new.dlq)\n"
          "  declare binding orders.new.parked (from acemq.dlx on orders.new.parked)\n"
          "  declare binding orders.new (from orders on order.*)\n"
          "  declare binding orders.new (from acemq.retry on orders.new)\n");
    Topology odd = Topology{}
                       .exchange("e", ExchangeKind::fanout, {.durable = false, .auto_delete = true})
                       .queue("tmp", {.durable = false, .exclusive = true, .auto_delete = true});
    CHECK(odd.to_string() ==
          "Topology: 1 exchanges, 1 queues, 0 bindings\n"
          "  declare exchange e (fanout, transient, auto-delete)\n"
          "  declare queue tmp (transient, classic, auto-delete, exclusive)\n");
}
