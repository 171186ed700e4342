// schema_ddl's statements for both dialects, and create_schema on both databases.
#include <acemq/schema.hpp>
#include "support.hpp"

using namespace drivers_test;
using acemq::schema_ddl;
using acemq::SchemaNames;
using acemq::sql::Dialect;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

}  // namespace

TEST_CASE("schema_ddl: eight statements by default, BLOB vs BYTEA the only difference", "[schema]") {
    const auto sqlite = schema_ddl(Dialect::sqlite);
    const auto postgres = schema_ddl(Dialect::postgres);
    REQUIRE(sqlite.size() == 8);
    REQUIRE(postgres.size() == 8);
    for (std::size_t i = 0; i < sqlite.size(); ++i) {
        CHECK(replace_all(sqlite[i], "BLOB", "BYTEA") == postgres[i]);
        CHECK(sqlite[i].find(';') == std::string::npos);
        CHECK(sqlite[i].find('?') == std::string::npos);
        CHECK(sqlite[i].front() != ' ');
        CHECK(sqlite[i].back() != ' ');
        CHECK(sqlite[i].back() != '\n');
    }
    CHECK(sqlite != postgres);
    CHECK_THAT(sqlite[0], StartsWith("CREATE TABLE IF NOT EXISTS acemq_idempotency (") &&
                              Contains("message_id VARCHAR(255) NOT NULL PRIMARY KEY") &&
                              Contains("state VARCHAR(16) NOT NULL") && Contains("claimed_by VARCHAR(64),") &&
                              Contains("recorded_at BIGINT NOT NULL") && Contains("expires_at BIGINT NOT NULL"));
    CHECK(sqlite[1] == "CREATE INDEX IF NOT EXISTS acemq_idempotency_expiry ON acemq_idempotency (expires_at)");
    CHECK_THAT(sqlite[2], StartsWith("CREATE TABLE IF NOT EXISTS acemq_outbox (") &&
                              Contains("id VARCHAR(64) NOT NULL PRIMARY KEY") &&
                              Contains("exchange_name VARCHAR(255) NOT NULL") &&
                              Contains("routing_key VARCHAR(255) NOT NULL") && Contains("body BLOB NOT NULL") &&
                              Contains("content_type VARCHAR(255) NOT NULL") && Contains("headers TEXT NOT NULL") &&
                              Contains("created_at BIGINT NOT NULL") &&
                              Contains("attempts INTEGER NOT NULL DEFAULT 0") && Contains("last_error TEXT,\n") &&
                              Contains("claimed_by VARCHAR(64),\n") && Contains("claim_expires_at BIGINT\n"));
    CHECK_THAT(postgres[2], Contains("body BYTEA NOT NULL"));
    CHECK(sqlite[3] == "CREATE INDEX IF NOT EXISTS acemq_outbox_pending ON acemq_outbox (created_at)");
    CHECK_THAT(sqlite[4], StartsWith("CREATE TABLE IF NOT EXISTS acemq_schema_registry (") &&
                              Contains("id INTEGER NOT NULL PRIMARY KEY") &&
                              Contains("subject VARCHAR(255) NOT NULL") && Contains("version INTEGER NOT NULL") &&
                              Contains("format VARCHAR(32) NOT NULL") && Contains("definition TEXT NOT NULL") &&
                              Contains("fingerprint VARCHAR(64) NOT NULL") &&
                              Contains("registered_at BIGINT NOT NULL"));
    CHECK(sqlite[5] ==
          "CREATE UNIQUE INDEX IF NOT EXISTS acemq_schema_registry_fingerprint ON acemq_schema_registry "
          "(subject, fingerprint)");
    CHECK(
        sqlite[6] ==
        "CREATE UNIQUE INDEX IF NOT EXISTS acemq_schema_registry_version ON acemq_schema_registry (subject, version)");
    CHECK(sqlite[7] ==
          "CREATE TABLE IF NOT EXISTS acemq_schema_registry_seq (\n"
          "    only_row INTEGER NOT NULL PRIMARY KEY,\n"
          "    last_id INTEGER NOT NULL\n"
          ")");
}

TEST_CASE("schema_ddl: renamed and skipped tables", "[schema]") {
    const auto renamed =
        schema_ddl(Dialect::postgres, {.idempotency = "seen", .outbox = "Out_Box2", .registry = "_reg"});
    REQUIRE(renamed.size() == 8);
    CHECK_THAT(renamed[0], StartsWith("CREATE TABLE IF NOT EXISTS seen ("));
    CHECK(renamed[1] == "CREATE INDEX IF NOT EXISTS seen_expiry ON seen (expires_at)");
    CHECK(renamed[3] == "CREATE INDEX IF NOT EXISTS Out_Box2_pending ON Out_Box2 (created_at)");
    CHECK_THAT(renamed[5], StartsWith("CREATE UNIQUE INDEX IF NOT EXISTS _reg_fingerprint ON _reg "));
    CHECK_THAT(renamed[7], StartsWith("CREATE TABLE IF NOT EXISTS _reg_seq ("));
    for (const auto& statement : renamed) CHECK_THAT(statement, !Contains("acemq_"));

    const auto outbox_only = schema_ddl(Dialect::sqlite, {.idempotency = std::nullopt, .registry = std::nullopt});
    REQUIRE(outbox_only.size() == 2);
    CHECK_THAT(outbox_only[0], StartsWith("CREATE TABLE IF NOT EXISTS acemq_outbox ("));
    CHECK(schema_ddl(Dialect::sqlite, {std::nullopt, std::nullopt, std::nullopt}).empty());
    CHECK(schema_ddl(Dialect::sqlite, {.outbox = std::nullopt}).size() == 6);
}

