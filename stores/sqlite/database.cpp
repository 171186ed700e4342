#include <acemq/stores/sqlite.hpp>

#include <sqlite3.h>

#include <climits>

#include <acemq/log.hpp>

namespace acemq::sqlite {

namespace {

// The name of an (extended) result code, e.g. "SQLITE_CONSTRAINT_UNIQUE", as in sqlite3.h.
// Codes missing from the table are named by their primary code and number.
std::string code_name(int code) {
#define ACEMQ_CODE(name) \
    { name, #name }
    static constexpr struct {
        int code;
        const char* name;
    } names[] = {
        ACEMQ_CODE(SQLITE_ERROR),
        ACEMQ_CODE(SQLITE_INTERNAL),
        ACEMQ_CODE(SQLITE_PERM),
        ACEMQ_CODE(SQLITE_ABORT),
        ACEMQ_CODE(SQLITE_BUSY),
        ACEMQ_CODE(SQLITE_LOCKED),
        ACEMQ_CODE(SQLITE_NOMEM),
        ACEMQ_CODE(SQLITE_READONLY),
        ACEMQ_CODE(SQLITE_INTERRUPT),
        ACEMQ_CODE(SQLITE_IOERR),
        ACEMQ_CODE(SQLITE_CORRUPT),
        ACEMQ_CODE(SQLITE_NOTFOUND),
        ACEMQ_CODE(SQLITE_FULL),
        ACEMQ_CODE(SQLITE_CANTOPEN),
        ACEMQ_CODE(SQLITE_PROTOCOL),
        ACEMQ_CODE(SQLITE_EMPTY),
        ACEMQ_CODE(SQLITE_SCHEMA),
        ACEMQ_CODE(SQLITE_TOOBIG),
        ACEMQ_CODE(SQLITE_CONSTRAINT),
        ACEMQ_CODE(SQLITE_MISMATCH),
        ACEMQ_CODE(SQLITE_MISUSE),
        ACEMQ_CODE(SQLITE_NOLFS),
        ACEMQ_CODE(SQLITE_AUTH),
        ACEMQ_CODE(SQLITE_FORMAT),
        ACEMQ_CODE(SQLITE_RANGE),
        ACEMQ_CODE(SQLITE_NOTADB),
        ACEMQ_CODE(SQLITE_BUSY_RECOVERY),
        ACEMQ_CODE(SQLITE_BUSY_SNAPSHOT),
        ACEMQ_CODE(SQLITE_BUSY_TIMEOUT),
        ACEMQ_CODE(SQLITE_LOCKED_SHAREDCACHE),
        ACEMQ_CODE(SQLITE_LOCKED_VTAB),
        ACEMQ_CODE(SQLITE_READONLY_RECOVERY),
        ACEMQ_CODE(SQLITE_READONLY_CANTLOCK),
        ACEMQ_CODE(SQLITE_READONLY_ROLLBACK),
        ACEMQ_CODE(SQLITE_READONLY_DBMOVED),
        ACEMQ_CODE(SQLITE_READONLY_DIRECTORY),
        ACEMQ_CODE(SQLITE_CANTOPEN_ISDIR),
        ACEMQ_CODE(SQLITE_CANTOPEN_FULLPATH),
        ACEMQ_CODE(SQLITE_ABORT_ROLLBACK),
        ACEMQ_CODE(SQLITE_CONSTRAINT_CHECK),
        ACEMQ_CODE(SQLITE_CONSTRAINT_COMMITHOOK),
        ACEMQ_CODE(SQLITE_CONSTRAINT_FOREIGNKEY),
        ACEMQ_CODE(SQLITE_CONSTRAINT_FUNCTION),
        ACEMQ_CODE(SQLITE_CONSTRAINT_NOTNULL),
        ACEMQ_CODE(SQLITE_CONSTRAINT_PRIMARYKEY),
        ACEMQ_CODE(SQLITE_CONSTRAINT_TRIGGER),
        ACEMQ_CODE(SQLITE_CONSTRAINT_UNIQUE),
        ACEMQ_CODE(SQLITE_CONSTRAINT_VTAB),
        ACEMQ_CODE(SQLITE_CONSTRAINT_ROWID),
        ACEMQ_CODE(SQLITE_CONSTRAINT_PINNED),
        ACEMQ_CODE(SQLITE_CONSTRAINT_DATATYPE),
        ACEMQ_CODE(SQLITE_IOERR_READ),
        ACEMQ_CODE(SQLITE_IOERR_SHORT_READ),
        ACEMQ_CODE(SQLITE_IOERR_WRITE),
        ACEMQ_CODE(SQLITE_IOERR_FSYNC),
        ACEMQ_CODE(SQLITE_IOERR_NOMEM),
        ACEMQ_CODE(SQLITE_IOERR_SHMOPEN),
        ACEMQ_CODE(SQLITE_IOERR_SHMLOCK),
        ACEMQ_CODE(SQLITE_IOERR_LOCK),
    };
#undef ACEMQ_CODE
    for (const auto& entry : names)
        if (entry.code == code) return entry.name;
    for (const auto& entry : names)
        if (entry.code == (code & 0xff)) return std::string(entry.name) + "_" + std::to_string(code >> 8);
    return "SQLITE_" + std::to_string(code);
}

std::string excerpt(std::string_view statement) {
    constexpr std::size_t limit = 200;
    if (statement.size() <= limit) return std::string(statement);
    return std::string(statement.substr(0, limit)) + "...";
}

// What to do about a failure, by primary code.
std::string_view advice(int code) {
    switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return "another connection held the lock longer than the busy timeout; retry later, shorten the "
               "other transaction, or raise Options::busy_timeout";
    case SQLITE_CONSTRAINT: return "the statement broke a constraint of the table";
    case SQLITE_FULL:
    case SQLITE_IOERR: return "the disk failed or is full; check the file system";
    case SQLITE_READONLY: return "the database file or its directory is not writable";
    default: return "";
    }
}

}  // namespace

void Connection::CloseDatabase::operator()(sqlite3* db) const noexcept {
    // Every cached statement is finalized before (members are destroyed in reverse order),
    // so close_v2 has nothing left to wait for.
    sqlite3_close_v2(db);
}

void Connection::Finalize::operator()(sqlite3_stmt* statement) const noexcept { sqlite3_finalize(statement); }

Connection::Connection(const std::string& path, const Options& options)
    : cache_limit_(options.statement_cache == 0 ? 1 : options.statement_cache), busy_timeout_(options.busy_timeout) {
    sqlite3* raw = nullptr;
    const int opened =
        sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    db_.reset(raw);  // a failed open may still hand back a handle that must be closed
    if (opened != SQLITE_OK)
        throw sql::ConnectionError("acemq: could not open the SQLite database \"" + path +
                                   "\": " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(opened)) +
                                   "; check that the directory exists and is writable");
    sqlite3_extended_result_codes(db_.get(), 1);
    sqlite3_busy_timeout(db_.get(), static_cast<int>(std::min<std::int64_t>(options.busy_timeout.count(), INT_MAX)));
    execute(options.foreign_keys ? "PRAGMA foreign_keys = ON" : "PRAGMA foreign_keys = OFF");
    const bool in_memory = path.empty() || path == ":memory:" || path.starts_with("file::memory:");
    if (options.wal && !in_memory) {
        const auto mode = query("PRAGMA journal_mode = WAL");
        const auto* answer =
            mode.size() == 1 && mode[0].size() == 1 ? std::get_if<std::string>(&mode[0][0].get()) : nullptr;
        if (!answer || *answer != "wal")
            throw sql::ConnectionError("acemq: SQLite refused WAL journal mode for \"" + path +
                                       "\" (a file system without shared memory?); pass Options{.wal = false}");
    }
    execute(options.synchronous == Synchronous::full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
}

Connection::~Connection() {
    if (!in_transaction()) return;
    // Closing a connection inside a transaction rolls it back anyway; saying so explicitly
    // keeps the journal tidy. A failure here cannot be thrown from a destructor.
    if (sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr) != SQLITE_OK)
        log(LogLevel::warning, "sqlite",
            std::string("acemq: rollback on closing an SQLite connection failed: ") + sqlite3_errmsg(db_.get()));
}

