// The two databases the driver tests run on. Each test builds a fresh target:
//   SqliteTarget    a file database in a temporary directory, removed afterwards;
//   PostgresTarget  the server named by ACEMQ_TEST_POSTGRES_URL (scripts/test starts one),
//                   with table names made unique per target and dropped afterwards.
// Tests name their tables through table(), so both targets clean up what they made.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <acemq/sql.hpp>
#include <acemq/stores/postgres.hpp>
#include <acemq/stores/sqlite.hpp>
#include "../../support/databases.hpp"
#include "../../support/temp_dir.hpp"

namespace drivers_test {

namespace sql = acemq::sql;

using testing_support::postgres_url;
using testing_support::unique_suffix;

// A temporary directory for SQLite files.
struct TempDir : testing_support::TempDir {
    TempDir() : testing_support::TempDir("drivers") {}
};

struct SqliteTarget {
    explicit SqliteTarget(acemq::sqlite::Options options = {}) : database((dir.path() / "test.db").string(), options) {}

    sql::Database& db() { return database; }
    std::string table(const std::string& base) { return "t_" + base; }
    static std::string blob_type() { return "BLOB"; }
    static std::string unique_violation() { return "SQLITE_CONSTRAINT_UNIQUE"; }
    static std::string syntax_error() { return "SQLITE_ERROR"; }

    TempDir dir;
    acemq::sqlite::Database database;
};

struct PostgresTarget {
    PostgresTarget() : database(postgres_url()), prefix("acemq_t" + unique_suffix() + "_") {}
    ~PostgresTarget() {
        try {
            auto connection = database.connect();
            for (const auto& name : made) connection->execute("DROP TABLE IF EXISTS " + name + " CASCADE");
        } catch (const std::exception& error) {
            // A destructor cannot fail the test; the tables have unique names, so say it and go on.
            std::cerr << "could not drop the test tables: " << error.what() << '\n';
        }
    }
    PostgresTarget(const PostgresTarget&) = delete;
    PostgresTarget& operator=(const PostgresTarget&) = delete;

    sql::Database& db() { return database; }
    std::string table(const std::string& base) {
        made.push_back(prefix + base);
        return made.back();
    }
    static std::string blob_type() { return "BYTEA"; }
    static std::string unique_violation() { return "23505"; }
    static std::string syntax_error() { return "42601"; }

    acemq::postgres::Database database;
    std::string prefix;
    std::vector<std::string> made;
};

inline std::int64_t count_rows(sql::Connection& connection, const std::string& table) {
    return connection.query("SELECT COUNT(*) FROM " + table)[0][0].as_integer();
}

}  // namespace drivers_test
