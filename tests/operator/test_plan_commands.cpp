// `acemq topology|outbox|schema-ddl|health|metrics`, the real program: a topology file planned
// and applied on each kind of broker (a durable inproc file, an acemq-broker process,
// RabbitMQ), the SQL outbox on SQLite and PostgreSQL, the stores' DDL run on fresh databases,
// and health and metrics from a telemetry endpoint and from the broker directly.
#include "scenario.hpp"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <acemq/schema.hpp>
#include <acemq/stores/postgres.hpp>
#include <acemq/stores/sql_claim_check_store.hpp>
#include <acemq/stores/sql_outbox_store.hpp>
#include <acemq/stores/sqlite.hpp>
#include <acemq/telemetry_server.hpp>
#include <acemq/topology_file.hpp>

#include "../support/databases.hpp"
#include "../support/rabbitmq.hpp"
#include "../support/temp_dir.hpp"
#include "../zmq/broker_process.hpp"

using operator_test::document;
using operator_test::Run;
using operator_test::run_acemq;
using operator_test::run_on;
using operator_test::Target;
using operator_test::told;

namespace {

std::string written(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path) << text;
    return path.string();
}

// A deploy's topology, its names under `prefix` so that runs on one RabbitMQ do not meet;
// `audit_length` is the one argument the drifted version changes.
std::string deploy_file(const std::string& prefix, int audit_length) {
    std::string text = R"file({
  "exchanges": [{"name": "P:orders", "type": "topic"}],
  "queues": [
    {"name": "P:orders.new", "deadLetter": true, "retry": "fixed(3, 30s)"},
    {"name": "P:audit", "type": "classic", "arguments": {"x-max-length": LENGTH}}
  ],
  "bindings": [
    {"queue": "P:orders.new", "exchange": "P:orders", "routingKey": "order.*"},
    {"queue": "P:audit", "exchange": "P:orders", "routingKey": "#"}
  ]
})file";
    for (std::size_t at; (at = text.find("P:")) != std::string::npos;) text.replace(at, 2, prefix);
    text.replace(text.find("LENGTH"), 6, std::to_string(audit_length));
    return text;
}

