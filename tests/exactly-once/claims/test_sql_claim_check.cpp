// SqlClaimCheckStore (docs/wire-contract.md §8.2) on SQLite and PostgreSQL: payloads kept and
// read back byte for byte, keys checked before they reach a statement, the caller's
// transaction joined, removal by age, a database that fails read as a store to retry, and the
// claims table's DDL.
#include <catch2/catch.hpp>

#include <acemq/claim_check.hpp>
#include <acemq/codec.hpp>
#include <acemq/error.hpp>
#include <acemq/schema.hpp>
#include <acemq/sql.hpp>
#include <acemq/stores/postgres.hpp>
#include <acemq/stores/sql_claim_check_store.hpp>
#include <acemq/stores/sqlite.hpp>
#include <acemq/uuid.hpp>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "../../support/databases.hpp"
#include "../../support/temp_dir.hpp"

using namespace std::chrono_literals;
using acemq::SqlClaimCheckStore;
using Bytes = std::vector<std::byte>;

namespace {

// The claims table, and nothing else, made for one test.
acemq::SchemaNames claims_only(const std::string& table) {
    return {.idempotency = std::nullopt, .outbox = std::nullopt, .registry = std::nullopt, .claims = table};
}

class Target {
public:
    virtual ~Target() = default;
    virtual acemq::sql::Database& db() = 0;
    // A database of the same kind that cannot be reached.
    virtual std::unique_ptr<acemq::sql::Database> unreachable() = 0;
    const std::string table = "acemq_claims_" + testing_support::unique_suffix();
};

class SqliteTarget final : public Target {
public:
    SqliteTarget() { acemq::create_schema(database_, claims_only(table)); }
    acemq::sql::Database& db() override { return database_; }
    std::unique_ptr<acemq::sql::Database> unreachable() override {
        // A file in a directory that does not exist: SQLite cannot open it.
        return std::make_unique<acemq::sqlite::Database>((dir_.path() / "gone" / "claims.db").string());
    }

private:
    testing_support::TempDir dir_{"claims"};
    acemq::sqlite::Database database_{(dir_.path() / "claims.db").string()};
};

class PostgresTarget final : public Target {
public:
    PostgresTarget() { acemq::create_schema(database_, claims_only(table)); }
    ~PostgresTarget() override {
        try {
            database_.connect()->execute("DROP TABLE IF EXISTS " + table);
        } catch (const std::exception& error) {
            // A destructor cannot fail the test; the table's name is unique, so say so and go on.
            std::cerr << "could not drop the test table " << table << ": " << error.what() << '\n';
        }
    }
    acemq::sql::Database& db() override { return database_; }
    std::unique_ptr<acemq::sql::Database> unreachable() override {
        // A socket directory of our own where no server listens.
        return std::make_unique<acemq::postgres::Database>(
            "postgresql://acemq:secret@/claims?host=" + nowhere_.path().string() + "&connect_timeout=5");
    }

private:
    acemq::postgres::Database database_{testing_support::postgres_url()};
    testing_support::TempDir nowhere_{"claims-nowhere"};
};

Bytes pattern(std::size_t size) {
    Bytes out(size);
    for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<std::byte>((i * 131 + i / 256) & 0xFF);
    return out;
}

Bytes claimed_body(std::string_view key) {
    Bytes out{std::byte{0xAC}, std::byte{0x01}, std::byte{0x01}};
    for (char c : key) out.push_back(static_cast<std::byte>(c));
    return out;
}

}  // namespace

#define CLAIMS_SQL_TEST(name, body)                         \
    static void body(Target& target);                       \
    TEST_CASE(name " (SQLite)", "[claims][sqlite]") {       \
        SqliteTarget target;                                \
        body(target);                                       \
    }                                                       \
    TEST_CASE(name " (PostgreSQL)", "[claims][postgres]") { \
        PostgresTarget target;                              \
        body(target);                                       \
    }                                                       \
    static void body(Target& target)

