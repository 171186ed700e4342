// What only the SQLite driver does: busy waiting, the pragmas, files and ":memory:".
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "support.hpp"

using namespace drivers_test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

TEST_CASE("a second writer waits while the write lock is held, and gets it once released", "[sqlite]") {
    SqliteTarget target(acemq::sqlite::Options{.busy_timeout = 60s});
    auto holder = target.db().connect();
    holder->execute("CREATE TABLE t (k TEXT PRIMARY KEY)");
    auto waiter = target.db().connect();
    std::atomic<bool> released{false};
    std::future<bool> waiting;
    {
        acemq::sql::Transaction hold(*holder);  // BEGIN IMMEDIATE: holds the write lock
        holder->execute("INSERT INTO t (k) VALUES ('held')");
        waiting = std::async(std::launch::async, [&] {
            waiter->execute("INSERT INTO t (k) VALUES ('waited')");
            return released.load();
        });
        // Time for the second writer to meet the lock. One that asked only after the release
        // would pass without showing the wait, never fail for want of time.
        std::this_thread::sleep_for(100ms);
        released = true;
    }  // rolled back: the lock is free
    REQUIRE(waiting.wait_for(20s) == std::future_status::ready);
    CHECK(waiting.get());  // it returned after the release: it waited, and did not fail
    CHECK(count_rows(*holder, "t") == 1);
}

TEST_CASE("a second writer whose busy timeout runs out fails with BUSY, naming the timeout", "[sqlite]") {
    SqliteTarget target(acemq::sqlite::Options{.busy_timeout = 200ms});
    auto holder = target.db().connect();
    holder->execute("CREATE TABLE t (k TEXT PRIMARY KEY)");
    auto waiter = target.db().connect();
    {
        acemq::sql::Transaction hold(*holder);  // BEGIN IMMEDIATE: holds the write lock
        holder->execute("INSERT INTO t (k) VALUES ('held')");

        for (const bool in_transaction : {true, false}) {
            INFO("second writer in a transaction: " << in_transaction);
            try {
                if (in_transaction)
                    waiter->begin();
                else
                    waiter->execute("INSERT INTO t (k) VALUES ('waiting')");
                FAIL("the second writer got the lock");
            } catch (const acemq::sql::DatabaseError& error) {
                CHECK_THAT(error.code(), Contains("BUSY"));
                CHECK_THAT(std::string(error.what()), Contains("busy timeout 200 ms"));
            }
            CHECK_FALSE(waiter->in_transaction());
        }
        CHECK(count_rows(*waiter, "t") == 0);  // readers are not blocked (WAL)
    }
    acemq::sql::Transaction now(*waiter);  // the holder rolled back: the lock is free
    waiter->execute("INSERT INTO t (k) VALUES ('after')");
    now.commit();
    CHECK(count_rows(*holder, "t") == 1);
}

TEST_CASE("the connection pragmas: WAL, foreign keys, synchronous FULL", "[sqlite]") {
    SqliteTarget target;
    auto connection = target.db().connect();
    CHECK(connection->query("PRAGMA journal_mode") == std::vector<acemq::sql::Row>{{"wal"}});
    CHECK(connection->query("PRAGMA foreign_keys") == std::vector<acemq::sql::Row>{{std::int64_t{1}}});
    // FULL (2): a commit that returned survives a power cut. NORMAL in WAL mode may roll it back.
    CHECK(connection->query("PRAGMA synchronous") == std::vector<acemq::sql::Row>{{std::int64_t{2}}});
    connection->execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)");
    connection->execute("CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id))");
    try {
        connection->execute("INSERT INTO child (id, parent) VALUES (1, 99)");
        FAIL("the foreign key was not enforced");
    } catch (const acemq::sql::DatabaseError& error) {
        CHECK(error.code() == "SQLITE_CONSTRAINT_FOREIGNKEY");
    }

    SECTION("options turn them off") {
        TempDir dir;
        acemq::sqlite::Database plain((dir.path() / "plain.db").string(),
                                      acemq::sqlite::Options{.wal = false, .foreign_keys = false});
        auto other = plain.connect();
        CHECK(other->query("PRAGMA journal_mode") == std::vector<acemq::sql::Row>{{"delete"}});
        CHECK(other->query("PRAGMA foreign_keys") == std::vector<acemq::sql::Row>{{std::int64_t{0}}});
        CHECK(other->query("PRAGMA synchronous") == std::vector<acemq::sql::Row>{{std::int64_t{2}}});
    }
}