void Connection::fail(int code, std::string_view statement) const {
    const int extended = sqlite3_extended_errcode(db_.get());
    const int used = (extended & 0xff) == (code & 0xff) ? extended : code;
    std::string what = "acemq: SQLite said \"" + std::string(sqlite3_errmsg(db_.get())) + "\" (" + code_name(used) +
                       ") for: " + excerpt(statement);
    if (const auto hint = advice(used); !hint.empty()) what += "; " + std::string(hint);
    if ((used & 0xff) == SQLITE_BUSY || (used & 0xff) == SQLITE_LOCKED)
        what += " (busy timeout " + std::to_string(busy_timeout_.count()) + " ms)";
    throw sql::DatabaseError(what, code_name(used));
}

sqlite3_stmt* Connection::prepare(std::string_view text, std::span<const sql::Value> parameters) {
    sqlite3_stmt* statement = nullptr;
    if (auto found = cache_.find(text); found != cache_.end()) {
        lru_.splice(lru_.begin(), lru_, found->second);
        statement = found->second->statement.get();
    } else {
        if (text.size() > INT_MAX) throw InvalidArgument("acemq: an SQL statement longer than 2 GiB");
        const char* tail = nullptr;
        const int prepared =
            sqlite3_prepare_v2(db_.get(), text.data(), static_cast<int>(text.size()), &statement, &tail);
        StatementPtr owned(statement);
        if (prepared != SQLITE_OK) fail(prepared, text);
        if (!owned) throw InvalidArgument("acemq: the SQL statement is empty: \"" + excerpt(text) + "\"");
        if (std::string_view(tail, static_cast<std::size_t>(text.data() + text.size() - tail))
                .find_first_not_of(" \t\r\n;") != std::string_view::npos)
            throw InvalidArgument("acemq: run one SQL statement at a time, got several in: " + excerpt(text));
        lru_.push_front(Cached{std::string(text), std::move(owned)});
        cache_.emplace(lru_.front().text, lru_.begin());
        if (lru_.size() > cache_limit_) {
            cache_.erase(lru_.back().text);
            lru_.pop_back();
        }
    }
    const int wanted = sqlite3_bind_parameter_count(statement);
    if (static_cast<std::size_t>(wanted) != parameters.size())
        throw InvalidArgument("acemq: the statement has " + std::to_string(wanted) + " placeholders but " +
                              std::to_string(parameters.size()) + " parameters were given: " + excerpt(text));
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        const int index = static_cast<int>(i) + 1;
        // SQLITE_STATIC: the values outlive the statement's use; bindings are cleared after it.
        const int bound = std::visit(
            [&](const auto& value) -> int {
                using T = std::decay_t<decltype(value)>;
                if constexpr (std::is_same_v<T, std::nullptr_t>) {
                    return sqlite3_bind_null(statement, index);
                } else if constexpr (std::is_same_v<T, std::int64_t>) {
                    return sqlite3_bind_int64(statement, index, value);
                } else if constexpr (std::is_same_v<T, double>) {
                    return sqlite3_bind_double(statement, index, value);
                } else if constexpr (std::is_same_v<T, std::string>) {
                    return sqlite3_bind_text64(statement, index, value.data(), value.size(), SQLITE_STATIC,
                                               SQLITE_UTF8);
                } else if (value.empty()) {  // a NULL pointer would bind NULL, not an empty blob
                    return sqlite3_bind_zeroblob(statement, index, 0);
                } else {
                    return sqlite3_bind_blob64(statement, index, value.data(), value.size(), SQLITE_STATIC);
                }
            },
            parameters[i].get());
        if (bound != SQLITE_OK) {
            sqlite3_clear_bindings(statement);
            fail(bound, text);
        }
    }
    return statement;
}

