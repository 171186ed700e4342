// SqlIdempotencyStore (docs/patterns.md §1.4; §8 items 15-24) on SQLite and PostgreSQL:
// every test runs on both, with several stores (each its own node) and several connections
// on one database, as separate consumer processes would share it.
#include "../../support/handmade.hpp"
#include "sql_targets.hpp"

#include <catch2/catch.hpp>

#include <acemq/idempotency.hpp>
#include <acemq/stores/sql_idempotency_store.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>
#include "../../support/messages.hpp"

using namespace std::chrono_literals;
using acemq::AckKind;
using acemq::Claim;
using acemq::Message;
using acemq::SqlIdempotencyStore;
using handmade::contains;
using handmade::message_of;
using sql_targets::PostgresTarget;
using sql_targets::SqliteTarget;

namespace {

using test_messages::Payment;

// Long enough for a lease of that length to have run out on any machine's clock.
void outlive(std::chrono::milliseconds lease) { std::this_thread::sleep_for(lease + 20ms); }

// A SQL store whose forget fails, as a database going away between two statements would.
class ForgetFails final : public acemq::IdempotencyStore {
public:
    explicit ForgetFails(SqlIdempotencyStore& store) : store_(store) {}
    Claim claim(const std::string& key) override { return store_.claim(key); }
    void confirm(const std::string& key) override { store_.confirm(key); }
    void forget(const std::string&) override { throw acemq::sql::ConnectionError("the connection broke"); }

private:
    SqlIdempotencyStore& store_;
};

}  // namespace

TEMPLATE_TEST_CASE("15 SQL: stores racing first_time on one key: exactly one wins, one row", "[sql]", SqliteTarget,
                   PostgresTarget) {
    TestType target;
    SqlIdempotencyStore first{target.database(), {.table = target.table()}};
    SqlIdempotencyStore second{target.database(), {.table = target.table()}};
    CHECK(first.node() != second.node());
    const bool a = first.first_time("payment-1");
    const bool b = second.first_time("payment-1");
    CHECK(a != b);
    CHECK(first.size() == 1);
}

TEMPLATE_TEST_CASE("SQL: threads on their own connections race first_time: one winner per key", "[sql]", SqliteTarget,
                   PostgresTarget) {
    TestType target;
    constexpr int racers = 6;
    constexpr int keys = 20;
    std::vector<std::unique_ptr<SqlIdempotencyStore>> stores;
    for (int i = 0; i < racers; ++i)
        stores.push_back(std::make_unique<SqlIdempotencyStore>(target.database(),
                                                               acemq::SqlIdempotencyOptions{.table = target.table()}));
    std::atomic<int> winners{0};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < racers; ++i)
        threads.emplace_back([&, i] {
            for (int k = 0; k < keys; ++k) {
                try {
                    if (stores[i]->first_time("key-" + std::to_string(k))) ++winners;
                } catch (const std::exception& error) {
                    ++failures;  // counted and reported below: a race must not error either
                    UNSCOPED_INFO("first_time failed: " << error.what());
                }
            }
        });
    for (std::thread& thread : threads) thread.join();
    CHECK(failures == 0);
    CHECK(winners == keys);
    CHECK(stores[0]->size() == keys);
}

TEMPLATE_TEST_CASE("16 SQL: confirm, forget by others and by the owner", "[sql]", SqliteTarget, PostgresTarget) {
    TestType target;
    SqlIdempotencyStore mine{target.database(), {.table = target.table()}};
    SqlIdempotencyStore theirs{target.database(), {.table = target.table()}};

    CHECK(mine.first_time("confirmed"));
    mine.confirm("confirmed");
    CHECK(mine.is_confirmed("confirmed"));
    CHECK_FALSE(theirs.first_time("confirmed"));
    mine.forget("confirmed");  // a confirmation is never forgotten
    CHECK(mine.is_confirmed("confirmed"));
    CHECK(mine.claim("confirmed") == Claim::duplicate);

    CHECK(mine.first_time("held"));
    theirs.forget("held");  // not theirs to release
    CHECK(theirs.claim("held") == Claim::in_progress);
    mine.forget("held");
    CHECK(theirs.first_time("held"));
    CHECK_FALSE(mine.is_confirmed("held"));
    CHECK(mine.size() == 2);
}

TEMPLATE_TEST_CASE("17 SQL: an expired lease is taken over by another store", "[sql]", SqliteTarget, PostgresTarget) {
    TestType target;
    SqlIdempotencyStore dying{target.database(), {.table = target.table(), .claim_timeout = 1ms}};
    SqlIdempotencyStore next{target.database(), {.table = target.table()}};
    CHECK(dying.claim("payment-1") == Claim::claimed);
    outlive(1ms);
    CHECK(next.claim("payment-1") == Claim::claimed);
    CHECK(next.size() == 1);
    dying.forget("payment-1");  // no longer its claim
    CHECK(dying.claim("payment-1") == Claim::in_progress);
    CHECK(next.size() == 1);
}