// The plan a CI job runs: diff says what apply would create and exits 1; apply creates it;
// diff then exits 0; a queue declared with another argument is drift (exit 1), which apply
// refuses before declaring anything. `isolated`: nothing else uses the broker, so its own
// print, read back, matches it.
void plan_round(const Target& target, const std::filesystem::path& dir, bool isolated) {
    const std::string prefix = "plan-" + testing_support::unique_suffix() + ".";
    const std::string file = written(dir / "topology.json", deploy_file(prefix, 100));

    const Run before = run_on(target, {"topology", "diff", file});
    INFO(told(before));
    CHECK(before.status == 1);
    CHECK(before.out.find("+ exchange " + prefix + "orders (topic, durable)") != std::string::npos);
    CHECK(before.out.find("+ queue " + prefix + "orders.new (quorum, durable, x-dead-letter-exchange=acemq.dlx") !=
          std::string::npos);
    CHECK(before.out.find("+ queue " + prefix + "orders.new.retry.30s") != std::string::npos);
    CHECK(before.out.find("+ binding " + prefix + "audit from " + prefix + "orders on #") != std::string::npos);
    CHECK(before.err.find("does not match") != std::string::npos);
    const Run before_json = run_on(target, {"--json", "topology", "diff", file});
    CHECK(before_json.status == 1);
    const acemq::Value plan = acemq::JsonCodec().decode(
        std::as_bytes(std::span(before_json.out.data(), before_json.out.size())), "application/json");
    CHECK_FALSE(plan.find("matches")->as_bool());
    CHECK(plan.find("create")->as_uint64() >= 8);  // 1-2 exchanges, 5 queues, 5 bindings, less what a broker shares

    const Run apply = run_on(target, {"topology", "apply", file});
    INFO(told(apply));
    REQUIRE(apply.status == 0);
    CHECK(apply.out.find("created") != std::string::npos);

    const Run after = run_on(target, {"topology", "diff", file});
    INFO(told(after));
    CHECK(after.status == 0);
    CHECK(after.out.find("nothing to change") != std::string::npos);
    CHECK(run_on(target, {"topology", "apply", file}).status == 0);  // again: nothing to create, nothing changes

    const std::string drifted = written(dir / "drifted.json", deploy_file(prefix, 200));
    const Run drift = run_on(target, {"topology", "diff", drifted});
    INFO(told(drift));
    CHECK(drift.status == 1);
    CHECK(drift.out.find("~ queue " + prefix + "audit\n      x-max-length: broker 100, file 200") != std::string::npos);
    const Run refused = run_on(target, {"topology", "apply", drifted});
    CHECK(refused.status == 1);
    CHECK(refused.err.find("nothing applied") != std::string::npos);
    CHECK(run_on(target, {"topology", "diff", file}).status == 0);  // the refused apply changed nothing

    // A queue the file expects its owner to have declared, and nobody has: missing.
    const std::string expecting =
        written(dir / "expecting.json", "{\"existingQueues\": [\"" + prefix + "owned\"], \"existingExchanges\": [\"" +
                                            prefix + "orders\"], \"bindings\": [{\"queue\": \"" + prefix +
                                            "owned\", \"exchange\": \"" + prefix + "orders\"}]}");
    const Run missing = run_on(target, {"topology", "diff", expecting});
    INFO(told(missing));
    CHECK(missing.status == 1);
    CHECK(missing.out.find("! queue " + prefix + "owned (expected, declared by its owner)") != std::string::npos);
    CHECK(missing.out.find("! exchange") == std::string::npos);  // the exchange is there
    CHECK(run_on(target, {"topology", "apply", expecting}).status == 1);

    // print: the broker's declarations as a file, which holds the deploy's and reads back.
    const Run print = run_on(target, {"topology", "print"});
    INFO(told(print));
    REQUIRE(print.status == 0);
    const acemq::Topology printed = acemq::parse_topology_file(print.out, "printed");
    const acemq::QueueDeclaration* audit = printed.find_queue(prefix + "audit");
    REQUIRE(audit != nullptr);
    CHECK(audit->arguments.at("x-max-length").as_integer() == 100);
    CHECK(printed.find_queue(prefix + "orders.new.dlq") != nullptr);
    if (isolated) {
        const std::string printed_file = written(dir / "printed.json", print.out);
        const Run same = run_on(target, {"topology", "diff", printed_file});
        INFO(told(same));
        CHECK(same.status == 0);
    }
    // print --from: the file with every declaration spelled out, the same topology.
    const Run from = run_acemq({"topology", "print", "--from", file});
    REQUIRE(from.status == 0);
    CHECK(acemq::parse_topology_file(from.out) == acemq::read_topology_file(file));
    CHECK(run_on(target, {"topology", "diff", (dir / "absent.json").string()}).status == 5);
}

void add_record(acemq::sql::Database& database, acemq::SqlOutboxStore& store, const std::string& id) {
    acemq::OutboxRecord record;
    record.id = id;
    record.routing_key = "orders.new";
    record.body = acemq::Bytes{std::byte{'{'}, std::byte{'}'}};
    record.content_type = "application/json";
    record.created_at = acemq::epoch_millis_now() - std::chrono::seconds(30);
    const auto connection = database.connect();
    connection->begin();
    store.add(record, *connection);
    connection->commit();
}