TEST_CASE("synchronous NORMAL is there when asked for, with WAL or without", "[sqlite][reliability]") {
    TempDir dir;
    for (const bool wal : {true, false}) {
        INFO("WAL: " << wal);
        const std::string path = (dir.path() / (wal ? "wal.db" : "delete.db")).string();
        acemq::sqlite::Database fast(path, {.wal = wal, .synchronous = acemq::sqlite::Synchronous::normal});
        CHECK(fast.connect()->query("PRAGMA synchronous") == std::vector<acemq::sql::Row>{{std::int64_t{1}}});
        acemq::sqlite::Database safe(path, {.wal = wal, .synchronous = acemq::sqlite::Synchronous::full});
        CHECK(safe.connect()->query("PRAGMA synchronous") == std::vector<acemq::sql::Row>{{std::int64_t{2}}});
    }
}

TEST_CASE("a statement failing inside an SQLite transaction leaves the transaction usable", "[sqlite]") {
    SqliteTarget target;
    auto connection = target.db().connect();
    connection->execute("CREATE TABLE t (k TEXT PRIMARY KEY)");
    acemq::sql::Transaction tx(*connection);
    connection->execute("INSERT INTO t (k) VALUES ('a')");
    CHECK_THROWS_AS(connection->execute("INSERT INTO t (k) VALUES ('a')"), acemq::sql::DatabaseError);
    connection->execute("INSERT INTO t (k) VALUES ('b')");
    tx.commit();
    CHECK(count_rows(*target.db().connect(), "t") == 2);
}

TEST_CASE("a primary key violation names PRIMARYKEY", "[sqlite]") {
    SqliteTarget target;
    auto connection = target.db().connect();
    connection->execute("CREATE TABLE t (k TEXT NOT NULL PRIMARY KEY)");
    connection->execute("INSERT INTO t (k) VALUES ('a')");
    try {
        connection->execute("INSERT INTO t (k) VALUES (?)", {"a"});
        FAIL("no error");
    } catch (const acemq::sql::DatabaseError& error) {
        CHECK(error.code() == "SQLITE_CONSTRAINT_PRIMARYKEY");
    }
}

TEST_CASE("the statement cache keeps working past its size", "[sqlite]") {
    TempDir dir;
    acemq::sqlite::Database database((dir.path() / "cache.db").string(), acemq::sqlite::Options{.statement_cache = 2});
    auto connection = database.connect();
    connection->execute("CREATE TABLE t (n INTEGER)");
    for (int round = 0; round < 3; ++round)
        for (int n = 0; n < 5; ++n)
            CHECK(connection->execute("INSERT INTO t (n) VALUES (" + std::to_string(n) + " + ?)", {round}) == 1);
    CHECK(count_rows(*connection, "t") == 15);
}

TEST_CASE("\":memory:\" gives every connection a database of its own", "[sqlite]") {
    acemq::sqlite::Database database(":memory:");
    auto first = database.connect();
    auto second = database.connect();
    first->execute("CREATE TABLE t (n INTEGER)");
    CHECK_THROWS_AS(second->query("SELECT * FROM t"), acemq::sql::DatabaseError);
}

TEST_CASE("a database that cannot be opened is a ConnectionError naming the path", "[sqlite]") {
    acemq::sqlite::Database database("/nonexistent-acemq-dir/sub/test.db");
    CHECK_THROWS_AS(database.connect(), acemq::sql::ConnectionError);
    CHECK_THROWS_WITH(database.connect(), Contains("/nonexistent-acemq-dir/sub/test.db"));
}
