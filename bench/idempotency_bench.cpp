// The idempotency store's claim + confirm inside the caller's transaction, on SQLite, side by
// side with raw sqlite3 running the same two statements (the claim's insert and the
// confirm's update) in the same transaction mode (BEGIN IMMEDIATE .. COMMIT, WAL), once with
// synchronous=FULL (the driver's default) and once with NORMAL, both sides alike. What the
// store adds: key checks, time, the node id, the seam.
//
//   build/bench/idempotency_bench
#include <sqlite3.h>

#include <acemq/acemq.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include <acemq/stores/sql_idempotency_store.hpp>
#include <acemq/stores/sqlite.hpp>
#include "measure.hpp"
#include "sqlite_modes.hpp"

namespace {

struct Close {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct Finalize {
    void operator()(sqlite3_stmt* statement) const noexcept { sqlite3_finalize(statement); }
};

void check(sqlite3* db, int code, int wanted) {
    if (code != wanted) throw std::runtime_error(std::string("sqlite3: ") + sqlite3_errmsg(db));
}

class RawClaims {
public:
    RawClaims(const std::string& path, const char* synchronous_pragma) {
        sqlite3* raw = nullptr;
        check(raw, sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr),
              SQLITE_OK);
        db_.reset(raw);
        sqlite3_busy_timeout(db_.get(), 5000);
        for (const char* pragma : {"PRAGMA journal_mode = WAL", synchronous_pragma})
            check(db_.get(), sqlite3_exec(db_.get(), pragma, nullptr, nullptr, nullptr), SQLITE_OK);
        begin_ = prepare("BEGIN IMMEDIATE");
        commit_ = prepare("COMMIT");
        claim_ = prepare(
            "INSERT INTO acemq_idempotency (message_id, state, claimed_by, recorded_at, expires_at) "
            "VALUES (?, 'CLAIMED', 'raw', ?, ?) ON CONFLICT (message_id) DO NOTHING");
        confirm_ = prepare(
            "UPDATE acemq_idempotency SET state = 'CONFIRMED', claimed_by = NULL, recorded_at = ?, "
            "expires_at = ? WHERE message_id = ?");
    }

    void claim_and_confirm(const std::string& key, std::int64_t now) {
        step(begin_.get());
        sqlite3_bind_text(claim_.get(), 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
        sqlite3_bind_int64(claim_.get(), 2, now);
        sqlite3_bind_int64(claim_.get(), 3, now + 300000);
        step(claim_.get());
        sqlite3_bind_int64(confirm_.get(), 1, now);
        sqlite3_bind_int64(confirm_.get(), 2, now + 86400000);
        sqlite3_bind_text(confirm_.get(), 3, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
        step(confirm_.get());
        step(commit_.get());
    }

private:
    std::unique_ptr<sqlite3_stmt, Finalize> prepare(const char* text) {
        sqlite3_stmt* statement = nullptr;
        check(db_.get(), sqlite3_prepare_v2(db_.get(), text, -1, &statement, nullptr), SQLITE_OK);
        return std::unique_ptr<sqlite3_stmt, Finalize>(statement);
    }
    void step(sqlite3_stmt* statement) {
        check(db_.get(), sqlite3_step(statement), SQLITE_DONE);
        sqlite3_reset(statement);
    }

    std::unique_ptr<sqlite3, Close> db_;  // declared first: closed after the statements
    std::unique_ptr<sqlite3_stmt, Finalize> begin_, commit_, claim_, confirm_;
};

}  // namespace

int main() {
    const auto dir = std::filesystem::temp_directory_path() / ("acemq-idempotency-bench-" + acemq::new_uuid());
    std::filesystem::create_directories(dir);
    for (const bench::SyncMode& mode : bench::sync_modes) {
        const std::string ours_path = (dir / (std::string("ours-") + mode.name + ".db")).string();
        const std::string raw_path = (dir / (std::string("raw-") + mode.name + ".db")).string();
        acemq::sqlite::Database ours_db{ours_path, {.synchronous = mode.driver}};
        acemq::create_schema(ours_db);
        acemq::sqlite::Database raw_db{raw_path, {.synchronous = mode.driver}};
        acemq::create_schema(raw_db);

        acemq::SqlIdempotencyStore seen{ours_db};
        auto connection = ours_db.connect();
        std::uint64_t next = 0;
        const double ours = bench::ns_per_op([&] {
            const std::string key = "m-" + std::to_string(++next);
            acemq::sql::Transaction tx{*connection};
            bench::keep(seen.claim(key, tx));
            seen.confirm(key, tx);
            tx.commit();
        });
        RawClaims raw{raw_path, mode.pragma};
        const double bare = bench::ns_per_op([&] {
            raw.claim_and_confirm("m-" + std::to_string(++next), acemq::epoch_millis_now().time_since_epoch().count());
        });
        std::printf("claim + confirm in one transaction, SQLite file (WAL, synchronous=%s on both sides):\n",
                    mode.name);
        bench::report("SqlIdempotencyStore::claim + confirm + commit", ours);
        bench::report("sqlite3: insert + update + commit", bare);
        bench::report_ratio("claim + confirm", ours, bare);
        bench::record({.name = std::string("SQLite idempotency claim + confirm + commit, synchronous=") + mode.name,
                       .ours = ours,
                       .against = "raw sqlite3: insert + update + commit",
                       .underneath = bare,
                       .unit = "ns/op"});
    }
    std::filesystem::remove_all(dir);
}