TEMPLATE_TEST_CASE("18 SQL: claim answers for mine, theirs, my own again, and confirmed", "[sql]", SqliteTarget,
                   PostgresTarget) {
    TestType target;
    SqlIdempotencyStore mine{target.database(), {.table = target.table()}};
    SqlIdempotencyStore theirs{target.database(), {.table = target.table()}};
    CHECK(mine.claim("k") == Claim::claimed);
    CHECK(theirs.claim("k") == Claim::in_progress);
    CHECK(mine.claim("k") == Claim::in_progress);
    mine.confirm("k");
    CHECK(mine.claim("k") == Claim::duplicate);
    CHECK(theirs.claim("k") == Claim::duplicate);
}

// The lease is 1 s, not less: the second call must come while it holds, and under
// ThreadSanitizer on a loaded two-core machine two calls on PostgreSQL took more than 50 ms.
TEMPLATE_TEST_CASE("19 SQL through idempotent: a failed forget waits out a 1 s lease, then runs once more", "[sql]",
                   SqliteTarget, PostgresTarget) {
    handmade::CapturedLog log;  // the failed forget is logged; keep it out of the test output
    TestType target;
    SqlIdempotencyStore sql_store{target.database(), {.table = target.table(), .claim_timeout = 1s}};
    ForgetFails store{sql_store};
    int runs = 0;
    auto handler = acemq::idempotent(store, [&](const Message<Payment>&) {
        return ++runs == 1 ? acemq::retry(std::runtime_error("bank offline")) : acemq::accept();
    });
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    CHECK(handler(message).kind() == AckKind::retry);
    CHECK(handler(message).kind() == AckKind::in_progress);
    outlive(1s);
    CHECK(handler(message) == acemq::accept());
    CHECK(handler(message) == acemq::accept());
    CHECK(runs == 2);
    CHECK(sql_store.is_confirmed(message.envelope.id));
}

TEMPLATE_TEST_CASE("20 SQL: a confirmation outlives a 1 ms lease", "[sql]", SqliteTarget, PostgresTarget) {
    TestType target;
    SqlIdempotencyStore store{target.database(), {.table = target.table(), .claim_timeout = 1ms, .retention = 1h}};
    CHECK(store.claim("k") == Claim::claimed);
    store.confirm("k");
    outlive(1ms);
    CHECK(store.is_confirmed("k"));
    CHECK(store.claim("k") == Claim::duplicate);
}

TEMPLATE_TEST_CASE("SQL: past its retention a confirmation reads as not confirmed and is claimed again", "[sql]",
                   SqliteTarget, PostgresTarget) {
    TestType target;
    SqlIdempotencyStore store{target.database(), {.table = target.table(), .retention = 1ms}};
    CHECK(store.first_time("k"));
    store.confirm("k");
    outlive(1ms);
    CHECK_FALSE(store.is_confirmed("k"));
    CHECK(store.size() == 1);  // is_confirmed deletes nothing
    CHECK(store.claim("k") == Claim::claimed);
    CHECK(store.size() == 1);
}

TEMPLATE_TEST_CASE("21 SQL: purge_expired removes the expired lease only", "[sql]", SqliteTarget, PostgresTarget) {
    TestType target;
    SqlIdempotencyStore short_lease{target.database(), {.table = target.table(), .claim_timeout = 1ms}};
    SqlIdempotencyStore store{target.database(), {.table = target.table()}};
    CHECK(short_lease.first_time("expired"));
    short_lease.confirm("confirmed");
    CHECK(store.first_time("live"));
    outlive(1ms);
    CHECK(store.purge_expired() == 1);
    CHECK(store.size() == 2);
    CHECK(store.purge_expired() == 0);
}

TEMPLATE_TEST_CASE("22 SQL: an empty key is refused; confirming a key never claimed records it", "[sql]", SqliteTarget,
                   PostgresTarget) {
    TestType target;
    SqlIdempotencyStore store{target.database(), {.table = target.table()}};
    CHECK_THROWS_WITH(store.claim(""), Catch::Contains("cannot be empty"));
    CHECK_THROWS_AS(store.first_time(""), acemq::InvalidArgument);
    CHECK_THROWS_WITH(store.claim(std::string(256, 'k')), Catch::Contains("at most 255 bytes"));
    CHECK(store.first_time(std::string(255, 'k')));

    store.confirm("never claimed");
    CHECK(store.is_confirmed("never claimed"));
    CHECK(store.claim("never claimed") == Claim::duplicate);
    CHECK(store.size() == 2);
}