CLAIMS_SQL_TEST("payloads are kept under fresh UUIDs and read back byte for byte until removed", round_trip) {
    SqlClaimCheckStore store{target.db(), {.table = target.table}};
    CHECK(store.table() == target.table);
    const Bytes large = pattern(1'000'000);  // every byte value, zeros included
    const std::string key = store.put(large);
    const std::string empty_key = store.put(Bytes{});
    CHECK(acemq::is_canonical_uuid(key));
    CHECK(key != empty_key);
    CHECK(store.get(key) == large);
    CHECK(store.get(empty_key) == Bytes{});
    CHECK(store.size() == 2);
    CHECK_FALSE(store.get(acemq::new_uuid()).has_value());

    store.remove(key);
    store.remove(key);  // gone already: no error
    CHECK_FALSE(store.get(key).has_value());
    CHECK(store.size() == 1);

    // Through the codec, as a consumer reads it.
    auto shared = std::make_shared<SqlClaimCheckStore>(target.db(), acemq::SqlClaimCheckOptions{.table = target.table});
    const acemq::ClaimCheckCodec codec(std::make_shared<acemq::BytesCodec>(), shared, 1024);
    const Bytes body = codec.encode(acemq::Value(large));
    CHECK(body.size() == 3 + 36);
    CHECK(codec.decode(body, "") == acemq::Value(large));
}

CLAIMS_SQL_TEST("a key that is no key of the store is refused before any statement, and parks through the codec",
                hostile_keys) {
    auto store = std::make_shared<SqlClaimCheckStore>(target.db(), acemq::SqlClaimCheckOptions{.table = target.table});
    const std::string kept = store->put(pattern(10));
    for (const std::string& bad : std::vector<std::string>{"../../etc/passwd", "", "x' OR '1'='1", "a b", ".hidden",
                                                           std::string(129, 'a'), std::string("k\0k", 3)}) {
        CAPTURE(bad);
        CHECK_THROWS_WITH(store->get(bad), Catch::Contains("is not a key this claim-check store issued"));
        CHECK_THROWS_AS(store->remove(bad), acemq::InvalidArgument);
    }
    CHECK(store->size() == 1);
    CHECK(store->get(kept) == pattern(10));

    const acemq::ClaimCheckCodec codec(std::make_shared<acemq::BytesCodec>(), store);
    CHECK_THROWS_AS(codec.decode(claimed_body("x' OR '1'='1"), ""), acemq::DecodeError);
    CHECK_THROWS_WITH(codec.decode(claimed_body(acemq::new_uuid()), ""), Catch::Contains("not in the store"));
}

CLAIMS_SQL_TEST("a payload kept in the caller's transaction exists exactly when it commits", transaction) {
    SqlClaimCheckStore store{target.db(), {.table = target.table}};
    std::string rolled_back;
    {
        acemq::sql::Transaction tx = target.db().begin();
        rolled_back = store.put(pattern(100), tx);
        CHECK(store.get(rolled_back, tx) == pattern(100));
        tx.rollback();
    }
    CHECK_FALSE(store.get(rolled_back).has_value());
    std::string committed;
    {
        acemq::sql::Transaction tx = target.db().begin();
        committed = store.put(pattern(100), tx);
        tx.commit();
    }
    CHECK(store.get(committed) == pattern(100));
    {
        acemq::sql::Transaction tx = target.db().begin();
        store.remove(committed, tx);
        tx.commit();
    }
    CHECK_FALSE(store.get(committed).has_value());
}

CLAIMS_SQL_TEST("remove_older_than removes by when a payload was stored", by_age) {
    SqlClaimCheckStore store{target.db(), {.table = target.table}};
    const std::string key = store.put(pattern(10));
    CHECK(store.remove_older_than(std::chrono::hours(1)) == 0);
    CHECK(store.get(key).has_value());
    CHECK(store.remove_older_than(0ms) == 1);
    CHECK_FALSE(store.get(key).has_value());
    CHECK_THROWS_AS(store.remove_older_than(-1ms), acemq::InvalidArgument);
}

