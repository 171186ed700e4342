// What the SQL store tests share about their databases: the PostgreSQL server to use and
// names that parallel runs on one server do not share.
#pragma once

#include <catch2/catch.hpp>

#include <acemq/sql.hpp>
#include <acemq/uuid.hpp>

#include <cstdlib>
#include <string>

namespace testing_support {

// The server named by ACEMQ_TEST_POSTGRES_URL; fails the test when none is: the PostgreSQL
// tests are never skipped.
inline std::string postgres_url() {
    const char* url = std::getenv("ACEMQ_TEST_POSTGRES_URL");
    if (url == nullptr || *url == '\0')
        FAIL(
            "ACEMQ_TEST_POSTGRES_URL is not set: the PostgreSQL tests need a server. Run scripts/test, which starts "
            "a throw-away one and sets it, or set it yourself, e.g. postgresql://postgres@127.0.0.1:5442/postgres");
    return url;
}

// 12 random hex digits for table and file names.
inline std::string unique_suffix() {
    std::string suffix = acemq::new_uuid().substr(0, 13);
    std::erase(suffix, '-');
    return suffix;
}

// Makes every insert into `table` fail with `why`, as a trigger or a constraint of a real
// schema could. On PostgreSQL the trigger's function is `<table>_refuse()`: drop it with the
// table.
inline void refuse_inserts(acemq::sql::Database& database, const std::string& table, const std::string& why) {
    auto connection = database.connect();
    if (database.dialect() == acemq::sql::Dialect::sqlite) {
        connection->execute("CREATE TRIGGER " + table + "_refuse BEFORE INSERT ON " + table +
                            " BEGIN SELECT RAISE(ABORT, '" + why + "'); END");
        return;
    }
    connection->execute("CREATE FUNCTION " + table + "_refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION '" + why +
                        "'; END $$ LANGUAGE plpgsql");
    connection->execute("CREATE TRIGGER " + table + "_refuse BEFORE INSERT ON " + table +
                        " FOR EACH ROW EXECUTE FUNCTION " + table + "_refuse()");
}

}  // namespace testing_support