TEST_CASE("23 SQL: a store cannot be built without a database; bad settings are refused") {
    // The family's "built without a connection factory" error cannot happen here: the
    // Database is a constructor argument taken by reference.
    static_assert(!std::is_default_constructible_v<SqlIdempotencyStore>);
    static_assert(!std::is_constructible_v<SqlIdempotencyStore, acemq::SqlIdempotencyOptions>);

    SqliteTarget target;
    CHECK_THROWS_WITH(SqlIdempotencyStore(target.database(), {.table = "orders; DROP TABLE users"}),
                      Catch::Contains("a table name must be a plain SQL identifier"));
    CHECK_THROWS_AS(SqlIdempotencyStore(target.database(), {.table = ""}), acemq::InvalidArgument);
    CHECK_THROWS_AS(SqlIdempotencyStore(target.database(), {.table = "1outbox"}), acemq::InvalidArgument);
    CHECK_THROWS_AS(SqlIdempotencyStore(target.database(), {.table = std::string(100, 'a')}), acemq::InvalidArgument);
    CHECK_THROWS_WITH(SqlIdempotencyStore(target.database(), {.claim_timeout = 0ms}),
                      Catch::Contains("claim timeout must be positive"));
    CHECK_THROWS_WITH(SqlIdempotencyStore(target.database(), {.retention = -1s}),
                      Catch::Contains("retention must be positive"));

    SqlIdempotencyStore store{target.database()};
    CHECK(store.table() == "acemq_idempotency");
    CHECK(store.node().size() == 32);
    CHECK(store.node().find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEMPLATE_TEST_CASE("24 SQL: a failing insert is raised, not read as a duplicate; through idempotent it is a retry",
                   "[sql]", SqliteTarget, PostgresTarget) {
    TestType target;
    SqlIdempotencyStore store{target.database(), {.table = target.table()}};
    target.refuse_inserts();
    CHECK_THROWS_AS(store.claim("k"), acemq::sql::DatabaseError);
    CHECK_THROWS_WITH(store.first_time("k"), Catch::Contains("no claims today"));

    int runs = 0;
    auto handler = acemq::idempotent(store, [&](const Message<Payment>&) {
        ++runs;
        return acemq::accept();
    });
    const acemq::Ack ack = handler(message_of(Payment{"p-1", 4250}));
    REQUIRE(ack.kind() == AckKind::retry);
    CHECK(contains(acemq::describe(ack.failure()), "no claims today"));
    CHECK(runs == 0);
    CHECK(store.size() == 0);
}

TEMPLATE_TEST_CASE("SQL: a claim in the caller's transaction lives and dies with it", "[sql]", SqliteTarget,
                   PostgresTarget) {
    TestType target;
    SqlIdempotencyStore store{target.database(), {.table = target.table()}};
    {
        acemq::sql::Transaction tx = target.database().begin();
        CHECK(store.claim("rolled back", tx) == Claim::claimed);
        CHECK(store.size(tx) == 1);
        CHECK(tx.connection().in_transaction());  // the store neither committed nor ended it
        tx.rollback();
    }
    CHECK(store.size() == 0);
    {
        acemq::sql::Transaction tx = target.database().begin();
        CHECK(store.first_time("abandoned", tx));
    }  // destroyed without commit: rolled back
    CHECK(store.size() == 0);
    {
        acemq::sql::Transaction tx = target.database().begin();
        CHECK(store.first_time("committed", tx));
        store.confirm("committed", tx);
        CHECK(store.is_confirmed("committed", tx));
        tx.commit();
    }
    CHECK(store.claim("committed") == Claim::duplicate);
    CHECK(store.first_time("rolled back"));
    CHECK(store.first_time("abandoned"));
}

TEMPLATE_TEST_CASE("SQL: every member also runs on a connection the caller holds", "[sql]", SqliteTarget,
                   PostgresTarget) {
    TestType target;
    SqlIdempotencyStore store{target.database(), {.table = target.table(), .claim_timeout = 1ms}};
    std::unique_ptr<acemq::sql::Connection> connection = target.database().connect();
    CHECK(store.claim("a", *connection) == Claim::claimed);
    CHECK(store.claim("b", *connection) == Claim::claimed);
    store.forget("b", *connection);
    store.confirm("c", *connection);
    CHECK(store.is_confirmed("c", *connection));
    outlive(1ms);
    CHECK(store.size(*connection) == 2);
    CHECK(store.purge_expired(*connection) == 1);
    CHECK(store.size() == 1);  // autocommitted: another connection sees it
}

// Issue 27: what idempotent() logs when a delivery meets a live claim says when it ends.
TEMPLATE_TEST_CASE("SQL: lease_left says how long a live claim still holds, and nothing once confirmed", "[sql]",
                   SqliteTarget, PostgresTarget) {
    TestType target;
    SqlIdempotencyStore mine{target.database(), {.table = target.table(), .claim_timeout = 5min}};
    SqlIdempotencyStore theirs{target.database(), {.table = target.table()}};
    CHECK_FALSE(mine.lease_left("k").has_value());
    REQUIRE(mine.claim("k") == Claim::claimed);
    const auto left = theirs.lease_left("k");
    REQUIRE(left.has_value());
    CHECK(*left > 4min);
    CHECK(*left <= 5min);
    mine.confirm("k");
    CHECK_FALSE(theirs.lease_left("k").has_value());
}
