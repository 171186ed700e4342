// What only the PostgreSQL driver does: placeholder rewriting, aborted transactions, broken
// connections, and keeping the connection string (and its password) out of every error.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "postgres/placeholders.hpp"
#include "support.hpp"

using namespace drivers_test;
using acemq::postgres::rewrite_placeholders;
using Catch::Matchers::Contains;

namespace {

// A loopback port nobody listens on: bound by us, then released.
int closed_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                       getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    close(fd);
    REQUIRE(bound);
    return ntohs(address.sin_port);
}

std::string failure_of(const std::string& conninfo) {
    try {
        acemq::postgres::Database database(conninfo);
        database.connect();
    } catch (const acemq::Error& error) {
        return error.what();
    }
    FAIL("connecting with " << conninfo.size() << " characters of connection string did not fail");
    return {};
}

}  // namespace

TEST_CASE("? becomes $n except inside literals, quoted names and comments", "[placeholders]") {
    CHECK(rewrite_placeholders("SELECT ?, ? FROM t WHERE a = ?").text == "SELECT $1, $2 FROM t WHERE a = $3");
    CHECK(rewrite_placeholders("SELECT ?, ?").parameters == 2);
    CHECK(rewrite_placeholders("SELECT '?', 'it''s ?', ?").text == "SELECT '?', 'it''s ?', $1");
    CHECK(rewrite_placeholders(R"(SELECT E'\'?', ?)").text == R"(SELECT E'\'?', $1)");
    CHECK(rewrite_placeholders(R"(SELECT '\', ?)").text == R"(SELECT '\', $1)");  // no escapes in '...'
    CHECK(rewrite_placeholders(R"(SELECT "a?""b", ?)").text == R"(SELECT "a?""b", $1)");
    CHECK(rewrite_placeholders("SELECT ? -- ?\n, ?").text == "SELECT $1 -- ?\n, $2");
    CHECK(rewrite_placeholders("SELECT /* ? /* ? */ ? */ ?").text == "SELECT /* ? /* ? */ ? */ $1");
    CHECK(rewrite_placeholders("SELECT $$?$$, $tag$ ? $$ ? $tag$, ?").text == "SELECT $$?$$, $tag$ ? $$ ? $tag$, $1");
    CHECK(rewrite_placeholders("SELECT a$b, ?").text == "SELECT a$b, $1");
    CHECK(rewrite_placeholders("SELECT 'unterminated ?").parameters == 0);
    CHECK(rewrite_placeholders("").text.empty());
}

TEST_CASE("the connection string never appears in an error", "[conninfo]") {
    const std::string port = std::to_string(closed_port());
    SECTION("a URL with a password, nobody listening") {
        const auto what = failure_of("postgresql://acemq:secret@127.0.0.1:" + port + "/orders?connect_timeout=5");
        CHECK_THAT(what, !Contains("secret"));
        CHECK_THAT(what, Contains("127.0.0.1"));
        CHECK_THAT(what, Contains(port));
        CHECK_THAT(what, Contains("orders"));
    }
    SECTION("keywords with a password") {
        const auto what = failure_of("host=127.0.0.1 port=" + port + " user=acemq password=secret connect_timeout=5");
        CHECK_THAT(what, !Contains("secret"));
        CHECK_THAT(what, Contains("127.0.0.1"));
    }
    SECTION("malformed strings") {
        for (const std::string& conninfo : std::vector<std::string>{
                 "postgresql://acemq:secret@127.0.0.1:notaport/orders", "postgresql://acemq:sec%zzret@127.0.0.1/orders",
                 "host=127.0.0.1 password=secret bogus=1", "host=127.0.0.1 password='secret", "secret=1",
                 "postgresql://acemq:secret@127.0.0.1:" + port + "/orders?secret=1"}) {
            INFO(conninfo);
            const auto what = failure_of(conninfo);
            CHECK_THAT(what, !Contains("secret") && !Contains("sec%zz"));
        }
    }
}

