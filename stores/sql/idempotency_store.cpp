#include <acemq/stores/sql_idempotency_store.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/schema.hpp>
#include <acemq/uuid.hpp>

namespace acemq {

namespace {

// The width of the message_id column (docs/patterns.md §3.3).
constexpr std::size_t max_key_bytes = 255;

std::chrono::milliseconds positive(std::chrono::milliseconds value, const char* what, const char* default_text) {
    if (value.count() <= 0)
        throw InvalidArgument(std::string("acemq: an idempotency ") + what + " must be positive, got " +
                              std::to_string(value.count()) + " ms; the default is " + default_text);
    return value;
}

const std::string& checked_key(const std::string& key) {
    if (key.empty())
        throw InvalidArgument(
            "acemq: an idempotency key cannot be empty; key messages by their id or by a "
            "non-empty business key");
    if (key.size() > max_key_bytes)
        throw InvalidArgument("acemq: an idempotency key is at most 255 bytes (the message_id column), got " +
                              std::to_string(key.size()) + "; hash longer keys in your key function");
    return key;
}

// A random node id: a UUID v4 without its dashes, as the family's uuid4().hex.
std::string new_node_id() {
    std::string id = new_uuid();
    std::erase(id, '-');
    return id;
}

std::int64_t epoch_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string with_table(std::string statement, const std::string& table) {
    for (std::size_t at = statement.find("{table}"); at != std::string::npos; at = statement.find("{table}", at))
        statement.replace(at, 7, table);
    return statement;
}

std::size_t as_count(std::int64_t rows) { return static_cast<std::size_t>(std::max<std::int64_t>(rows, 0)); }

}  // namespace

SqlIdempotencyStore::SqlIdempotencyStore(sql::Database& database, SqlIdempotencyOptions options)
    : database_(database), table_(check_table_name(SchemaTable::idempotency, options.table)),
      claim_timeout_(positive(options.claim_timeout, "claim timeout", "5 minutes")),
      retention_(positive(options.retention, "retention", "24 hours")), node_(new_node_id()),
      insert_claim_(with_table("INSERT INTO {table} (message_id, state, claimed_by, recorded_at, expires_at) "
                               "VALUES (?, 'CLAIMED', ?, ?, ?) ON CONFLICT (message_id) DO NOTHING",
                               table_)),
      take_over_(with_table("UPDATE {table} SET state = 'CLAIMED', claimed_by = ?, recorded_at = ?, expires_at = ? "
                            "WHERE message_id = ? AND expires_at <= ?",
                            table_)),
      select_state_(with_table("SELECT state FROM {table} WHERE message_id = ?", table_)),
      update_confirmed_(with_table("UPDATE {table} SET state = 'CONFIRMED', claimed_by = NULL, recorded_at = ?, "
                                   "expires_at = ? WHERE message_id = ?",
                                   table_)),
      insert_confirmed_(with_table("INSERT INTO {table} (message_id, state, claimed_by, recorded_at, expires_at) "
                                   "VALUES (?, 'CONFIRMED', NULL, ?, ?) ON CONFLICT (message_id) DO NOTHING",
                                   table_)),
      delete_own_claim_(
          with_table("DELETE FROM {table} WHERE message_id = ? AND state = 'CLAIMED' AND claimed_by = ?", table_)),
      select_confirmed_(
          with_table("SELECT expires_at FROM {table} WHERE message_id = ? AND state = 'CONFIRMED'", table_)),
      select_lease_(with_table("SELECT expires_at FROM {table} WHERE message_id = ? AND state = 'CLAIMED'", table_)),
      delete_expired_(with_table("DELETE FROM {table} WHERE expires_at <= ?", table_)),
      count_rows_(with_table("SELECT COUNT(*) FROM {table}", table_)) {}

template <class Work>
auto SqlIdempotencyStore::in_own_transaction(Work work) {
    return sql::in_transaction(database_, work);
}

Claim SqlIdempotencyStore::claim(const std::string& key) {
    checked_key(key);
    return in_own_transaction([&](sql::Connection& connection) { return claim(key, connection); });
}

Claim SqlIdempotencyStore::claim(const std::string& key, sql::Connection& connection) {
    checked_key(key);
    const std::int64_t now = epoch_ms();
    const std::int64_t lease_end = now + claim_timeout_.count();
    // Insert wins: the primary key decides between racing claimers, in every process. A
    // conflict is "DO NOTHING" rather than an error, because a failed statement would
    // poison a PostgreSQL transaction and error codes differ per database.
    if (connection.execute(insert_claim_, {key, node_, now, lease_end}) == 1) return Claim::claimed;
    // Take over a row whose lease (or retention) ran out; the guard is in the WHERE, so
    // the check and the take-over are one atomic statement.
    if (connection.execute(take_over_, {node_, now, lease_end, key, now}) == 1) return Claim::claimed;
    const std::vector<sql::Row> rows = connection.query(select_state_, {key});
    if (!rows.empty() && !rows.front().empty() && rows.front().front().as_text() == "CONFIRMED")
        return Claim::duplicate;
    // CLAIMED by anyone (this store included), or the row vanished between statements:
    // the answer that cannot lose the message.
    return Claim::in_progress;
}

bool SqlIdempotencyStore::first_time(const std::string& key) { return claim(key) == Claim::claimed; }

bool SqlIdempotencyStore::first_time(const std::string& key, sql::Connection& connection) {
    return claim(key, connection) == Claim::claimed;
}

void SqlIdempotencyStore::confirm(const std::string& key) {
    checked_key(key);
    in_own_transaction([&](sql::Connection& connection) { confirm(key, connection); });
}

void SqlIdempotencyStore::confirm(const std::string& key, sql::Connection& connection) {
    checked_key(key);
    const std::int64_t now = epoch_ms();
    const std::int64_t retained_until = now + retention_.count();
    if (connection.execute(update_confirmed_, {now, retained_until, key}) == 0)
        // No row: purged, or its lease ran out and someone took it over and let it go. The
        // work happened, so record it anyway.
        connection.execute(insert_confirmed_, {key, now, retained_until});
}

void SqlIdempotencyStore::forget(const std::string& key) {
    checked_key(key);
    in_own_transaction([&](sql::Connection& connection) { forget(key, connection); });
}

void SqlIdempotencyStore::forget(const std::string& key, sql::Connection& connection) {
    checked_key(key);
    connection.execute(delete_own_claim_, {key, node_});
}

std::optional<std::chrono::milliseconds> SqlIdempotencyStore::lease_left(const std::string& key) {
    checked_key(key);
    const std::vector<sql::Row> rows =
        in_own_transaction([&](sql::Connection& connection) { return connection.query(select_lease_, {key}); });
    if (rows.empty() || rows.front().empty()) return std::nullopt;
    return std::chrono::milliseconds(std::max<std::int64_t>(rows.front().front().as_integer() - epoch_ms(), 0));
}

bool SqlIdempotencyStore::is_confirmed(const std::string& key) {
    checked_key(key);
    return in_own_transaction([&](sql::Connection& connection) { return is_confirmed(key, connection); });
}

bool SqlIdempotencyStore::is_confirmed(const std::string& key, sql::Connection& connection) {
    checked_key(key);
    const std::vector<sql::Row> rows = connection.query(select_confirmed_, {key});
    return !rows.empty() && !rows.front().empty() && rows.front().front().as_integer() > epoch_ms();
}

std::size_t SqlIdempotencyStore::purge_expired() {
    return in_own_transaction([&](sql::Connection& connection) { return purge_expired(connection); });
}

std::size_t SqlIdempotencyStore::purge_expired(sql::Connection& connection) {
    return as_count(connection.execute(delete_expired_, {epoch_ms()}));
}

std::size_t SqlIdempotencyStore::size() {
    return in_own_transaction([&](sql::Connection& connection) { return size(connection); });
}

std::size_t SqlIdempotencyStore::size(sql::Connection& connection) {
    const std::vector<sql::Row> rows = connection.query(count_rows_);
    if (rows.empty() || rows.front().empty())
        throw sql::DatabaseError("acemq: SELECT COUNT(*) on " + table_ + " returned no row", "no-row");
    return as_count(rows.front().front().as_integer());
}

}  // namespace acemq
