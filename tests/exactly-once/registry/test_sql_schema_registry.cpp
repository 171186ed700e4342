// SqlSchemaRegistry (docs/schema-registry.md §2, §3) on SQLite and PostgreSQL: what one registry
// registered another finds; threads and processes registering one schema at once get one
// id; a failing database is thrown after the family's 5 attempts, never read as "not found".
#include "registry_targets.hpp"

#include <catch2/catch.hpp>
#include "../../support/gate.hpp"
#include "../../support/thrown.hpp"

#include <acemq/schema_registry.hpp>
#include <acemq/stores/sql_schema_registry.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using acemq::SchemaDefinition;
using acemq::SchemaNotFoundError;
using acemq::SqlSchemaRegistry;
using registry_targets::order_v1;
using registry_targets::PostgresTarget;
using registry_targets::SqliteTarget;

namespace {

// A database whose connections count the transactions begun on them: how many attempts a
// registration made.
class CountingDatabase final : public acemq::sql::Database {
public:
    explicit CountingDatabase(acemq::sql::Database& inner) : inner_(inner) {}
    acemq::sql::Dialect dialect() const noexcept override { return inner_.dialect(); }
    std::unique_ptr<acemq::sql::Connection> connect() override {
        return std::make_unique<Counting>(inner_.connect(), begun_);
    }
    int begun() const { return begun_; }

private:
    class Counting final : public acemq::sql::Connection {
    public:
        Counting(std::unique_ptr<acemq::sql::Connection> inner, std::atomic<int>& begun)
            : inner_(std::move(inner)), begun_(begun) {}
        acemq::sql::Dialect dialect() const noexcept override { return inner_->dialect(); }
        std::int64_t execute(std::string_view statement, std::span<const acemq::sql::Value> parameters) override {
            return inner_->execute(statement, parameters);
        }
        std::vector<acemq::sql::Row> query(std::string_view statement,
                                           std::span<const acemq::sql::Value> parameters) override {
            return inner_->query(statement, parameters);
        }
        void begin() override {
            ++begun_;
            inner_->begin();
        }
        void commit() override { inner_->commit(); }
        void rollback() override { inner_->rollback(); }
        bool in_transaction() const noexcept override { return inner_->in_transaction(); }

    private:
        std::unique_ptr<acemq::sql::Connection> inner_;
        std::atomic<int>& begun_;
    };