TEST_CASE("a failed statement aborts a PostgreSQL transaction until it is rolled back", "[postgres]") {
    PostgresTarget target;
    const auto t = target.table("aborted");
    auto connection = target.db().connect();
    connection->execute("CREATE TABLE " + t + " (k VARCHAR(64) NOT NULL PRIMARY KEY)");

    SECTION("then rollback works and the connection goes on") {
        acemq::sql::Transaction tx(*connection);
        connection->execute("INSERT INTO " + t + " (k) VALUES (?)", {"a"});
        try {
            connection->execute("INSERT INTO " + t + " (k) VALUES (?)", {"a"});
            FAIL("no error");
        } catch (const acemq::sql::DatabaseError& error) {
            CHECK(error.code() == "23505");
            CHECK_THAT(std::string(error.what()), Contains("duplicate key"));
        }
        try {
            connection->query("SELECT 1");
            FAIL("no error");
        } catch (const acemq::sql::DatabaseError& error) {
            CHECK(error.code() == "25P02");
            CHECK_THAT(std::string(error.what()), Contains("roll it back"));
        }
        tx.rollback();
        CHECK_FALSE(connection->in_transaction());
        CHECK(count_rows(*connection, t) == 0);
    }
    SECTION("and commit refuses to pass a rollback off as a commit") {
        sql::Transaction tx(*connection);
        connection->execute("INSERT INTO " + t + " (k) VALUES (?)", {"a"});
        CHECK_THROWS_AS(connection->execute("INSERT INTO " + t + " (k) VALUES (?)", {"a"}), sql::DatabaseError);
        try {
            tx.commit();
            FAIL("the commit of an aborted transaction succeeded");
        } catch (const sql::DatabaseError& error) {
            CHECK(error.code() == "25P02");
        }
        CHECK_FALSE(connection->in_transaction());
        CHECK(count_rows(*connection, t) == 0);
    }
}

TEST_CASE("a broken PostgreSQL connection is a ConnectionError", "[postgres]") {
    PostgresTarget target;
    auto victim = target.db().connect();
    const auto pid = dynamic_cast<acemq::postgres::Connection&>(*victim).backend_pid();
    {
        sql::Transaction tx(*victim);
        victim->query("SELECT 1");
        // A function taking integer needs a cast: integer parameters are sent as bigint.
        target.db().connect()->query("SELECT pg_terminate_backend(?::integer)", {pid});
        CHECK_THROWS_AS(victim->query("SELECT 1"), sql::ConnectionError);
        CHECK_THROWS_AS(victim->query("SELECT 1"), sql::ConnectionError);
    }  // the rollback of a transaction on a broken connection is quiet: nothing to undo
    CHECK_THROWS_WITH(victim->execute("SELECT 1"), Contains("connect again"));
}

TEST_CASE("PostgreSQL-only literals: $$ quoting and E'' escapes hide ?", "[postgres]") {
    PostgresTarget target;
    auto connection = target.db().connect();
    CHECK(connection->query(R"(SELECT $$?$$, E'\'?', ?, $q$ ? $q$)", {"x"}) ==
          std::vector<sql::Row>{{"?", "'?", "x", " ? "}});
}

TEST_CASE("PostgreSQL text cannot carry a NUL character", "[postgres]") {
    PostgresTarget target;
    auto connection = target.db().connect();
    CHECK_THROWS_AS(connection->query("SELECT ?", {std::string("a\0b", 3)}), acemq::InvalidArgument);
}

TEST_CASE("PostgreSQL column types map to values", "[postgres]") {
    PostgresTarget target;
    auto connection = target.db().connect();
    const auto rows = connection->query(
        "SELECT 1::smallint, 2::integer, 3::bigint, 1.5::real, 'Infinity'::float8, 'x'::varchar, true, "
        "12.50::numeric, '\\x00ff'::bytea, ''::bytea, NULL::integer");
    REQUIRE(rows.size() == 1);
    const sql::Row expected = {std::int64_t{1},
                               std::int64_t{2},
                               std::int64_t{3},
                               1.5,
                               std::numeric_limits<double>::infinity(),
                               "x",
                               "t",
                               "12.50",
                               acemq::Bytes{std::byte{0}, std::byte{0xff}},
                               acemq::Bytes{},
                               nullptr};
    CHECK(rows[0] == expected);
}