namespace {

// Resets a statement when its use ends, however it ends: a statement left mid-step keeps a
// read transaction open and would pin the WAL; bound text and blobs are borrowed.
class Reset {
public:
    explicit Reset(sqlite3_stmt* statement) : statement_(statement) {}
    ~Reset() {
        sqlite3_reset(statement_);
        sqlite3_clear_bindings(statement_);
    }
    Reset(const Reset&) = delete;
    Reset& operator=(const Reset&) = delete;

private:
    sqlite3_stmt* statement_;
};

sql::Value column(sqlite3_stmt* statement, int index) {
    switch (sqlite3_column_type(statement, index)) {
    case SQLITE_INTEGER: return sql::Value(static_cast<std::int64_t>(sqlite3_column_int64(statement, index)));
    case SQLITE_FLOAT: return sql::Value(sqlite3_column_double(statement, index));
    case SQLITE_TEXT: {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement, index));
        return sql::Value(std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(statement, index))));
    }
    case SQLITE_BLOB: {
        const auto* data = static_cast<const std::byte*>(sqlite3_column_blob(statement, index));
        const auto size = static_cast<std::size_t>(sqlite3_column_bytes(statement, index));
        return sql::Value(data ? Bytes(data, data + size) : Bytes{});
    }
    default: return sql::Value();
    }
}

}  // namespace