TEST_CASE("schema_ddl refuses names that are not plain identifiers", "[schema]") {
    for (const std::string& hostile : std::vector<std::string>{
             "orders; DROP TABLE users", "", "1outbox", std::string(100, 'a'), "a-b", "t\"x", "name with space", "é"}) {
        INFO("name: " << hostile);
        CHECK_THROWS_AS(schema_ddl(Dialect::sqlite, {.idempotency = hostile}), acemq::InvalidArgument);
        CHECK_THROWS_AS(schema_ddl(Dialect::postgres, {.outbox = hostile}), acemq::InvalidArgument);
        CHECK_THROWS_AS(schema_ddl(Dialect::postgres, {.registry = hostile}), acemq::InvalidArgument);
    }
    CHECK_THROWS_WITH(schema_ddl(Dialect::sqlite, {.outbox = "orders; DROP TABLE users"}),
                      Contains("plain SQL identifier"));

    SECTION("derived names must fit PostgreSQL's 63 characters") {
        CHECK(schema_ddl(Dialect::postgres, {.outbox = std::string(55, 'o')}).size() == 8);  // _pending: 63
        CHECK_THROWS_WITH(schema_ddl(Dialect::postgres, {.outbox = std::string(56, 'o')}), Contains("at most 55"));
        CHECK(schema_ddl(Dialect::postgres, {.registry = std::string(51, 'r')}).size() == 8);  // _fingerprint: 63
        CHECK_THROWS_AS(schema_ddl(Dialect::postgres, {.registry = std::string(52, 'r')}), acemq::InvalidArgument);
    }
    SECTION("no two objects may share a name") {
        CHECK_THROWS_WITH(schema_ddl(Dialect::sqlite, {.idempotency = "same", .outbox = "same"}), Contains("\"same\""));
        CHECK_THROWS_AS(schema_ddl(Dialect::sqlite, {.outbox = "acemq_schema_registry_seq"}), acemq::InvalidArgument);
    }
}

TEMPLATE_TEST_CASE("create_schema makes usable tables and may run twice", "[schema]", SqliteTarget, PostgresTarget) {
    TestType target;
    const SchemaNames names{
        .idempotency = target.table("idem"), .outbox = target.table("outbox"), .registry = target.table("registry")};
    target.table("registry_seq");  // for the PostgreSQL target's clean-up
    acemq::create_schema(target.db(), names);
    acemq::create_schema(target.db(), names);  // IF NOT EXISTS everywhere
    auto connection = target.db().connect();
    acemq::create_schema(*connection, names);
    CHECK_FALSE(connection->in_transaction());

    CHECK(connection->execute("INSERT INTO " + *names.idempotency +
                                  " (message_id, state, claimed_by, recorded_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                              {"m-1", "CLAIMED", "node", std::int64_t{1700000000000}, std::int64_t{1700000300000}}) ==
          1);
    CHECK(connection->execute("INSERT INTO " + *names.outbox +
                                  " (id, exchange_name, routing_key, body, content_type, headers, created_at)"
                                  " VALUES (?, ?, ?, ?, ?, ?, ?)",
                              {"o-1", "orders", "created", acemq::Bytes{std::byte{0}}, "application/json", "{}",
                               std::int64_t{1700000000000}}) == 1);
    CHECK(connection->query("SELECT attempts, last_error FROM " + *names.outbox) ==
          std::vector<sql::Row>{{std::int64_t{0}, nullptr}});
    connection->execute("INSERT INTO " + *names.registry +
                            " (id, subject, version, format, definition, fingerprint, registered_at)"
                            " VALUES (?, ?, ?, ?, ?, ?, ?)",
                        {1, "orders", 1, "json", "{}", "ab", 1});
    CHECK_THROWS_AS(connection->execute("INSERT INTO " + *names.registry +
                                            " (id, subject, version, format, definition, fingerprint, registered_at)"
                                            " VALUES (?, ?, ?, ?, ?, ?, ?)",
                                        {2, "orders", 2, "json", "{}", "ab", 1}),
                    sql::DatabaseError);  // (subject, fingerprint) is unique
    connection->execute("INSERT INTO " + *names.registry + "_seq (only_row, last_id) VALUES (1, 1)");

    const std::string indexes = connection->dialect() == Dialect::sqlite
                                    ? "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = ?"
                                    : "SELECT COUNT(*) FROM pg_indexes WHERE indexname = ?";
    for (const auto& index : {*names.idempotency + "_expiry", *names.outbox + "_pending",
                              *names.registry + "_fingerprint", *names.registry + "_version"})
        CHECK(connection->query(indexes, {index}) == std::vector<sql::Row>{{std::int64_t{1}}});

    CHECK_THROWS_AS(acemq::create_schema(target.db(), {.outbox = "orders; DROP TABLE users"}), acemq::InvalidArgument);
}