// Three records: one fine, one failed once, one retired (failed max_attempts times).
// status counts them, retired lists the retired one, release puts it back.
void outbox_round(acemq::sql::Database& database, const std::string& db, const std::string& table) {
    acemq::SqlOutboxStore store(database, {.table = table, .max_attempts = 3});
    add_record(database, store, "fine");
    add_record(database, store, "failing");
    add_record(database, store, "poison");
    store.record_failure("failing", "timeout");
    for (int i = 0; i < 3; ++i) store.record_failure("poison", "no route to orders.new");
    const std::vector<std::string> options{"--db", db, "--table", table, "--max-attempts", "3"};
    auto outbox = [&](std::vector<std::string> arguments) {
        std::vector<std::string> all{"--json", "outbox"};
        all.insert(all.end(), arguments.begin(), arguments.end());
        all.insert(all.end(), options.begin(), options.end());
        return run_acemq(all);
    };

    const acemq::Value status = document(outbox({"status"}));
    CHECK(status.find("pending")->as_uint64() == 2);
    CHECK(status.find("failing")->as_uint64() == 1);
    CHECK(status.find("retired")->as_uint64() == 1);
    CHECK(status.find("oldestPendingAgeMs")->as_int64() >= 30'000);

    const acemq::Value retired = document(outbox({"retired"}));
    REQUIRE(retired.as_array().size() == 1);
    CHECK(retired.as_array()[0].find("id")->as_string() == "poison");
    CHECK(retired.as_array()[0].find("attempts")->as_int64() == 3);
    CHECK(retired.as_array()[0].find("lastError")->as_string() == "no route to orders.new");

    const Run release = outbox({"release", "poison"});
    INFO(told(release));
    CHECK(release.status == 0);
    const acemq::Value released = document(outbox({"status"}));
    CHECK(released.find("pending")->as_uint64() == 3);
    CHECK(released.find("retired")->as_uint64() == 0);
    CHECK(store.pending(0).size() == 3);  // the relay sends it again
    const Run again = outbox({"release", "poison"});
    CHECK(again.status == 5);
    CHECK(again.err.find("no retired record \"poison\"") != std::string::npos);
    const Run no_table = run_acemq({"outbox", "status", "--db", db, "--table", table + "_absent"});
    CHECK(no_table.status == 5);
    CHECK(no_table.err.find("schema-ddl") != std::string::npos);
}

// The statements `acemq schema-ddl` prints, one at a time.
std::vector<std::string> ddl_statements(const std::vector<std::string>& arguments) {
    std::vector<std::string> all{"schema-ddl"};
    all.insert(all.end(), arguments.begin(), arguments.end());
    const Run ddl = run_acemq(all);
    INFO(told(ddl));
    REQUIRE(ddl.status == 0);
    std::vector<std::string> statements;
    std::size_t start = 0;
    for (std::size_t end; (end = ddl.out.find(";\n", start)) != std::string::npos; start = end + 2) {
        start = ddl.out.find_first_not_of('\n', start);  // the blank line between two statements
        statements.push_back(ddl.out.substr(start, end - start));
    }
    CHECK(ddl.out.substr(start).find_first_not_of(" \n") == std::string::npos);
    return statements;
}

acemq::TelemetryServerOptions loopback_telemetry(std::vector<acemq::HealthCheck> checks = {}) {
    return {.port = 0, .checks = std::move(checks)};
}

}  // namespace

TEST_CASE("topology diff, apply and print on a durable inproc data file", "[operator]") {
    testing_support::TempDir dir("operator-plan-inproc");
    plan_round({"inproc://operator-plan?data=" + (dir.path() / "broker.db").string()}, dir.path(), true);
}

TEST_CASE("topology diff, apply and print on an acemq-broker", "[operator]") {
    testing_support::TempDir dir("operator-plan-zmq");
    zmq_test::BrokerProcess broker(ACEMQ_BROKER_PROGRAM, {"--listen", "tcp://127.0.0.1:0"});
    plan_round({broker.url()}, dir.path(), true);
}

TEST_CASE("topology diff, apply and print on RabbitMQ", "[operator]") {
    testing_support::TempDir dir("operator-plan-amqp");
    plan_round({testing_support::amqp_url(), {"--management-url", testing_support::amqp_http_url()}}, dir.path(),
               false);
}

TEST_CASE("outbox status, retired and release on a SQLite file", "[operator]") {
    testing_support::TempDir dir("operator-outbox");
    const std::string path = (dir.path() / "app.db").string();
    acemq::sqlite::Database database(path);
    acemq::create_schema(database);
    outbox_round(database, "sqlite:" + path, "acemq_outbox");
    const Run missing = run_acemq({"outbox", "status", "--db", (dir.path() / "typo.db").string()});
    CHECK(missing.status == 5);
    CHECK_FALSE(std::filesystem::exists(dir.path() / "typo.db"));  // a typo creates no database
}

TEST_CASE("outbox status, retired and release on PostgreSQL", "[operator]") {
    const std::string url = testing_support::postgres_url();
    const std::string table = "outbox_" + testing_support::unique_suffix();
    acemq::postgres::Database database(url);
    acemq::create_schema(database, {.idempotency = std::nullopt, .outbox = table, .registry = std::nullopt});
    outbox_round(database, url, table);
    database.connect()->execute("DROP TABLE " + table);
}