std::int64_t Connection::execute(std::string_view statement, std::span<const sql::Value> parameters) {
    sqlite3_stmt* prepared = prepare(statement, parameters);
    Reset reset(prepared);
    const auto before = sqlite3_total_changes64(db_.get());
    int stepped;
    while ((stepped = sqlite3_step(prepared)) == SQLITE_ROW) {
        // Rows of a statement run for its effect (RETURNING, a PRAGMA) are not wanted.
    }
    if (stepped != SQLITE_DONE) fail(stepped, statement);
    // sqlite3_changes keeps the count of the last INSERT/UPDATE/DELETE, so a statement that
    // changed nothing (DDL, a SELECT) is told apart by the running total.
    return sqlite3_total_changes64(db_.get()) == before ? 0 : sqlite3_changes64(db_.get());
}

std::vector<sql::Row> Connection::query(std::string_view statement, std::span<const sql::Value> parameters) {
    sqlite3_stmt* prepared = prepare(statement, parameters);
    Reset reset(prepared);
    std::vector<sql::Row> rows;
    int stepped;
    while ((stepped = sqlite3_step(prepared)) == SQLITE_ROW) {
        const int columns = sqlite3_column_count(prepared);
        sql::Row& row = rows.emplace_back();
        row.reserve(static_cast<std::size_t>(columns));
        for (int i = 0; i < columns; ++i) row.push_back(column(prepared, i));
    }
    if (stepped != SQLITE_DONE) fail(stepped, statement);
    return rows;
}

bool Connection::in_transaction() const noexcept { return sqlite3_get_autocommit(db_.get()) == 0; }

void Connection::begin() {
    if (began_ || in_transaction())
        throw UsageError(
            "acemq: a transaction is already open on this SQLite connection; commit or roll it back "
            "before beginning another (transactions do not nest)");
    execute("BEGIN IMMEDIATE");
    began_ = true;
}

void Connection::commit() {
    if (!began_) throw UsageError("acemq: commit without a transaction on this SQLite connection; begin one first");
    began_ = false;
    if (!in_transaction())
        throw sql::DatabaseError(
            "acemq: SQLite rolled this transaction back itself after an earlier error "
            "(disk full, I/O error, interrupt); nothing was committed, run it again",
            code_name(SQLITE_ABORT_ROLLBACK));
    try {
        execute("COMMIT");
    } catch (const sql::DatabaseError&) {
        // A COMMIT that fails leaves the transaction open; end it so the connection is
        // usable again, and report the failed commit.
        if (in_transaction()) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

void Connection::rollback() {
    if (!began_) throw UsageError("acemq: rollback without a transaction on this SQLite connection; begin one first");
    began_ = false;
    // After some errors (disk full, I/O) SQLite has already rolled back; nothing is left to do.
    if (in_transaction()) execute("ROLLBACK");
}

Database::Database(std::string path, Options options) : path_(std::move(path)), options_(options) {
    if (sqlite3_threadsafe() == 0)
        throw Error(
            "acemq: this SQLite library was built without thread support (SQLITE_THREADSAFE=0); "
            "link one built with SQLITE_THREADSAFE=1 or 2");
}

std::unique_ptr<sql::Connection> Database::connect() { return std::make_unique<Connection>(path_, options_); }

}  // namespace acemq::sqlite