    acemq::sql::Database& inner_;
    std::atomic<int> begun_{0};
};

// A registry_worker process, started with its stdin and stdout (stderr too) on pipes.
struct Worker {
    pid_t pid = -1;
    int input = -1;
    int output = -1;
    std::string printed;
    int status = -1;
};

Worker start_worker(const std::vector<std::string>& arguments) {
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) FAIL("pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) FAIL("fork failed");
    if (pid == 0) {
        ::dup2(in[0], 0);
        ::dup2(out[1], 1);
        ::dup2(out[1], 2);
        for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
        std::vector<std::string> all{ACEMQ_REGISTRY_WORKER};
        all.insert(all.end(), arguments.begin(), arguments.end());
        std::vector<char*> argv;
        for (std::string& argument : all) argv.push_back(argument.data());
        argv.push_back(nullptr);
        ::execv(ACEMQ_REGISTRY_WORKER, argv.data());
        ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    return Worker{.pid = pid, .input = in[1], .output = out[0], .printed = {}, .status = -1};
}

// Reads what `worker` prints until it closes its output, then reaps it; kills it and fails
// the test when that takes past `deadline`.
void finish(Worker& worker, std::chrono::steady_clock::time_point deadline) {
    pollfd fd{worker.output, POLLIN, 0};
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
            ::kill(worker.pid, SIGKILL);
            ::waitpid(worker.pid, nullptr, 0);
            ::close(worker.output);
            FAIL("registry_worker did not end within 60 s; it printed: " << worker.printed);
        }
        if (::poll(&fd, 1, static_cast<int>(left)) <= 0) continue;
        char buffer[4096];
        const ssize_t got = ::read(worker.output, buffer, sizeof buffer);
        if (got <= 0) break;
        worker.printed.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(worker.output);
    int status = 0;
    ::waitpid(worker.pid, &status, 0);
    worker.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEMPLATE_TEST_CASE("a new registry on the same tables finds what an earlier one registered; ids go on",
                   "[registry][sql]", SqliteTarget, PostgresTarget) {
    TestType target;
    const SchemaDefinition first = target.registry().register_schema("orders.OrderPlaced", "avro", order_v1);
    acemq::SchemaRegistry& restarted = target.registry();
    CHECK(restarted.by_id(first.id) == first);  // registered_at included: it is stored, not made up
    CHECK(restarted.latest("orders.OrderPlaced") == first);
    CHECK(restarted.register_schema("orders.OrderPlaced", "avro", order_v1) == first);
    CHECK(acemq::to_string(restarted.register_schema("orders.OrderShipped", "json", "{}")) ==
          "orders.OrderShipped v1 (json, id 2)");
}

TEMPLATE_TEST_CASE("4 threads registering one schema at once get one id; 4 definitions of a subject get 4 versions",
                   "[registry][sql][threads]", SqliteTarget, PostgresTarget) {
    TestType target;
    constexpr int racers = 4;
    constexpr int rounds = 5;
    std::vector<SqlSchemaRegistry*> registries;
    for (int i = 0; i < racers; ++i) registries.push_back(&target.registry());
    std::vector<std::vector<SchemaDefinition>> same(racers), different(racers);
    std::atomic<int> failures{0};
    testing_support::Gate start;
    std::vector<std::thread> threads;
    for (int i = 0; i < racers; ++i)
        threads.emplace_back([&, i] {
            start.pass();
            try {
                for (int round = 0; round < rounds; ++round) {
                    const std::string subject = "race." + std::to_string(round);
                    same[i].push_back(registries[i]->register_schema(subject, "avro", order_v1));
                    different[i].push_back(registries[i]->register_schema("mixed." + std::to_string(round), "avro",
                                                                          R"({"racer":)" + std::to_string(i) + "}"));
                    // One registry's by_id cache, read and filled from every thread.
                    if (!(registries[0]->by_id(different[i].back().id) == different[i].back())) ++failures;
                }
            } catch (const std::exception& error) {
                ++failures;  // counted and reported below: a race must not error either
                UNSCOPED_INFO("register_schema failed: " << error.what());
            }
        });
    REQUIRE(start.wait_waiting(racers));
    start.open();
    for (std::thread& thread : threads) thread.join();
    REQUIRE(failures == 0);

    std::set<std::int64_t> ids;
    for (int round = 0; round < rounds; ++round) {
        for (int i = 1; i < racers; ++i) CHECK(same[i][round] == same[0][round]);
        CHECK(same[0][round].version == 1);
        CHECK(registries[0]->versions("race." + std::to_string(round)).size() == 1);
        ids.insert(same[0][round].id);
        std::set<std::int32_t> versions;
        for (int i = 0; i < racers; ++i) {
            versions.insert(different[i][round].version);
            ids.insert(different[i][round].id);
        }
        CHECK(versions == std::set<std::int32_t>{1, 2, 3, 4});
    }
    // No id was given twice, and none was skipped: a lost race spends none.
    CHECK(ids.size() == rounds * (1 + racers));
    CHECK(*ids.begin() == 1);
    CHECK(*ids.rbegin() == rounds * (1 + racers));
}

TEMPLATE_TEST_CASE("4 processes registering the same schemas at once get one id each", "[registry][sql]", SqliteTarget,
                   PostgresTarget) {
    TestType target;
    constexpr int processes = 4;
    constexpr int schemas = 10;
    std::vector<Worker> workers;
    for (int i = 0; i < processes; ++i)
        workers.push_back(start_worker({TestType::driver, target.location(), target.table(), std::to_string(schemas)}));
    // Every worker is running (and connected) before any is told to go.
    for (Worker& worker : workers) {
        const bool told = ::write(worker.input, "go\n", 3) == 3;
        ::close(worker.input);
        CHECK(told);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (Worker& worker : workers) finish(worker, deadline);
    for (const Worker& worker : workers) {
        INFO("a worker printed:\n" << worker.printed);
        CHECK(worker.status == 0);
        CHECK(worker.printed == workers.front().printed);
    }
    std::set<std::string> lines;
    std::istringstream printed(workers.front().printed);
    for (std::string line; std::getline(printed, line);) {
        CHECK(line.ends_with(" v1"));
        lines.insert(line);
    }
    CHECK(lines.size() == schemas);
    acemq::SchemaRegistry& registry = target.registry();
    for (int i = 1; i <= schemas; ++i) CHECK(registry.versions("race." + std::to_string(i)).size() == 1);
    CHECK_THROWS_AS(registry.by_id(schemas + 1), SchemaNotFoundError);
}

TEMPLATE_TEST_CASE("an insert that always fails is thrown after 5 attempts as the database's error, leaving no version",
                   "[registry][sql]", SqliteTarget, PostgresTarget) {
    TestType target;
    target.refuse_inserts();
    CountingDatabase counting{target.database()};
    SqlSchemaRegistry registry{counting, {.table = target.table()}};
    CHECK_THAT(testing_support::what_of<acemq::sql::DatabaseError>(
                   [&] { registry.register_schema("orders.OrderPlaced", "avro", order_v1); }),
               Catch::Matchers::Contains("no schemas today"));
    CHECK(counting.begun() == SqlSchemaRegistry::attempts);
    CHECK(SqlSchemaRegistry::attempts == 5);
    CHECK(registry.versions("orders.OrderPlaced").empty());
    CHECK_THROWS_AS(registry.latest("orders.OrderPlaced"), SchemaNotFoundError);
}

TEMPLATE_TEST_CASE("a database error is thrown as itself, never as SchemaNotFoundError", "[registry][sql]",
                   SqliteTarget, PostgresTarget) {
    TestType target;
    // Tables that were never made: every statement fails.
    SqlSchemaRegistry registry{target.database(), {.table = target.table() + "_missing"}};
    CHECK_THROWS_AS(registry.by_id(1), acemq::sql::DatabaseError);
    CHECK_THROWS_AS(registry.latest("orders.OrderPlaced"), acemq::sql::DatabaseError);
    CHECK_THROWS_AS(registry.versions("orders.OrderPlaced"), acemq::sql::DatabaseError);
    CHECK_THROWS_AS(registry.register_schema("orders.OrderPlaced", "avro", order_v1), acemq::sql::DatabaseError);
}

TEST_CASE("a table name schema_ddl would refuse is refused by the registry, before any statement", "[registry][sql]") {
    registry_targets::SqliteTarget target;
    CHECK_THROWS_AS((SqlSchemaRegistry{target.database(), {.table = "orders; DROP TABLE users"}}),
                    acemq::InvalidArgument);
    CHECK_THROWS_AS((SqlSchemaRegistry{target.database(), {.table = std::string(60, 'a')}}), acemq::InvalidArgument);
}
