#include <acemq/stores/sql_claim_check_store.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <acemq/envelope.hpp>
#include <acemq/error.hpp>
#include <acemq/schema.hpp>
#include <acemq/uuid.hpp>

namespace acemq {

namespace {

std::int64_t now_ms() { return epoch_millis_now().time_since_epoch().count(); }

}  // namespace

SqlClaimCheckStore::SqlClaimCheckStore(sql::Database& database, SqlClaimCheckOptions options)
    : database_(database), table_(check_table_name(SchemaTable::claims, options.table)),
      insert_("INSERT INTO " + table_ + " (claim_key, payload, stored_at) VALUES (?, ?, ?)"),
      select_("SELECT payload FROM " + table_ + " WHERE claim_key = ?"),
      delete_("DELETE FROM " + table_ + " WHERE claim_key = ?"),
      delete_older_("DELETE FROM " + table_ + " WHERE stored_at <= ?"), count_("SELECT COUNT(*) FROM " + table_) {}

template <class Work>
auto SqlClaimCheckStore::in_own_transaction(const char* doing, Work work) const {
    try {
        return sql::in_transaction(database_, work);
    } catch (const Error& error) {
        // The database's failure (keys are checked before this): sql::DatabaseError,
        // sql::ConnectionError, or a connection string the driver refuses.
        throw StoreUnavailableError("acemq: cannot " + std::string(doing) + " in the claim-check table " + table_ +
                                    ": " + std::string(without_prefix(error.what())));
    }
}

std::string SqlClaimCheckStore::put(std::span<const std::byte> payload) {
    return in_own_transaction("keep a payload", [&](sql::Connection& connection) { return put(payload, connection); });
}

std::string SqlClaimCheckStore::put(std::span<const std::byte> payload, sql::Connection& connection) {
    std::string key = new_uuid();
    connection.execute(insert_, {key, Bytes(payload.begin(), payload.end()), now_ms()});
    return key;
}

std::optional<std::vector<std::byte>> SqlClaimCheckStore::get(std::string_view key) const {
    check_claim_key(key);  // before the transaction, so that a bad key is no database failure
    return in_own_transaction("read a payload", [&](sql::Connection& connection) { return get(key, connection); });
}

std::optional<std::vector<std::byte>> SqlClaimCheckStore::get(std::string_view key, sql::Connection& connection) const {
    check_claim_key(key);
    std::vector<sql::Row> rows = connection.query(select_, {key});
    if (rows.empty() || rows.front().empty()) return std::nullopt;
    return rows.front().front().as_blob();
}

void SqlClaimCheckStore::remove(std::string_view key) {
    check_claim_key(key);
    in_own_transaction("remove a payload", [&](sql::Connection& connection) { remove(key, connection); });
}

void SqlClaimCheckStore::remove(std::string_view key, sql::Connection& connection) {
    check_claim_key(key);
    connection.execute(delete_, {key});
}

std::size_t SqlClaimCheckStore::remove_older_than(std::chrono::milliseconds age) {
    if (age.count() < 0)
        throw InvalidArgument("acemq: remove_older_than needs an age of zero or more, got " +
                              std::to_string(age.count()) + " ms");
    const std::int64_t removed = in_own_transaction("remove old payloads", [&](sql::Connection& connection) {
        return connection.execute(delete_older_, {now_ms() - age.count()});
    });
    return static_cast<std::size_t>(std::max<std::int64_t>(removed, 0));
}

std::size_t SqlClaimCheckStore::size() {
    const std::vector<sql::Row> rows =
        in_own_transaction("count the payloads", [&](sql::Connection& connection) { return connection.query(count_); });
    if (rows.empty() || rows.front().empty())
        throw StoreUnavailableError("acemq: SELECT COUNT(*) on " + table_ + " returned no row");
    return static_cast<std::size_t>(std::max<std::int64_t>(rows.front().front().as_integer(), 0));
}

}  // namespace acemq