CLAIMS_SQL_TEST("a database that fails or cannot be reached is a StoreUnavailableError, never a missing payload",
                failures) {
    // No such table: the database answers, with an error.
    auto missing =
        std::make_shared<SqlClaimCheckStore>(target.db(), acemq::SqlClaimCheckOptions{.table = "acemq_no_claims"});
    const std::string key = acemq::new_uuid();
    CHECK_THROWS_WITH(missing->get(key), Catch::StartsWith("acemq: cannot read a payload in the claim-check table "
                                                           "acemq_no_claims: "));
    CHECK_THROWS_AS(missing->put(pattern(10)), acemq::StoreUnavailableError);
    CHECK_THROWS_AS(missing->remove(key), acemq::StoreUnavailableError);
    const acemq::ClaimCheckCodec codec(std::make_shared<acemq::BytesCodec>(), missing);
    CHECK_THROWS_AS(codec.decode(claimed_body(key), ""), acemq::StoreUnavailableError);
    // In the caller's transaction, the database's own error.
    {
        auto connection = target.db().connect();
        CHECK_THROWS_AS(missing->get(key, *connection), acemq::sql::DatabaseError);
    }

    // Nobody there: no password in what is said.
    const auto gone = target.unreachable();
    SqlClaimCheckStore unreachable{*gone, {.table = target.table}};
    try {
        unreachable.get(key);
        FAIL("read from a database that cannot be reached");
    } catch (const acemq::StoreUnavailableError& error) {
        CHECK_THAT(error.what(),
                   Catch::StartsWith("acemq: cannot read a payload in the claim-check table " + target.table + ": "));
        CHECK_THAT(error.what(), !Catch::Contains("secret"));
    }
}

TEST_CASE("the claims table: named on request, its DDL for both dialects, its name checked", "[claims][schema]") {
    CHECK(acemq::schema_ddl(acemq::sql::Dialect::sqlite).size() == 8);  // left out unless named
    const auto sqlite = acemq::schema_ddl(acemq::sql::Dialect::sqlite, claims_only("acemq_claims"));
    const auto postgres = acemq::schema_ddl(acemq::sql::Dialect::postgres, claims_only("acemq_claims"));
    CHECK(sqlite ==
          std::vector<std::string>{"CREATE TABLE IF NOT EXISTS acemq_claims (\n"
                                   "    claim_key VARCHAR(128) NOT NULL PRIMARY KEY,\n"
                                   "    payload BLOB NOT NULL,\n"
                                   "    stored_at BIGINT NOT NULL\n"
                                   ")",
                                   "CREATE INDEX IF NOT EXISTS acemq_claims_stored ON acemq_claims (stored_at)"});
    REQUIRE(postgres.size() == 2);
    CHECK_THAT(postgres[0], Catch::Contains("    payload BYTEA NOT NULL,\n"));
    CHECK(postgres[1] == sqlite[1]);
    CHECK(acemq::schema_ddl(acemq::sql::Dialect::sqlite, {.claims = "acemq_claims"}).size() == 10);

    CHECK_THROWS_AS(acemq::schema_ddl(acemq::sql::Dialect::sqlite, claims_only("claims; DROP TABLE x")),
                    acemq::InvalidArgument);
    CHECK_THROWS_AS(
        acemq::schema_ddl(acemq::sql::Dialect::sqlite, {.outbox = "acemq_claims_stored", .claims = "acemq_claims"}),
        acemq::InvalidArgument);
    CHECK(acemq::schema_ddl(acemq::sql::Dialect::postgres, claims_only(std::string(56, 'c'))).size() ==
          2);  // _stored: 63
    CHECK_THROWS_AS(acemq::schema_ddl(acemq::sql::Dialect::postgres, claims_only(std::string(57, 'c'))),
                    acemq::InvalidArgument);
    acemq::sqlite::Database unused{":memory:"};
    CHECK_THROWS_AS(SqlClaimCheckStore(unused, {.table = "claims; DROP TABLE x"}), acemq::InvalidArgument);
    CHECK_THROWS_AS(SqlClaimCheckStore(unused, {.table = std::string(57, 'c')}), acemq::InvalidArgument);
}
