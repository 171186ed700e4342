// A claim-check store in a SQL table (docs/wire-contract.md §8.2): ClaimCheckCodec's large
// payloads kept in the database every publisher and consumer of the queue already share, for
// when they run on machines with no directory in common. SQLite and PostgreSQL run the same
// statements; create the table with create_schema(db, {.claims = "acemq_claims"}) (or copy
// schema_ddl into your migrations).
//
//   auto claims = std::make_shared<acemq::SqlClaimCheckStore>(db);
//   auto codec = std::make_shared<acemq::ClaimCheckCodec>(std::make_shared<acemq::JsonCodec>(), claims);
//   claims->remove_older_than(std::chrono::days(7));       // on a schedule: nothing else deletes
//
// One row a payload: a fresh UUID as its key, the bytes, and when it was stored (epoch
// milliseconds). Keys are checked (check_claim_key) before they reach a statement, so a key
// from a message that is no key of this store is InvalidArgument, which the codec reads as a
// message to park.
//
// The ClaimCheckStore members run each in a transaction of their own, and a database that
// fails or cannot be reached is a StoreUnavailableError naming the table and the database's
// reason: decoding, the message is retried as the consumer's policy says. The forms taking a
// `sql::Connection&` (a sql::Transaction converts) run inside the caller's transaction, so a
// payload can be stored in the one that records the outbox message carrying its key; they
// never commit, roll back or close it, and throw the database's own errors
// (sql::DatabaseError, sql::ConnectionError), as the other SQL stores do.
//
// Thread-safe: the store keeps no state but its table's name; the Database must outlive it and
// be safe to ask for connections from several threads (the shipped drivers are). A connection
// passed in is used on the calling thread only.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/claim_check.hpp>
#include <acemq/sql.hpp>

namespace acemq {

struct SqlClaimCheckOptions {
    std::string table = "acemq_claims";
};

class SqlClaimCheckStore final : public ClaimCheckStore {
public:
    // Throws InvalidArgument for a table name schema_ddl would refuse (check_table_name).
    // Touches no table.
    explicit SqlClaimCheckStore(sql::Database& database, SqlClaimCheckOptions options = {});

    std::string put(std::span<const std::byte> payload) override;
    std::string put(std::span<const std::byte> payload, sql::Connection& connection);
    std::optional<std::vector<std::byte>> get(std::string_view key) const override;
    std::optional<std::vector<std::byte>> get(std::string_view key, sql::Connection& connection) const;
    void remove(std::string_view key) override;
    void remove(std::string_view key, sql::Connection& connection);
    // Deletes the payloads stored `age` or longer ago (by this machine's clock); returns how
    // many. A message still queued with the key of one is then parked when it is read, so
    // make `age` longer than any message may wait, retries and parking included.
    std::size_t remove_older_than(std::chrono::milliseconds age);
    // Payloads in the table.
    std::size_t size();

    const std::string& table() const noexcept { return table_; }

private:
    template <class Work>
    auto in_own_transaction(const char* doing, Work work) const;

    sql::Database& database_;
    const std::string table_;
    const std::string insert_;
    const std::string select_;
    const std::string delete_;
    const std::string delete_older_;
    const std::string count_;
};

}  // namespace acemq
