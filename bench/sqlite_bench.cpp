// The SQLite driver side by side with the sqlite3 C API underneath it, on temporary file
// databases in WAL mode with the same pragmas (busy timeout 5 s, foreign keys on), once
// with synchronous=FULL (the driver's default) and once with NORMAL, both sides alike: one
// INSERT per transaction (BEGIN IMMEDIATE .. COMMIT), and 1000 INSERTs in one transaction. The raw side reuses its prepared statements, as the driver's
// statement cache does. What the driver adds: the cache lookup, Value variants, the
// Transaction object and the checks of transaction state.
//
//   build/bench/sqlite_bench
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include <acemq/stores/sqlite.hpp>
#include "measure.hpp"
#include "sqlite_modes.hpp"

namespace {

constexpr int batch_size = 1000;

struct Close {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct Finalize {
    void operator()(sqlite3_stmt* statement) const noexcept { sqlite3_finalize(statement); }
};
using Statement = std::unique_ptr<sqlite3_stmt, Finalize>;

void check(sqlite3* db, int code, int wanted) {
    if (code != wanted) throw std::runtime_error(std::string("sqlite3: ") + sqlite3_errmsg(db));
}

// The raw C API with the driver's pragmas and prepared statements kept for reuse.
class Raw {
public:
    Raw(const std::string& path, const char* synchronous_pragma) {
        sqlite3* raw = nullptr;
        const int opened = sqlite3_open_v2(path.c_str(), &raw,
                                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
        db_.reset(raw);
        check(db_.get(), opened, SQLITE_OK);
        sqlite3_busy_timeout(db_.get(), 5000);
        for (const char* pragma : {"PRAGMA foreign_keys = ON", "PRAGMA journal_mode = WAL", synchronous_pragma,
                                   "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)"})
            check(db_.get(), sqlite3_exec(db_.get(), pragma, nullptr, nullptr, nullptr), SQLITE_OK);
        begin_ = prepare("BEGIN IMMEDIATE");
        commit_ = prepare("COMMIT");
        insert_ = prepare("INSERT INTO t (k, v) VALUES (?, ?)");
    }

    void run(sqlite3_stmt* statement) {
        check(db_.get(), sqlite3_step(statement), SQLITE_DONE);
        sqlite3_reset(statement);
    }
    void insert(std::int64_t key) {
        sqlite3_bind_int64(insert_.get(), 1, key);
        sqlite3_bind_text(insert_.get(), 2, "payload", 7, SQLITE_STATIC);
        run(insert_.get());
        sqlite3_clear_bindings(insert_.get());
    }
    sqlite3_stmt* begin() { return begin_.get(); }
    sqlite3_stmt* commit() { return commit_.get(); }

private:
    Statement prepare(const char* text) {
        sqlite3_stmt* statement = nullptr;
        check(db_.get(), sqlite3_prepare_v2(db_.get(), text, -1, &statement, nullptr), SQLITE_OK);
        return Statement(statement);
    }

    std::unique_ptr<sqlite3, Close> db_;  // declared first: closed after the statements
    Statement begin_, commit_, insert_;
};

// The driver and the raw API with one setting of synchronous, each on a file of its own.
void compare(const std::filesystem::path& dir, const bench::SyncMode& mode) {
    acemq::sqlite::Database database((dir / (std::string("driver-") + mode.name + ".db")).string(),
                                     {.synchronous = mode.driver});
    const auto connection = database.connect();
    connection->execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)");
    Raw raw((dir / (std::string("raw-") + mode.name + ".db")).string(), mode.pragma);
    const std::string insert = "INSERT INTO t (k, v) VALUES (?, ?)";
    std::int64_t driver_key = 0;
    std::int64_t raw_key = 0;

    std::printf("SQLite %s, WAL, synchronous=%s on both sides, temporary files in %s\n", sqlite3_libversion(),
                mode.name, dir.c_str());
    // Alternate the two sides over several rounds (one in the quick run) and keep each side's
    // best figure: the disk and the other processes on the machine move the figures more
    // than the driver.
    const int rounds = bench::quick_from_environment() ? 1 : 3;
    auto best_of = [&](const std::string& what, auto&& driver, auto&& raw) {
        double driver_ns = 1e300;
        double raw_ns = 1e300;
        for (int round = 0; round < rounds; ++round) {
            if (round % 2 == 0) {
                driver_ns = std::min(driver_ns, driver());
                raw_ns = std::min(raw_ns, raw());
            } else {
                raw_ns = std::min(raw_ns, raw());
                driver_ns = std::min(driver_ns, driver());
            }
        }
        bench::report("acemq sqlite::Connection + Transaction", driver_ns);
        bench::report("raw sqlite3 C API", raw_ns);
        bench::report_ratio("driver / raw", driver_ns, raw_ns);
        bench::record({.name = "SQLite driver, " + what + ", synchronous=" + mode.name,
                       .ours = driver_ns,
                       .against = "raw sqlite3 C API, statements kept",
                       .underneath = raw_ns,
                       .unit = "ns/op"});
    };

    std::printf("one INSERT per transaction (BEGIN IMMEDIATE .. COMMIT), best of %d alternating round(s)\n", rounds);
    best_of(
        "one INSERT per transaction",
        [&] {
            return bench::ns_per_op([&] {
                acemq::sql::Transaction tx(*connection);
                connection->execute(insert, {++driver_key, "payload"});
                tx.commit();
            });
        },
        [&] {
            return bench::ns_per_op([&] {
                raw.run(raw.begin());
                raw.insert(++raw_key);
                raw.run(raw.commit());
            });
        });

    std::printf("%d INSERTs in one transaction (figures per INSERT)\n", batch_size);
    best_of(
        "1,000 INSERTs in one transaction, per INSERT",
        [&] {
            return bench::ns_per_op(
                       [&] {
                           acemq::sql::Transaction tx(*connection);
                           for (int i = 0; i < batch_size; ++i) connection->execute(insert, {++driver_key, "payload"});
                           tx.commit();
                       },
                       5) /
                   batch_size;
        },
        [&] {
            return bench::ns_per_op(
                       [&] {
                           raw.run(raw.begin());
                           for (int i = 0; i < batch_size; ++i) raw.insert(++raw_key);
                           raw.run(raw.commit());
                       },
                       5) /
                   batch_size;
        });
}

}  // namespace

int main() {
    std::string pattern = (std::filesystem::temp_directory_path() / "acemq-sqlite-bench-XXXXXX").string();
    if (!mkdtemp(pattern.data())) {
        std::perror("mkdtemp");
        return 1;
    }
    const std::filesystem::path dir = pattern;
    int status = 0;
    try {
        for (const bench::SyncMode& mode : bench::sync_modes) compare(dir, mode);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "sqlite_bench: %s\n", error.what());
        status = 1;
    }
    std::error_code ignored;  // the databases are closed by now; a leftover is harmless
    std::filesystem::remove_all(dir, ignored);
    return status;
}
