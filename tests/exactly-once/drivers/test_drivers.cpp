// The behaviour both drivers share, run once on SQLite and once on PostgreSQL.
#include <atomic>
#include <barrier>
#include <mutex>
#include <thread>

#include "support.hpp"

using namespace drivers_test;
using acemq::Bytes;
using Catch::Matchers::Contains;

namespace {

Bytes bytes(std::initializer_list<int> values) {
    Bytes out;
    for (int value : values) out.push_back(static_cast<std::byte>(value));
    return out;
}

Bytes megabyte() {
    Bytes out(1 << 20);
    std::mt19937 random(42);
    for (auto& byte : out) byte = static_cast<std::byte>(random() & 0xff);  // zeros included
    return out;
}

}  // namespace

TEMPLATE_TEST_CASE("every kind of value goes in and comes back unchanged", "[driver]", SqliteTarget, PostgresTarget) {
    TestType target;
    const auto t = target.table("values");
    auto connection = target.db().connect();
    connection->execute("CREATE TABLE " + t +
                        " (id INTEGER NOT NULL PRIMARY KEY, i BIGINT, r DOUBLE PRECISION, s TEXT, b " +
                        TestType::blob_type() + ")");
    const std::vector<sql::Row> rows = {
        {std::int64_t{1}, INT64_MAX, 0.1, "żółw 🐢 日本語 ü", bytes({0, 1, 0, 255, 0})},
        {std::int64_t{2}, INT64_MIN, -1.5e300, "", Bytes{}},
        {std::int64_t{3}, nullptr, nullptr, nullptr, nullptr},
        {std::int64_t{4}, std::int64_t{0}, 0.0, "it's \"quoted\" ? \\ back\nslash", megabyte()},
        {std::int64_t{5}, std::int64_t{-7}, 1e-300, std::string(1 << 16, 'x'), bytes({0})},
    };
    for (const auto& row : rows)
        CHECK(connection->execute("INSERT INTO " + t + " (id, i, r, s, b) VALUES (?, ?, ?, ?, ?)", row) == 1);
    for (const auto& row : rows) {
        const auto found = connection->query("SELECT id, i, r, s, b FROM " + t + " WHERE id = ?", {row[0]});
        REQUIRE(found.size() == 1);
        CHECK(found[0] == row);
    }
    CHECK(connection->query("SELECT id FROM " + t + " WHERE b IS NULL") == std::vector<sql::Row>{{std::int64_t{3}}});
    CHECK(connection->query("SELECT id FROM " + t + " WHERE s = ?", {"żółw 🐢 日本語 ü"}) ==
          std::vector<sql::Row>{{std::int64_t{1}}});

    SECTION("parameters selected straight back keep their kind") {
        const sql::Row row = {std::int64_t{-42}, 2.5, "ü?", bytes({0, 0, 7}), nullptr};
        const auto back = connection->query("SELECT ?, ?, ?, ?, ?", row);
        REQUIRE(back.size() == 1);
        CHECK(back[0] == row);
    }
    SECTION("an empty result is no rows") {
        CHECK(connection->query("SELECT id FROM " + t + " WHERE id = ?", {99}).empty());
    }
}

TEMPLATE_TEST_CASE("execute says how many rows changed", "[driver]", SqliteTarget, PostgresTarget) {
    TestType target;
    const auto t = target.table("changes");
    auto connection = target.db().connect();
    CHECK(connection->execute("CREATE TABLE " + t + " (k VARCHAR(64) NOT NULL PRIMARY KEY, n INTEGER NOT NULL)") == 0);
    for (const char* key : {"a", "b", "c"})
        CHECK(connection->execute("INSERT INTO " + t + " (k, n) VALUES (?, 0)", {key}) == 1);
    CHECK(connection->execute("INSERT INTO " + t + " (k, n) VALUES (?, 0) ON CONFLICT (k) DO NOTHING", {"a"}) == 0);
    CHECK(connection->execute("UPDATE " + t + " SET n = n + 1") == 3);
    CHECK(connection->execute("UPDATE " + t + " SET n = 5 WHERE k = ?", {"b"}) == 1);
    CHECK(connection->execute("DELETE FROM " + t + " WHERE k = ?", {"zzz"}) == 0);
    CHECK(connection->execute("SELECT COUNT(*) FROM " + t) == 0);  // a query changes nothing
    CHECK(connection->execute("DELETE FROM " + t + " WHERE n < ?", {3}) == 2);
    CHECK(connection->query("SELECT k, n FROM " + t) == std::vector<sql::Row>{{"b", std::int64_t{5}}});
}

