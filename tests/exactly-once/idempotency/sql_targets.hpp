// The two databases the SQL idempotency tests run on, each made fresh per test:
//   SqliteTarget    a file database in a temporary directory, removed afterwards (every
//                   connection is its own handle on that file, as separate processes are);
//   PostgresTarget  the server named by ACEMQ_TEST_POSTGRES_URL (scripts/test starts a
//                   throw-away one), with a table name unique to the test, dropped afterwards.
// Without ACEMQ_TEST_POSTGRES_URL the PostgreSQL tests fail: they are never skipped.
#pragma once

#include <catch2/catch.hpp>
#include "../../support/databases.hpp"

#include <acemq/schema.hpp>
#include <acemq/sql.hpp>
#include <acemq/stores/postgres.hpp>
#include <acemq/stores/sqlite.hpp>
#include <acemq/uuid.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>

namespace sql_targets {

using testing_support::postgres_url;
using testing_support::unique_suffix;

// Makes the idempotency table `table` and nothing else.
inline void create_idempotency_table(acemq::sql::Database& database, const std::string& table) {
    acemq::create_schema(database, {.idempotency = table, .outbox = std::nullopt, .registry = std::nullopt});
}

class SqliteTarget {
public:
    SqliteTarget() : directory_(make_directory()), database_((directory_ / "idempotency.db").string()) {
        create_idempotency_table(database_, table_);
    }
    ~SqliteTarget() {
        std::error_code ignored;  // best effort: a leftover temporary directory must not fail a test
        std::filesystem::remove_all(directory_, ignored);
    }
    SqliteTarget(const SqliteTarget&) = delete;
    SqliteTarget& operator=(const SqliteTarget&) = delete;

    acemq::sql::Database& database() { return database_; }
    const std::string& table() const { return table_; }

    // Makes every insert into the table fail, as a trigger or a constraint of a real schema could.
    void refuse_inserts() { testing_support::refuse_inserts(database_, table_, "no claims today"); }

private:
    static std::filesystem::path make_directory() {
        std::string pattern = (std::filesystem::temp_directory_path() / "acemq-idempotency-XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a temporary directory");
        return pattern;
    }

    std::filesystem::path directory_;
    acemq::sqlite::Database database_;
    std::string table_ = "acemq_idempotency";
};

class PostgresTarget {
public:
    PostgresTarget() : database_(postgres_url()), table_("acemq_idem_" + unique_suffix()) {
        create_idempotency_table(database_, table_);
    }
    ~PostgresTarget() {
        try {
            auto connection = database_.connect();
            connection->execute("DROP TABLE IF EXISTS " + table_);
            connection->execute("DROP FUNCTION IF EXISTS " + table_ + "_refuse()");
        } catch (const std::exception& error) {
            // A destructor cannot fail the test; the table's name is unique, so say so and go on.
            std::cerr << "could not drop the test table " << table_ << ": " << error.what() << '\n';
        }
    }
    PostgresTarget(const PostgresTarget&) = delete;
    PostgresTarget& operator=(const PostgresTarget&) = delete;

    acemq::sql::Database& database() { return database_; }
    const std::string& table() const { return table_; }

    void refuse_inserts() { testing_support::refuse_inserts(database_, table_, "no claims today"); }

private:
    acemq::postgres::Database database_;
    std::string table_;
};

}  // namespace sql_targets
