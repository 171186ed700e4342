// The SQL outbox on SQLite (temporary files) and PostgreSQL (ACEMQ_TEST_POSTGRES_URL, which
// scripts/test sets after starting a throw-away server): the family's pinned behaviours
// (docs/patterns.md §8, items 25-30 and 39) and what this store adds, leases that make
// several relays on one table safe. Every test runs on both databases.
#include "outbox_support.hpp"

#include "../../support/databases.hpp"

#include <acemq/stores/postgres.hpp>
#include <acemq/stores/sql_outbox_store.hpp>
#include <acemq/stores/sqlite.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

using namespace outbox_test;
using acemq::OutboxRelay;
using acemq::SqlOutboxStore;
using testing_support::postgres_url;
using testing_support::unique_suffix;
namespace sql = acemq::sql;

namespace {

// The outbox table of docs/patterns.md §3.3 with the two lease columns this store needs.
void create_outbox(sql::Connection& connection, const std::string& table, const std::string& extra = "") {
    const std::string blob = connection.dialect() == sql::Dialect::postgres ? "BYTEA" : "BLOB";
    connection.execute("CREATE TABLE " + table +
                       " (id VARCHAR(64) NOT NULL PRIMARY KEY, exchange_name VARCHAR(255) NOT NULL,"
                       " routing_key VARCHAR(255) NOT NULL, body " +
                       blob +
                       " NOT NULL,"
                       " content_type VARCHAR(255) NOT NULL, headers TEXT NOT NULL, created_at BIGINT NOT NULL,"
                       " attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,"
                       " claimed_by VARCHAR(64), claim_expires_at BIGINT" +
                       extra + ")");
    connection.execute("CREATE INDEX " + table + "_pending ON " + table + " (created_at)");
}

// A database and a fresh outbox table (plus a business table) for one test; dropped after.
class Backend {
public:
    virtual ~Backend() = default;
    virtual sql::Database& db() = 0;
    std::string table = "outbox_" + unique_suffix();
    std::string business = "orders_" + unique_suffix();

protected:
    void create(const std::string& extra = "") {
        auto connection = db().connect();
        create_outbox(*connection, table, extra);
        connection->execute("CREATE TABLE " + business + " (id VARCHAR(64) NOT NULL PRIMARY KEY)");
    }
    void drop() {
        try {
            auto connection = db().connect();
            connection->execute("DROP TABLE IF EXISTS " + table);
            connection->execute("DROP TABLE IF EXISTS " + business);
        } catch (const std::exception& error) {  // a leftover table in a throw-away database harms nothing
            WARN("could not drop the test tables: " << error.what());
        }
    }
};

class SqliteBackend final : public Backend {
public:
    explicit SqliteBackend(const std::string& extra = "")
        : path_((std::filesystem::temp_directory_path() / ("acemq-outbox-" + unique_suffix() + ".db")).string()),
          db_(path_) {
        create(extra);
    }
    ~SqliteBackend() override {
        for (const char* ending : {"", "-wal", "-shm", "-journal"}) std::remove((path_ + ending).c_str());
    }
    sql::Database& db() override { return db_; }

private:
    std::string path_;
    acemq::sqlite::Database db_;
};

class PostgresBackend final : public Backend {
public:
    explicit PostgresBackend(const std::string& extra = "") : db_(postgres_url()) { create(extra); }
    ~PostgresBackend() override { drop(); }
    sql::Database& db() override { return db_; }

private:
    acemq::postgres::Database db_;
};

std::int64_t rows_in(sql::Connection& connection, const std::string& table) {
    return connection.query("SELECT COUNT(*) FROM " + table).at(0).at(0).as_integer();
}

// A record with application headers of every kind the store keeps, made `age` ago.
acemq::OutboxRecord rich_record(acemq::Bus& bus, const std::string& queue, const std::string& order_id,
                                std::chrono::milliseconds age = 0ms) {
    acemq::Envelope envelope = acemq::Envelope::for_new_message(queue, bus.origin());
    envelope.causation = "cart-9";
    acemq::set_header(envelope, "tenant", "acme");
    acemq::set_header(envelope, "priority", std::int64_t{7});
    acemq::set_header(envelope, "express", true);
    acemq::set_header(envelope, "weight", 2.5);
    acemq::set_header(envelope, "tags", acemq::FieldArray{"a", std::int64_t{1}});
    acemq::set_header(envelope, "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    acemq::OutboxRecord made = acemq::record_to_queue(bus, queue, Order{order_id, 100}, {.envelope = envelope});
    made.created_at -= age;
    return made;
}

void add_committed(SqlOutboxStore& store, sql::Database& db, const acemq::OutboxRecord& made) {
    sql::Transaction tx = db.begin();
    store.add(made, tx);
    tx.commit();
}

}  // namespace

// add() has no overload without the caller's connection.
template <class Store>
concept adds_without_a_connection = requires(Store& store, const acemq::OutboxRecord& made) { store.add(made); };
static_assert(!adds_without_a_connection<SqlOutboxStore>);

#define OUTBOX_SQL_TEST_TAGGED(name, tags, body)                 \
    static void body(Backend& backend);                          \
    TEST_CASE(name " (SQLite)", "[outbox][sqlite]" tags) {       \
        SqliteBackend backend;                                   \
        body(backend);                                           \
    }                                                            \
    TEST_CASE(name " (PostgreSQL)", "[outbox][postgres]" tags) { \
        PostgresBackend backend;                                 \
        body(backend);                                           \
    }                                                            \
    static void body(Backend& backend)
#define OUTBOX_SQL_TEST(name, body) OUTBOX_SQL_TEST_TAGGED(name, "", body)

OUTBOX_SQL_TEST("a rolled-back record never existed; a committed one round-trips every field (25)", round_trip) {
    Fixture fixture;
    SqlOutboxStore store{backend.db(), {.table = backend.table}};
    const auto made = rich_record(fixture.bus, fixture.queue, "o-1");
    {
        sql::Transaction tx = backend.db().begin();
        tx.connection().execute("INSERT INTO " + backend.business + " (id) VALUES (?)", {"o-1"});
        store.add(made, tx);
        tx.rollback();
    }
    auto other = backend.db().connect();
    CHECK(rows_in(*other, backend.table) == 0);
    CHECK(rows_in(*other, backend.business) == 0);
    CHECK(store.count() == 0);
    OutboxRelay relay{fixture.bus, store};
    CHECK(relay.sweep() == 0);
    CHECK(fixture.transport().sent().empty());

    {
        sql::Transaction tx = backend.db().begin();
        tx.connection().execute("INSERT INTO " + backend.business + " (id) VALUES (?)", {"o-1"});
        store.add(made, tx);
        CHECK(rows_in(*other, backend.table) == 0);  // not before the commit
        tx.commit();
    }
    CHECK(rows_in(*other, backend.business) == 1);
    const auto pending = store.pending(0);
    REQUIRE(pending.size() == 1);
    CHECK(pending[0] == made);
    CHECK(pending[0].headers.at(acemq::header::version).holds<std::int32_t>());
    CHECK(pending[0].headers.at(acemq::header::attempt).holds<std::int32_t>());
    CHECK(pending[0].headers.at(acemq::header::first_seen).holds<std::int64_t>());
}

OUTBOX_SQL_TEST("add refuses a connection outside a transaction, an empty id and a bytes header (26, 39)", refusals) {
    Fixture fixture;
    SqlOutboxStore store{backend.db(), {.table = backend.table}};
    auto plain = backend.db().connect();
    CHECK_THAT(what_of<acemq::Error>([&] { store.add(order_record(fixture.bus, fixture.queue, "o-1"), *plain); }),
               Catch::Matchers::Contains("no transactional connection"));
    sql::Transaction tx = backend.db().begin();
    acemq::OutboxRecord nameless = order_record(fixture.bus, fixture.queue, "o-2");
    nameless.id.clear();
    CHECK_THAT(what_of<acemq::InvalidArgument>([&] { store.add(nameless, tx); }),
               Catch::Matchers::Contains("an outbox record needs an id"));
    acemq::OutboxRecord with_bytes = order_record(fixture.bus, fixture.queue, "o-3");
    with_bytes.headers.insert_or_assign("blob", acemq::Bytes{std::byte{1}});
    CHECK_THAT(what_of<acemq::InvalidArgument>([&] { store.add(with_bytes, tx); }),
               Catch::Matchers::Contains("holds bytes"));
    tx.commit();
    CHECK(store.count() == 0);
    CHECK_THROWS_AS(SqlOutboxStore(backend.db(), {.table = "orders; DROP TABLE users"}), acemq::InvalidArgument);
    CHECK_THROWS_AS(SqlOutboxStore(backend.db(), {.table = backend.table, .max_attempts = 0}), acemq::InvalidArgument);
    CHECK_THROWS_AS(SqlOutboxStore(backend.db(), {.table = backend.table, .lease = 0ms}), acemq::InvalidArgument);
}

OUTBOX_SQL_TEST("the same record twice in one transaction is one row (27)", twice) {
    Fixture fixture;
    SqlOutboxStore store{backend.db(), {.table = backend.table}};
    const auto made = order_record(fixture.bus, fixture.queue, "o-1");
    auto changed = made;
    changed.routing_key = "elsewhere";
    sql::Transaction tx = backend.db().begin();
    store.add(made, tx);
    store.add(changed, tx);
    tx.commit();
    CHECK(store.count() == 1);
    CHECK(store.pending(0).at(0).routing_key == fixture.queue);
}

OUTBOX_SQL_TEST("a database error is raised, never read as a duplicate", database_error) {
    (void)backend;
    Fixture fixture;
    std::unique_ptr<Backend> strict;
    if (backend.db().dialect() == sql::Dialect::sqlite)
        strict = std::make_unique<SqliteBackend>(", CHECK (routing_key <> 'forbidden')");
    else
        strict = std::make_unique<PostgresBackend>(", CHECK (routing_key <> 'forbidden')");
    SqlOutboxStore store{strict->db(), {.table = strict->table}};
    sql::Transaction tx = strict->db().begin();
    CHECK_THROWS_AS(store.add(order_record(fixture.bus, "forbidden", "o-1"), tx), sql::DatabaseError);
}

OUTBOX_SQL_TEST("pending is oldest first (created_at, then id), bounded, and claims what it hands out (28)",
                oldest_first) {
    Fixture fixture;
    SqlOutboxStore store{backend.db(), {.table = backend.table}};
    auto tie_c = order_record(fixture.bus, fixture.queue, "c", 2s);
    tie_c.id = "c-record";
    auto tie_b = order_record(fixture.bus, fixture.queue, "b", 2s);
    tie_b.id = "b-record";
    tie_b.created_at = tie_c.created_at;
    const auto newest = order_record(fixture.bus, fixture.queue, "d", 1s);
    const auto oldest = order_record(fixture.bus, fixture.queue, "a", 3s);
    for (const auto& made : {newest, tie_c, oldest, tie_b}) add_committed(store, backend.db(), made);

    CHECK(ids_of(store.pending(2)) == std::vector<std::string>{oldest.id, "b-record"});
    // Those two are this caller's until published, failed, released or their lease ends.
    CHECK(ids_of(store.pending(0)) == std::vector<std::string>{"c-record", newest.id});
    CHECK(store.pending(0).empty());
    const std::vector<std::string> back{oldest.id, "b-record", "c-record", newest.id};
    store.release(back);
    CHECK(ids_of(store.pending(0)) == back);
}

OUTBOX_SQL_TEST("mark_published removes; twice is fine (29)", removal) {
    Fixture fixture;
    SqlOutboxStore store{backend.db(), {.table = backend.table}};
    const auto made = order_record(fixture.bus, fixture.queue, "o-1");
    add_committed(store, backend.db(), made);
    store.mark_published(made.id);
    store.mark_published(made.id);
    CHECK(store.count() == 0);
}

OUTBOX_SQL_TEST("record_failure counts, keeps the reason cut to 1000 bytes, releases, and retires at the limit (30)",
                failures) {
    Fixture fixture;
    SqlOutboxStore store{backend.db(), {.table = backend.table, .max_attempts = 2}};
    const auto made = order_record(fixture.bus, fixture.queue, "o-1");
    add_committed(store, backend.db(), made);
    REQUIRE(store.pending(0).size() == 1);
    std::string long_error;
    for (int i = 0; i < 600; ++i) long_error += "\xC3\xA9";  // é, two bytes
    store.record_failure(made.id, long_error);
    const auto again = store.pending(0);  // released: due again at once
    REQUIRE(again.size() == 1);
    CHECK(again[0].attempts == 1);
    CHECK(again[0].last_error == long_error.substr(0, 1000));
    store.record_failure(made.id, "nacked");
    CHECK(store.pending(0).empty());
    const auto retired = store.retired();
    REQUIRE(retired.size() == 1);
    CHECK(retired[0].attempts == 2);
    CHECK(retired[0].last_error == "nacked");
    CHECK(store.count() == 1);
}

OUTBOX_SQL_TEST("a claim is one relay's until its lease runs out; then another takes it over", lease) {
    Fixture fixture;
    SqlOutboxStore first{backend.db(), {.table = backend.table, .lease = 100ms}};
    SqlOutboxStore second{backend.db(), {.table = backend.table}};
    const auto made = order_record(fixture.bus, fixture.queue, "o-1");
    add_committed(first, backend.db(), made);
    REQUIRE(first.pending(0).size() == 1);
    CHECK(second.pending(0).empty());
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    std::vector<acemq::OutboxRecord> taken;
    while (taken.empty() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(20ms);
        taken = second.pending(0);
    }
    CHECK(ids_of(taken) == std::vector{made.id});
}

OUTBOX_SQL_TEST("a failed sweep gives back the rest of its batch at once, so nothing overtakes the failure",
                give_back) {
    Fixture fixture;
    fixture.bus.declare(acemq::Topology{}.queue("orders.nacked"));
    SqlOutboxStore store{backend.db(), {.table = backend.table}};
    add_committed(store, backend.db(), order_record(fixture.bus, "orders.nacked", "poison", 3s));
    add_committed(store, backend.db(), order_record(fixture.bus, fixture.queue, "good-1", 2s));
    add_committed(store, backend.db(), order_record(fixture.bus, fixture.queue, "good-2", 1s));
    OutboxRelay relay{fixture.bus, store};
    CHECK_THROWS_AS(relay.sweep(), acemq::PublishError);
    SqlOutboxStore other{backend.db(), {.table = backend.table}};
    CHECK(other.pending(0).size() == 3);  // none waits for a lease
}

OUTBOX_SQL_TEST("a relay publishes committed records from the table and removes them", relay_sweeps) {
    Fixture fixture;
    SqlOutboxStore store{backend.db(), {.table = backend.table}};
    const auto made = rich_record(fixture.bus, fixture.queue, "o-1");
    add_committed(store, backend.db(), made);
    OutboxRelay relay{fixture.bus, store};
    CHECK(relay.sweep() == 1);
    CHECK(store.count() == 0);
    const auto delivered = fixture.drain();
    REQUIRE(delivered.size() == 1);
    CHECK(delivered[0].message_id() == made.id);
    CHECK(delivered[0].headers() == made.headers);
    CHECK(std::ranges::equal(delivered[0].body(), made.body));
    CHECK(order_id_of(delivered[0]) == "o-1");
}

OUTBOX_SQL_TEST("two running relays on one table publish 200 records exactly once overall", two_relays) {
    Fixture fixture;
    constexpr int total = 200;
    {
        SqlOutboxStore writer{backend.db(), {.table = backend.table}};
        sql::Transaction tx = backend.db().begin();
        for (int i = 0; i < total; ++i)
            writer.add(order_record(fixture.bus, fixture.queue, "o-" + std::to_string(i)), tx);
        tx.commit();
    }
    SqlOutboxStore first_store{backend.db(), {.table = backend.table}};
    SqlOutboxStore second_store{backend.db(), {.table = backend.table}};
    OutboxRelay first{fixture.bus, first_store, {.interval = 1ms, .batch = 7}};
    OutboxRelay second{fixture.bus, second_store, {.interval = 1ms, .batch = 7}};
    // Both take part whatever the scheduler does: the first publishes are held until each
    // relay has claimed a batch and is publishing from it (SQLite's busy wait backs off, and
    // with synchronous=FULL one relay could otherwise win the write lock every time).
    fixture.transport().hold(true);
    first.start();
    second.start();
    const bool both = fixture.transport().wait_entered(2, 10s);
    fixture.transport().hold(false);
    REQUIRE(both);
    const bool all = fixture.wait_depth(fixture.queue, total, 30s);
    first.close();
    second.close();
    REQUIRE(all);
    CHECK(first_store.count() == 0);
    CHECK(first.published() + second.published() == total);
    CHECK(first.published() > 0);
    CHECK(second.published() > 0);
    std::set<std::string> ids;
    const auto delivered = fixture.drain();
    for (const auto& message : delivered) ids.insert(std::string(message.message_id()));
    CHECK(delivered.size() == total);
    CHECK(ids.size() == total);
}

// Rows written by hand or by another program that this store cannot read back. Each is a
// failed attempt like a nacked publish: it holds the rows behind it for max_attempts sweeps
// (the family's rule: a sweep stops at its first failure, so nothing overtakes it), then
// retires and the rest go out.
OUTBOX_SQL_TEST_TAGGED("an unreadable row is a failed attempt naming its id, retires, and stops blocking the rest",
                       "[reliability]", unreadable_rows) {
    Fixture fixture;
    constexpr int max_attempts = 3;
    auto events = std::make_shared<Events>();
    SqlOutboxStore store{backend.db(), {.table = backend.table, .max_attempts = max_attempts}};
    const bool sqlite = backend.db().dialect() == sql::Dialect::sqlite;
    const auto good = order_record(fixture.bus, fixture.queue, "good", 1s);
    // id -> (body, headers); oldest first.
    std::vector<std::pair<std::string, std::pair<sql::Value, std::string>>> bad{
        {"bad-json", {good.body, "{\"x-acemq-id\": "}},
        {"not-an-object", {good.body, "[1, 2]"}},
    };
    if (sqlite) bad.push_back({"text-body", {sql::Value("a body stored as TEXT"), "{}"}});  // BYTEA cannot hold text
    {
        auto connection = backend.db().connect();
        std::int64_t created = good.created_at.time_since_epoch().count() - 10'000;
        for (const auto& [id, row] : bad)
            connection->execute("INSERT INTO " + backend.table +
                                    " (id, exchange_name, routing_key, body, content_type, headers, created_at)"
                                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                                {id, "", fixture.queue, row.first, "application/msgpack", row.second, created++});
    }
    add_committed(store, backend.db(), good);

    OutboxRelay relay{fixture.bus, store, {.observer = events}};
    for (const auto& [id, row] : bad) {
        for (int attempt = 1; attempt <= max_attempts; ++attempt) {
            INFO("row " << id << ", attempt " << attempt);
            const std::string error = what_of<acemq::DecodeError>([&] { relay.sweep(); });
            CHECK_THAT(error, Catch::Matchers::Contains("outbox record " + id));
            CHECK(fixture.drain().empty());  // nothing overtakes the failing row
        }
    }
    CHECK(relay.sweep() == 1);
    const auto delivered = fixture.drain();
    REQUIRE(delivered.size() == 1);
    CHECK(delivered[0].message_id() == good.id);

    CHECK(relay.failed() == bad.size() * max_attempts);
    const auto seen = events->seen();
    REQUIRE(seen.size() == bad.size() * max_attempts + 1);
    CHECK(seen[0].outcome == acemq::RelayOutcome::failed);
    CHECK(seen[0].id == "bad-json");
    CHECK_THAT(seen[0].error, Catch::Matchers::Contains("outbox record bad-json"));
    const auto retired = store.retired();  // readable for a person, bad rows included
    REQUIRE(retired.size() == bad.size());
    for (std::size_t i = 0; i < bad.size(); ++i) {
        INFO("row " << bad[i].first);
        CHECK(retired[i].id == bad[i].first);
        CHECK(retired[i].attempts == max_attempts);
        CHECK_THAT(retired[i].last_error, Catch::Matchers::Contains("outbox record " + bad[i].first));
        CHECK_THAT(retired[i].unreadable, Catch::Matchers::Contains("outbox record " + bad[i].first));
    }
    CHECK(store.count() == bad.size());
    if (sqlite) CHECK_THAT(retired.back().unreadable, Catch::Matchers::Contains("blob"));
}
