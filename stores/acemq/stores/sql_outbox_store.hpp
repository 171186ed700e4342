// The outbox in a SQL table (SQLite or PostgreSQL, over acemq/sql.hpp): the record is
// written on the caller's connection, inside the caller's transaction, so it commits or
// rolls back with the business rows it announces.
//
//   acemq::SqlOutboxStore outbox{db};
//   acemq::sql::Transaction tx = db.begin();
//   save_order(tx, order);
//   outbox.add(acemq::record(bus, "orders-events", "order.placed", order), tx);
//   tx.commit();
//
// add() takes the connection and has no overload without one: a store that opened a
// connection of its own would put the message outside your transaction, and a rollback
// would then leave a message announcing rows that never existed. It refuses a connection
// that is not in a transaction for the same reason. It never commits, rolls back or closes.
//
// Everything else (the relay's side) runs on one connection of the store's own from
// `relay_connections`, each statement committing by itself.
//
// Several relays on one table are safe: pending() claims its batch in one statement
// (UPDATE ... WHERE id IN (oldest free rows) ... RETURNING, with FOR UPDATE SKIP LOCKED on
// PostgreSQL), setting a lease (claimed_by, claim_expires_at), so a row is handed to one
// relay at a time; the lease of a relay that died runs out and another takes its rows over.
// Order holds within one relay's batch, not across relays. Lease times are epoch ms of the
// relay's host: keep the relays' clocks within a small fraction of the lease of each other.
// Needs RETURNING: SQLite 3.35 or later (Debian 12 has 3.40), any supported PostgreSQL.
//
// The table is the one of schema_ddl (docs/patterns.md §3.3) plus two columns for the lease:
//   claimed_by VARCHAR(64) NULL, claim_expires_at BIGINT NULL
// No index is needed for them: the claim finds rows by created_at and the primary key.
//
// Headers are stored as a JSON object (strings, integers, booleans, doubles, arrays,
// tables; a byte-array or timestamp header is refused, JSON has neither). Read back, x-acemq-version,
// -attempt and -route-position are 32-bit integers and every other integer is 64-bit, as
// the family writes them; an application header's integer width is not kept. A row this
// store cannot read back (headers that are not that JSON, a TEXT body, a column of another
// kind: written by hand or by another program) is still handed out by pending() and
// retired(), with OutboxRecord::unreadable naming its id and what is wrong, so the relay
// counts it as a failed attempt and it retires at max_attempts instead of blocking the
// rows behind it for good.
//
// Thread-safe: every member may be called from any thread (the store's own connection is
// used by one caller at a time).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/outbox.hpp>
#include <acemq/sql.hpp>

namespace acemq {

struct SqlOutboxOptions {
    std::string table = "acemq_outbox";
    int max_attempts = 10;  // the family's default: retired at ten failed publishes
    // How long a relay owns the rows it claimed. Longer than a batch takes to publish, or a
    // second relay takes rows over while the first still sends them (sent twice).
    std::chrono::milliseconds lease{30'000};
};

// What an outbox table holds, counted for an operator (`acemq outbox status`).
struct OutboxCounts {
    std::size_t pending = 0;                      // below max_attempts: the relay sends them
    std::size_t failing = 0;                      // of the pending, those that failed at least once
    std::size_t retired = 0;                      // at max_attempts or more: kept for a person, never sent
    std::optional<EpochMillis> oldest_pending{};  // the created_at of the oldest pending record
};

class SqlOutboxStore final : public OutboxStore {
public:
    // Keeps a reference to `relay_connections`, which must outlive the store. Throws
    // InvalidArgument for a table name schema_ddl would refuse (check_table_name), max_attempts < 1 or
    // a lease that is not positive.
    explicit SqlOutboxStore(sql::Database& relay_connections, SqlOutboxOptions options = {});

    // One INSERT ... ON CONFLICT (id) DO NOTHING on `caller_transaction`: the same id twice
    // keeps the first. Throws InvalidArgument for an empty id, a byte-array or timestamp header,
    // EncodeError for a header JSON cannot carry (text that is not UTF-8, NaN), UsageError when
    // the connection is not in a transaction, DatabaseError as the database says it.
    void add(const OutboxRecord& record, sql::Connection& caller_transaction);

    // Claims up to `limit` due rows (0 = all) for this caller and returns them, oldest first.
    std::vector<OutboxRecord> pending(std::size_t limit) override;
    void mark_published(std::string_view id) override;
    // attempts + 1, last_error (cut to 1000 bytes at a UTF-8 boundary), lease released.
    void record_failure(std::string_view id, std::string_view error) override;
    void release(std::span<const std::string> ids) override;
    std::vector<OutboxRecord> retired() override;
    std::size_t count() override;

    // Counts the records by state in one statement, claiming nothing: safe beside running
    // relays.
    OutboxCounts counts();
    // Puts the retired record `id` back to pending, as the family releases one: attempts 0
    // and its lease dropped, so the next sweep sends it (last_error stays until the next
    // failure). False when no retired record has that id.
    bool release_retired(std::string_view id);

    const std::string& table() const noexcept { return options_.table; }

private:
    // Runs `work` on the store's own connection, opening it first if needed; a broken
    // connection is dropped so the next call opens a new one.
    template <class Work>
    auto with_connection(Work&& work);

    sql::Database& database_;
    SqlOutboxOptions options_;
    std::string columns_;  // the nine record columns, in OutboxRecord order
    // Statements that never change, written once.
    std::string insert_;
    std::string delete_;
    std::string fail_;
    std::string retired_;
    std::string count_;
    std::string counts_;
    std::string release_retired_;
    std::mutex lock_;
    std::unique_ptr<sql::Connection> connection_;
};

}  // namespace acemq
