// The SQLite driver of the SQL seam (acemq/sql.hpp), over the sqlite3 C library.
//
//   acemq::sqlite::Database db{"app.db"};                  // WAL, synchronous=FULL, foreign keys, 5 s busy wait
//   acemq::sqlite::Database fast{"cache.db", {.synchronous = acemq::sqlite::Synchronous::normal}};
//   auto connection = db.connect();
//   connection->execute("INSERT INTO t (k) VALUES (?) ON CONFLICT (k) DO NOTHING", {"key-1"});
//
// Every connection is its own sqlite3 handle on the same file, so connections in several
// threads (or processes) see each other's committed rows. A transaction starts with
// BEGIN IMMEDIATE: a writer takes the write lock up front and waits for it for at most the
// busy timeout, instead of failing at COMMIT with SQLITE_BUSY after doing its work.
//
// ":memory:" is accepted, but then every connection has a database of its own, empty and
// invisible to the others: useful for one-connection tests only.
//
// Threads: a Database may be shared and connect() called from any thread. A Connection
// belongs to one thread at a time (it is opened without SQLite's own mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include <acemq/sql.hpp>

struct sqlite3;
struct sqlite3_stmt;

namespace acemq::sqlite {

// When a commit reaches the disk (PRAGMA synchronous).
enum class Synchronous {
    // Every commit is synced before it returns: once commit() is back, a power cut or an
    // OS crash cannot undo it. What the stores need, because a message is acknowledged (or
    // an outbox row published and deleted) on the strength of a commit.
    full,
    // In WAL mode, commits are synced only at checkpoints: fewer fsyncs, faster commits,
    // and still never a corrupt file, but a power cut or an OS crash (not a crash of the
    // process) can roll back the last commits after they returned. A message acknowledged
    // on such a commit is then handled again without its idempotency claim, or an order's
    // announcement lost with its outbox row. Only for data you can afford to lose.
    normal,
};

struct Options {
    // How long a statement waits for another connection's lock before failing with
    // SQLITE_BUSY (a DatabaseError whose code names BUSY).
    std::chrono::milliseconds busy_timeout{5000};
    // Write-ahead logging for file databases: readers do not block the writer nor it them.
    // Ignored for ":memory:".
    bool wal = true;
    // FULL by default, as Python's sqlite3; see Synchronous for what NORMAL gives up.
    Synchronous synchronous = Synchronous::full;
    bool foreign_keys = true;
    // How many prepared statements a connection keeps (at least 1), least recently used
    // dropped first.
    std::size_t statement_cache = 64;
};

class Connection final : public sql::Connection {
public:
    // Opens `path` (created when missing); ConnectionError when it cannot be opened.
    Connection(const std::string& path, const Options& options);
    ~Connection() override;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    sql::Dialect dialect() const noexcept override { return sql::Dialect::sqlite; }
    std::int64_t execute(std::string_view statement, std::span<const sql::Value> parameters = {}) override;
    std::vector<sql::Row> query(std::string_view statement, std::span<const sql::Value> parameters = {}) override;
    using sql::Connection::execute;
    using sql::Connection::query;

    void begin() override;  // BEGIN IMMEDIATE
    void commit() override;
    void rollback() override;
    bool in_transaction() const noexcept override;

private:
    struct CloseDatabase {
        void operator()(sqlite3* db) const noexcept;
    };
    struct Finalize {
        void operator()(sqlite3_stmt* statement) const noexcept;
    };
    using StatementPtr = std::unique_ptr<sqlite3_stmt, Finalize>;
    struct Cached {
        std::string text;
        StatementPtr statement;
    };
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
    };

    // The prepared statement for `text` with `parameters` bound, from the cache or newly
    // prepared. The caller steps it and must reset it (see the Reset guard in the .cpp).
    sqlite3_stmt* prepare(std::string_view text, std::span<const sql::Value> parameters);
    [[noreturn]] void fail(int code, std::string_view statement) const;

    std::unique_ptr<sqlite3, CloseDatabase> db_;  // declared first: closed after the statements
    std::size_t cache_limit_;
    std::chrono::milliseconds busy_timeout_;
    std::list<Cached> lru_;  // most recently used first
    std::unordered_map<std::string_view, std::list<Cached>::iterator, Hash, std::equal_to<>> cache_;
    bool began_ = false;  // begin() was called and neither commit() nor rollback() since
};

class Database final : public sql::Database {
public:
    explicit Database(std::string path, Options options = {});

    sql::Dialect dialect() const noexcept override { return sql::Dialect::sqlite; }
    std::unique_ptr<sql::Connection> connect() override;
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
    Options options_;
};

}  // namespace acemq::sqlite