TEMPLATE_TEST_CASE("a transaction is invisible until committed and gone unless committed", "[driver]", SqliteTarget,
                   PostgresTarget) {
    TestType target;
    const auto t = target.table("tx");
    auto other = target.db().connect();
    other->execute("CREATE TABLE " + t + " (k VARCHAR(64) NOT NULL PRIMARY KEY)");

    {
        sql::Transaction tx = target.db().begin();
        CHECK(tx.connection().in_transaction());
        tx.connection().execute("INSERT INTO " + t + " (k) VALUES (?)", {"rolled-back"});
        CHECK(count_rows(tx.connection(), t) == 1);
        CHECK(count_rows(*other, t) == 0);  // not visible to another connection before commit
    }                                       // no commit: rolled back here
    CHECK(count_rows(*other, t) == 0);

    {
        sql::Transaction tx = target.db().begin();
        tx.connection().execute("INSERT INTO " + t + " (k) VALUES (?)", {"committed"});
        CHECK(count_rows(*other, t) == 0);
        tx.commit();
        CHECK_THROWS_AS(tx.commit(), acemq::Error);  // already over
        CHECK_THROWS_AS(tx.rollback(), acemq::Error);
    }
    CHECK(other->query("SELECT k FROM " + t) == std::vector<sql::Row>{{"committed"}});

    SECTION("a borrowed connection: explicit rollback, then the connection goes on without one") {
        auto connection = target.db().connect();
        {
            sql::Transaction tx(*connection);
            connection->execute("DELETE FROM " + t);
            tx.rollback();
        }
        CHECK_FALSE(connection->in_transaction());
        CHECK(count_rows(*connection, t) == 1);
    }
    SECTION("transactions do not nest, and commit or rollback need one") {
        auto connection = target.db().connect();
        CHECK_THROWS_AS(connection->commit(), acemq::Error);
        CHECK_THROWS_AS(connection->rollback(), acemq::Error);
        sql::Transaction tx(*connection);
        CHECK_THROWS_WITH(connection->begin(), Contains("do not nest"));
        CHECK(connection->in_transaction());
    }
    SECTION("a moved transaction is rolled back once, by its new owner") {
        std::optional<sql::Transaction> moved;
        {
            sql::Transaction tx = target.db().begin();
            tx.connection().execute("INSERT INTO " + t + " (k) VALUES (?)", {"moved"});
            moved.emplace(std::move(tx));
        }
        CHECK(count_rows(moved->connection(), t) == 2);
        moved.reset();
        CHECK(count_rows(*other, t) == 1);
    }
}