TEST_CASE("schema-ddl runs cleanly on a fresh SQLite database and on PostgreSQL", "[operator]") {
    testing_support::TempDir dir("operator-ddl");
    {
        const std::vector<std::string> statements = ddl_statements({"--dialect", "sqlite"});
        CHECK(statements == acemq::schema_ddl(acemq::sql::Dialect::sqlite));
        acemq::sqlite::Database fresh((dir.path() / "fresh.db").string());
        const auto connection = fresh.connect();
        for (const std::string& statement : statements) connection->execute(statement);
        CHECK(connection->query("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").at(0).at(0).as_integer() ==
              4);
        acemq::SqlOutboxStore store(fresh);  // the outbox store works on what was created
        CHECK(store.count() == 0);
    }
    {
        const std::string suffix = testing_support::unique_suffix();
        const acemq::SchemaNames names{"idem_" + suffix, "outbox_" + suffix, "registry_" + suffix, "claims_" + suffix};
        const std::vector<std::string> statements =
            ddl_statements({"--dialect", "postgres", "--idempotency-table", *names.idempotency, "--outbox-table",
                            *names.outbox, "--registry-table", *names.registry, "--claims-table", *names.claims});
        CHECK(statements == acemq::schema_ddl(acemq::sql::Dialect::postgres, names));
        acemq::postgres::Database server(testing_support::postgres_url());
        const auto connection = server.connect();
        for (const std::string& statement : statements) connection->execute(statement);
        acemq::SqlOutboxStore store(server, {.table = *names.outbox});
        CHECK(store.count() == 0);
        acemq::SqlClaimCheckStore claims(server, {.table = *names.claims});  // and the claims store on its table
        const std::vector<std::byte> payload{std::byte{1}, std::byte{2}};
        const std::string key = claims.put(payload);
        CHECK(claims.get(key) == payload);
        for (const std::string& table :
             {*names.idempotency, *names.outbox, *names.registry, *names.registry + "_seq", *names.claims})
            connection->execute("DROP TABLE " + table);
    }
    CHECK(run_acemq({"schema-ddl", "--dialect", "mysql"}).status == 2);
}

TEST_CASE("health and metrics from a telemetry endpoint and from the broker", "[operator]") {
    zmq_test::BrokerProcess broker(ACEMQ_BROKER_PROGRAM, {"--listen", "tcp://127.0.0.1:0"});
    acemq::Bus bus = acemq::connect(broker.url());
    bus.declare(acemq::Topology{}.queue("operator-health", {.type = acemq::QueueType::classic}));
    bus.publisher_to_queue("operator-health").send(std::string("one"));

    // The broker asked directly: up.
    const Run up = run_acemq({"--url", broker.url(), "health"});
    INFO(told(up));
    CHECK(up.status == 0);
    CHECK(up.out.starts_with("up at "));
    const Run metrics = run_acemq({"--url", broker.url(), "metrics"});
    INFO(told(metrics));
    CHECK(metrics.status == 0);
    CHECK(metrics.out.find("queue=\"operator-health\"") != std::string::npos);

    // A Bus's telemetry endpoint: up, then down once a check says so.
    auto registry = std::make_shared<acemq::InMemoryMetrics>();
    std::atomic<bool> failing = false;  // read on the server's threads
    acemq::TelemetryServer server(
        bus, registry, loopback_telemetry({{"db", [&failing](std::chrono::milliseconds) {
                                                return acemq::Health{.status = failing ? acemq::Health::Status::down
                                                                                       : acemq::Health::Status::up,
                                                                     .detail = failing ? "the database is gone" : ""};
                                            }}}));
    const Run endpoint_up = run_acemq({"health", "--endpoint", server.url()});
    INFO(told(endpoint_up));
    CHECK(endpoint_up.status == 0);
    failing = true;
    const Run endpoint_down = run_acemq({"health", "--endpoint", server.url()});
    INFO(told(endpoint_down));
    CHECK(endpoint_down.status == 1);
    CHECK(endpoint_down.err.find("the database is gone") != std::string::npos);
    CHECK(run_acemq({"metrics", "--endpoint", server.url()}).status == 0);
    server.stop();
    bus.close();

    // An endpoint nobody serves cannot be asked (3); a broker that does not answer is down (1).
    CHECK(run_acemq({"health", "--endpoint", server.url()}).status == 3);
    const std::string url = broker.url();
    broker.stop(SIGTERM);
    const Run down = run_acemq({"--url", url, "--timeout", "2s", "health"});
    INFO(told(down));
    CHECK(down.status == 1);
    CHECK(down.out.starts_with("down at " + url));
}
