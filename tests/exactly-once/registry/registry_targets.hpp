// The schema registries the registry tests run on, each made fresh per test:
//   MemoryTarget    an InMemorySchemaRegistry;
//   SqliteTarget    a SqlSchemaRegistry on a SQLite file database in a temporary directory
//                   (every connection is its own handle on that file, as separate processes
//                   are), removed afterwards;
//   PostgresTarget  a SqlSchemaRegistry on the server named by ACEMQ_TEST_POSTGRES_URL, with
//                   a table name unique to the test, dropped afterwards (without the variable
//                   the test fails: it is never skipped).
// A SQL target's registry() is a new registry on the same tables each time it is asked:
// what one registered, a later one (another process, after a restart) finds.
#pragma once

#include <catch2/catch.hpp>
#include "../../support/databases.hpp"
#include "../../support/temp_dir.hpp"

#include <acemq/schema.hpp>
#include <acemq/stores/memory_schema_registry.hpp>
#include <acemq/stores/postgres.hpp>
#include <acemq/stores/sql_schema_registry.hpp>
#include <acemq/stores/sqlite.hpp>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace registry_targets {

// Two versions of one Avro schema, as a publisher would register them.
inline const std::string order_v1 =
    R"({"type":"record","name":"OrderPlaced","fields":[{"name":"id","type":"string"}]})";
inline const std::string order_v2 =
    R"({"type":"record","name":"OrderPlaced","fields":[{"name":"id","type":"string"},{"name":"total","type":"long"}]})";

class MemoryTarget {
public:
    acemq::SchemaRegistry& registry() { return registry_; }

private:
    acemq::InMemorySchemaRegistry registry_;
};

// Makes the registry table `table`, its indexes and its counter, and nothing else.
inline void create_registry_tables(acemq::sql::Database& database, const std::string& table) {
    acemq::create_schema(database, {.idempotency = std::nullopt, .outbox = std::nullopt, .registry = table});
}

// What the SQL targets share: a new registry on their tables whenever one is asked for.
class SqlTarget {
public:
    acemq::SqlSchemaRegistry& registry() {
        registries_.push_back(
            std::make_unique<acemq::SqlSchemaRegistry>(database(), acemq::SqlSchemaRegistryOptions{.table = table()}));
        return *registries_.back();
    }
    virtual acemq::sql::Database& database() = 0;
    virtual const std::string& table() const = 0;
    // Makes every insert into the registry table fail, as a trigger of a real schema could.
    void refuse_inserts() { testing_support::refuse_inserts(database(), table(), "no schemas today"); }

protected:
    SqlTarget() = default;
    ~SqlTarget() = default;

private:
    std::vector<std::unique_ptr<acemq::SqlSchemaRegistry>> registries_;
};

class SqliteTarget final : public SqlTarget {
public:
    SqliteTarget() { create_registry_tables(database_, table_); }
    acemq::sql::Database& database() override { return database_; }
    const std::string& table() const override { return table_; }
    // What a worker process is told to open.
    std::string location() const { return file_; }
    static constexpr const char* driver = "sqlite";

private:
    testing_support::TempDir directory_{"registry"};
    std::string file_ = (directory_.path() / "registry.db").string();
    acemq::sqlite::Database database_{file_};
    std::string table_ = "acemq_schema_registry";
};

class PostgresTarget final : public SqlTarget {
public:
    PostgresTarget() { create_registry_tables(database_, table_); }
    ~PostgresTarget() {
        try {
            auto connection = database_.connect();
            connection->execute("DROP TABLE IF EXISTS " + table_);
            connection->execute("DROP TABLE IF EXISTS " + table_ + "_seq");
            connection->execute("DROP FUNCTION IF EXISTS " + table_ + "_refuse()");
        } catch (const std::exception& error) {
            // A destructor cannot fail the test; the table's name is unique, so say so and go on.
            std::cerr << "could not drop the test tables " << table_ << ": " << error.what() << '\n';
        }
    }
    acemq::sql::Database& database() override { return database_; }
    const std::string& table() const override { return table_; }
    std::string location() const { return url_; }
    static constexpr const char* driver = "postgres";

private:
    std::string url_ = testing_support::postgres_url();
    acemq::postgres::Database database_{url_};
    std::string table_ = "acemq_reg_" + testing_support::unique_suffix();
};

}  // namespace registry_targets