TEMPLATE_TEST_CASE("a refused statement is a DatabaseError with the database's code", "[driver]", SqliteTarget,
                   PostgresTarget) {
    TestType target;
    const auto t = target.table("errors");
    auto connection = target.db().connect();
    connection->execute("CREATE TABLE " + t + " (id INTEGER NOT NULL PRIMARY KEY, k VARCHAR(64) NOT NULL UNIQUE)");
    connection->execute("INSERT INTO " + t + " (id, k) VALUES (?, ?)", {1, "one"});

    SECTION("syntax error") {
        try {
            connection->execute("SELEC 1");
            FAIL("no error");
        } catch (const sql::DatabaseError& error) {
            CHECK(error.code() == TestType::syntax_error());
            CHECK_THAT(std::string(error.what()), Contains("SELEC 1"));  // the statement is named
        }
    }
    SECTION("unique violation") {
        try {
            connection->execute("INSERT INTO " + t + " (id, k) VALUES (?, ?)", {2, "one"});
            FAIL("no error");
        } catch (const sql::DatabaseError& error) {
            CHECK(error.code() == TestType::unique_violation());
        }
        CHECK(count_rows(*connection, t) == 1);  // the connection goes on
    }
    SECTION("primary key violation") {
        CHECK_THROWS_AS(connection->execute("INSERT INTO " + t + " (id, k) VALUES (?, ?)", {1, "two"}),
                        sql::DatabaseError);
    }
    SECTION("not null violation and a missing table") {
        CHECK_THROWS_AS(connection->execute("INSERT INTO " + t + " (id, k) VALUES (?, ?)", {3, nullptr}),
                        sql::DatabaseError);
        CHECK_THROWS_AS(connection->query("SELECT * FROM " + t + "_missing"), sql::DatabaseError);
    }
    SECTION("the wrong number of parameters is the caller's mistake") {
        CHECK_THROWS_AS(connection->execute("INSERT INTO " + t + " (id, k) VALUES (?, ?)", {3}),
                        acemq::InvalidArgument);
        CHECK_THROWS_AS(connection->query("SELECT ?", {1, 2}), acemq::InvalidArgument);
    }
    SECTION("one statement at a time") {
        CHECK_THROWS(connection->execute("DELETE FROM " + t + "; DELETE FROM " + t));
        CHECK(count_rows(*connection, t) == 1);
    }
}

TEMPLATE_TEST_CASE("a ? inside a literal, quoted name or comment is not a parameter", "[driver]", SqliteTarget,
                   PostgresTarget) {
    TestType target;
    auto connection = target.db().connect();
    const auto rows = connection->query("SELECT '?', ? AS \"odd?name\", 'it''s ?' /* ? */ -- ?\n", {7});
    CHECK(rows == std::vector<sql::Row>{{"?", std::int64_t{7}, "it's ?"}});
}

TEMPLATE_TEST_CASE("racing inserts of one key: exactly one connection wins each", "[driver]", SqliteTarget,
                   PostgresTarget) {
    TestType target;
    const auto t = target.table("race");
    target.db().connect()->execute("CREATE TABLE " + t + " (k VARCHAR(64) NOT NULL PRIMARY KEY, winner INTEGER)");
    constexpr int threads = 6;
    constexpr int keys = 40;
    const bool in_transactions = GENERATE(false, true);
    INFO("in transactions: " << in_transactions);
    std::vector<std::atomic<int>> wins(keys);
    std::mutex mutex;
    std::vector<std::string> errors;
    std::barrier start(threads);
    std::vector<std::thread> workers;
    for (int w = 0; w < threads; ++w)
        workers.emplace_back([&, w] {
            std::unique_ptr<sql::Connection> connection;
            try {
                connection = target.db().connect();
            } catch (const std::exception& error) {
                const std::lock_guard lock(mutex);
                errors.push_back(error.what());
            }
            for (int key = 0; key < keys; ++key) {
                start.arrive_and_wait();  // every worker arrives each round, failed or not
                if (!connection) continue;
                try {
                    const std::string statement =
                        "INSERT INTO " + t + " (k, winner) VALUES (?, ?) ON CONFLICT (k) DO NOTHING";
                    std::int64_t changed;
                    if (in_transactions) {
                        sql::Transaction tx(*connection);
                        changed = connection->execute(statement, {"key-" + std::to_string(key), w});
                        tx.commit();
                    } else {
                        changed = connection->execute(statement, {"key-" + std::to_string(key), w});
                    }
                    if (changed == 1) ++wins[static_cast<std::size_t>(key)];
                } catch (const std::exception& error) {
                    const std::lock_guard lock(mutex);
                    errors.push_back(error.what());
                }
            }
        });
    for (auto& worker : workers) worker.join();
    for (const auto& error : errors) FAIL_CHECK(error);
    for (int key = 0; key < keys; ++key) CHECK(wins[static_cast<std::size_t>(key)] == 1);
    CHECK(count_rows(*target.db().connect(), t) == keys);
}
