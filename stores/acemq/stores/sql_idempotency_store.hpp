// An idempotency store in a SQL table (docs/patterns.md §1.4), shared by every process that
// uses the same database: the table's primary key makes a claim atomic across all of them.
// SQLite and PostgreSQL run the same statements; create the table with create_schema (or
// copy schema_ddl into your migrations).
//
//   acemq::SqlIdempotencyStore seen{db, {.claim_timeout = 5min}};
//   bus.consume<Payment>("payments.new", acemq::idempotent(seen, take_payment));
//   seen.purge_expired();                                  // on a schedule, e.g. hourly
//
// A row is CLAIMED by one store instance (each draws a random node id) until its lease,
// `claim_timeout`, runs out — then any instance may take it over — or CONFIRMED, a
// duplicate for `retention`. Times are epoch milliseconds from this machine's clock, so
// keep the clocks of the machines sharing a table in sync (NTP); a skew shortens or
// lengthens leases by as much.
//
// Every member comes in two forms:
//   - without a connection: opens one from the Database, runs in a transaction of its own,
//     commits on success, rolls back on failure, closes it;
//   - with a `sql::Connection&` (a sql::Transaction converts): runs on it inline, inside the
//     caller's transaction, and never commits, rolls back or closes it. Claim and confirm
//     in the transaction that does the work and the claim is durable exactly when the
//     work is:
//
//       acemq::sql::Transaction tx = db.begin();
//       if (seen.claim(m.envelope.id, tx) != acemq::Claim::claimed) ...
//       charge(tx, m.payload);
//       seen.confirm(m.envelope.id, tx);
//       tx.commit();
//
// A database error (lock timeout, "database is locked", a trigger) is thrown as
// sql::DatabaseError, never read as "already claimed": through idempotent() it is a retry.
//
// Thread-safe: the store keeps no state but its settings; the Database must outlive it and
// be safe to ask for connections from several threads (the shipped drivers are). A
// connection passed in is used on the calling thread only.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include <acemq/idempotency.hpp>
#include <acemq/sql.hpp>

namespace acemq {

inline constexpr std::chrono::milliseconds default_claim_timeout = std::chrono::minutes(5);
inline constexpr std::chrono::milliseconds default_idempotency_retention = std::chrono::hours(24);

struct SqlIdempotencyOptions {
    std::string table = "acemq_idempotency";
    // How long a claim holds a key: a consumer that dies holding it blocks that message
    // this long. Longer than your slowest handler, or a slow one is run twice.
    std::chrono::milliseconds claim_timeout = default_claim_timeout;
    // How long a confirmed key is a duplicate. Longer than any redelivery may take.
    std::chrono::milliseconds retention = default_idempotency_retention;
};

class SqlIdempotencyStore final : public IdempotencyStore {
public:
    // Throws InvalidArgument for a table name schema_ddl would refuse (check_table_name) or a
    // timeout or retention that is not positive. Touches no table.
    explicit SqlIdempotencyStore(sql::Database& database, SqlIdempotencyOptions options = {});

    // Insert wins; else take over an expired row; else duplicate (CONFIRMED) or in_progress
    // (CLAIMED, by anyone including this store, or the row just vanished). Throws
    // InvalidArgument for an empty key or one longer than 255 bytes (the column's width).
    Claim claim(const std::string& key) override;
    Claim claim(const std::string& key, sql::Connection& connection);
    bool first_time(const std::string& key);
    bool first_time(const std::string& key, sql::Connection& connection);
    // Records the key CONFIRMED for `retention`, whoever claimed it; a key never claimed (or
    // purged meanwhile) is recorded anyway: the work happened.
    void confirm(const std::string& key) override;
    void confirm(const std::string& key, sql::Connection& connection);
    // Deletes this store's own CLAIMED row; never another node's claim, never a confirmation.
    void forget(const std::string& key) override;
    void forget(const std::string& key, sql::Connection& connection);
    // Until the lease of a CLAIMED row ends (by this host's clock); nullopt for no such row.
    std::optional<std::chrono::milliseconds> lease_left(const std::string& key) override;
    // True while a CONFIRMED row for the key is inside its retention. Deletes nothing.
    bool is_confirmed(const std::string& key);
    bool is_confirmed(const std::string& key, sql::Connection& connection);
    // Deletes expired confirmations and expired leases; returns how many. Nothing on the
    // message path deletes rows: schedule this.
    std::size_t purge_expired();
    std::size_t purge_expired(sql::Connection& connection);
    // Rows in the table, expired ones included.
    std::size_t size();
    std::size_t size(sql::Connection& connection);

    const std::string& table() const noexcept { return table_; }
    // This instance's 32 hexadecimal characters in claimed_by.
    const std::string& node() const noexcept { return node_; }

private:
    template <class Work>
    auto in_own_transaction(Work work);

    sql::Database& database_;
    const std::string table_;
    const std::chrono::milliseconds claim_timeout_;
    const std::chrono::milliseconds retention_;
    const std::string node_;

    const std::string insert_claim_;
    const std::string take_over_;
    const std::string select_state_;
    const std::string update_confirmed_;
    const std::string insert_confirmed_;
    const std::string delete_own_claim_;
    const std::string select_confirmed_;
    const std::string select_lease_;
    const std::string delete_expired_;
    const std::string count_rows_;
};

}  // namespace acemq
