#include "inproc/data_file.hpp"

#include <sqlite3.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>

#include <acemq/inproc.hpp>
#include <acemq/log.hpp>
#include "inproc/online_backup.hpp"
#include "inproc/quoted.hpp"
#include "inproc/row_checksum.hpp"
#include "msgpack/message_pack.hpp"

namespace acemq::inproc::detail {

namespace {

// PRAGMA application_id of a broker's data file: "AcMQ".
constexpr int application_id = 0x41634d51;
constexpr int schema_version = 3;

// Version 1, which every file starts from; the versions after it are steps from there.
constexpr const char* schema = R"sql(
CREATE TABLE broker(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE exchanges(name TEXT PRIMARY KEY, kind TEXT NOT NULL, auto_delete INTEGER NOT NULL,
                       arguments BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE queues(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, type TEXT NOT NULL,
                    auto_delete INTEGER NOT NULL, arguments BLOB NOT NULL);
CREATE TABLE bindings(exchange TEXT NOT NULL, queue INTEGER NOT NULL, routing_key TEXT NOT NULL,
                      arguments BLOB NOT NULL, PRIMARY KEY(exchange, queue, routing_key, arguments)) WITHOUT ROWID;
CREATE TABLE messages(id INTEGER PRIMARY KEY, queue INTEGER NOT NULL, enqueued INTEGER,
                      redelivered INTEGER NOT NULL, properties BLOB NOT NULL, body BLOB NOT NULL);
INSERT INTO broker(key, value) VALUES('closed_cleanly', 1);
)sql";

// Version 2: each row's checksum (row_checksum.hpp; NULL in a row a version-1 broker wrote,
// which is read unchecked), and the quarantine, where a message whose row fails its
// checksum is moved at open, never delivered, kept for the operator to look at.
constexpr const char* to_version_2 = R"sql(
ALTER TABLE exchanges ADD COLUMN checksum INTEGER;
ALTER TABLE queues ADD COLUMN checksum INTEGER;
ALTER TABLE bindings ADD COLUMN checksum INTEGER;
ALTER TABLE messages ADD COLUMN checksum INTEGER;
CREATE TABLE quarantine(row INTEGER PRIMARY KEY, id INTEGER, queue INTEGER, enqueued INTEGER,
                        properties BLOB, body BLOB, checksum INTEGER, reason TEXT NOT NULL,
                        quarantined INTEGER NOT NULL);
)sql";

// Version 3: stream queues. Where each stream's stored log starts, so that its messages keep
// their offsets across a restart once retention took its oldest. A broker of version 2 would
// read a stream as a queue and take what it delivers, so it must refuse the file.
constexpr const char* to_version_3 = R"sql(
CREATE TABLE stream_starts(queue INTEGER PRIMARY KEY, first_offset INTEGER NOT NULL, checksum INTEGER NOT NULL);
)sql";

// The first column of the first row `sql` gives, or 0 when it gives none.
std::int64_t integer_of(sqlite3* db, const char* sql) {
    sqlite3_stmt* statement = nullptr;
    std::int64_t value = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &statement, nullptr) == SQLITE_OK && sqlite3_step(statement) == SQLITE_ROW)
        value = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    return value;
}

// How much room the file system holding `path` has; unknown on another VFS's names.
struct Space {
    bool known = false;
    std::uint64_t free_bytes = 0;
};
Space space_around(const std::string& path) {
    struct statvfs of {};
    const std::string directory = std::filesystem::path(path).parent_path().string();
    if (statvfs(directory.empty() ? "." : directory.c_str(), &of) != 0) return {};
    return {true, static_cast<std::uint64_t>(of.f_bavail) * of.f_frsize};
}

// Whether SQLite's "full" is the limit's rather than the disk's: a limit is set, and the
// disk (when it can be told) has more room than the limit still leaves the file.
bool full_at_its_limit(sqlite3* db, std::uint64_t max_bytes, const Space& space) {
    if (max_bytes == 0) return false;
    if (!space.known) return true;
    auto integer = [&](const char* sql) { return integer_of(db, sql); };
    const std::int64_t pages_left = integer("PRAGMA max_page_count") - integer("PRAGMA page_count");
    return space.free_bytes >
           static_cast<std::uint64_t>(std::max<std::int64_t>(pages_left, 0) * integer("PRAGMA page_size"));
}

// Why the file or its directory cannot be written, for an error SQLite words only as an I/O
// error or a read-only database: a read-only file system, or no permission. "" when neither.
std::string why_not_writable(const std::string& path) {
    const std::filesystem::path file(path);
    const std::string directory = file.parent_path().empty() ? "." : file.parent_path().string();
    struct statvfs of {};
    if (statvfs(directory.c_str(), &of) == 0 && (of.f_flag & ST_RDONLY) != 0)
        return "; the file system holding it is mounted read-only: remount it read-write, or give the broker a "
               "file on one that is writable";
    const bool exists = ::access(path.c_str(), F_OK) == 0;
    if ((exists && ::access(path.c_str(), W_OK) != 0) || ::access(directory.c_str(), W_OK) != 0)
        return "; this process may not write " + std::string(exists ? "the file" : "its directory") + " " +
               detail::in_quotes(exists ? path : directory) +
               " (permission): let the broker's user write it and its directory (SQLite makes the -wal file there)";
    return {};
}

// What a refusal of a damaged file tells the operator to do.
constexpr const char* restore_advice =
    "it was left untouched. Restore it from a copy, or copy what is readable into a new file with `acemq-broker "
    "--salvage FILE NEWFILE`, or start the broker on a new file";

// The statements written in transactions, prepared once, by index.
enum Prepared : int {
    put_exchange_sql,
    delete_exchange_sql,
    delete_exchange_bindings_sql,
    put_queue_sql,
    delete_queue_sql,
    delete_queue_bindings_sql,
    delete_queue_messages_sql,
    delete_queue_stream_sql,
    put_binding_sql,
    insert_message_sql,
    delete_message_sql,
    mark_redelivered_sql,
    set_clean_sql,
    count_open_sql,
    quarantine_sql,
    set_stream_start_sql,
    prepared_count
};

constexpr const char* prepared_sql[prepared_count] = {
    "INSERT OR REPLACE INTO exchanges(name, kind, auto_delete, arguments, checksum) VALUES(?1, ?2, ?3, ?4, ?5)",
    "DELETE FROM exchanges WHERE name = ?1",
    "DELETE FROM bindings WHERE exchange = ?1",
    "INSERT OR REPLACE INTO queues(id, name, type, auto_delete, arguments, checksum) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    "DELETE FROM queues WHERE id = ?1",
    "DELETE FROM bindings WHERE queue = ?1",
    "DELETE FROM messages WHERE queue = ?1",
    "DELETE FROM stream_starts WHERE queue = ?1",
    "INSERT OR IGNORE INTO bindings(exchange, queue, routing_key, arguments, checksum) VALUES(?1, ?2, ?3, ?4, ?5)",
    "INSERT INTO messages(id, queue, enqueued, redelivered, properties, body, checksum) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    "DELETE FROM messages WHERE id = ?1",
    "UPDATE messages SET redelivered = 1 WHERE id = ?1",
    "UPDATE broker SET value = ?1 WHERE key = 'closed_cleanly'",
    "INSERT INTO broker(key, value) VALUES('opens', 1) ON CONFLICT(key) DO UPDATE SET value = value + 1",
    "INSERT INTO quarantine(id, queue, enqueued, properties, body, checksum, reason, quarantined) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    "INSERT OR REPLACE INTO stream_starts(queue, first_offset, checksum) VALUES(?1, ?2, ?3)",
};

std::vector<std::byte> pack_table(const FieldTable& table) {
    msgpack::sbuffer buffer;
    message_pack::Packer out(buffer);
    message_pack::pack_table(out, table);
    const auto* data = reinterpret_cast<const std::byte*>(buffer.data());
    return {data, data + buffer.size()};
}

std::span<const std::byte> blob(sqlite3_stmt* statement, int column) {
    const auto* data = static_cast<const std::byte*>(sqlite3_column_blob(statement, column));
    return {data, static_cast<std::size_t>(sqlite3_column_bytes(statement, column))};
}

std::string text(sqlite3_stmt* statement, int column) {
    const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(statement, column));
    return data ? std::string(data, static_cast<std::size_t>(sqlite3_column_bytes(statement, column))) : std::string();
}

FieldTable unpack_table(std::span<const std::byte> bytes, std::string_view name) {
    const msgpack::object_handle handle = message_pack::unpack_checked(bytes, "row");
    return message_pack::read_table(handle.get(), name);
}

template <class Enum, std::size_t N>
Enum enum_named(const std::string& name, const Enum (&values)[N], std::string_view what) {
    for (Enum value : values)
        if (to_string(value) == name) return value;
    throw message_pack::Malformed("the " + std::string(what) + " \"" + name + "\" is unknown");
}

std::optional<std::int64_t> optional_integer(sqlite3_stmt* statement, int column) {
    if (sqlite3_column_type(statement, column) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(statement, column);
}

constexpr ExchangeKind exchange_kinds[] = {ExchangeKind::direct, ExchangeKind::topic, ExchangeKind::fanout,
                                           ExchangeKind::headers};
constexpr QueueType queue_types[] = {QueueType::quorum, QueueType::classic, QueueType::stream};

}  // namespace

class DataFile::Statement {
public:
    Statement(sqlite3* db, const char* sql) {
        if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement_, nullptr) != SQLITE_OK)
            statement_ = nullptr;
    }
    Statement(Statement&& other) noexcept : statement_(std::exchange(other.statement_, nullptr)) {}
    Statement& operator=(Statement&&) = delete;
    ~Statement() { sqlite3_finalize(statement_); }

    sqlite3_stmt* get() const noexcept { return statement_; }

private:
    sqlite3_stmt* statement_ = nullptr;
};

DataFile::DataFile(const std::string& path, const std::string& vfs, std::uint64_t max_bytes, bool salvaging)
    : path_(path), max_bytes_(max_bytes), salvaging_(salvaging) {
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    const int opened = sqlite3_open_v2(path.c_str(), &db_, flags, vfs.empty() ? nullptr : vfs.c_str());
    if (opened != SQLITE_OK) {
        const std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(opened);
        sqlite3_close_v2(db_);
        db_ = nullptr;
        const std::string cause = vfs.empty() ? why_not_writable(path) : "";
        throw DataFileError("acemq: cannot open the broker's data file " + detail::in_quotes(path) + ": " + why +
                            (cause.empty() ? "; check that its directory exists and is writable" : cause) +
                            (vfs.empty() ? "" : ", and that SQLite VFS " + detail::in_quotes(vfs) + " is registered"));
    }
    sqlite3_extended_result_codes(db_, 1);
    try {
        // Exclusive from the first statement on: the lock is taken by BEGIN EXCLUSIVE and
        // kept until the file is closed, which is what makes it one broker's file.
        exec("PRAGMA locking_mode = EXCLUSIVE", "set its locking mode");
        check_ours();
        exec("PRAGMA journal_mode = WAL", "switch it to WAL");
        exec("PRAGMA synchronous = FULL", "make its commits synchronous");
        exec("PRAGMA journal_size_limit = 16777216", "limit its WAL");
        if (max_bytes > 0) {
            const std::int64_t page = std::max<std::int64_t>(integer_of(db_, "PRAGMA page_size"), 512);
            const std::uint64_t pages = std::max<std::uint64_t>(max_bytes / static_cast<std::uint64_t>(page), 1);
            exec(("PRAGMA max_page_count = " + std::to_string(pages)).c_str(), "cap its size");
        }
    } catch (...) {
        statements_.clear();
        sqlite3_close_v2(db_);
        db_ = nullptr;
        throw;
    }
}

void DataFile::make_writable() {
    if (version_ < schema_version) {
        begin();
        migrate(version_);
        commit();
        version_ = schema_version;
    }
    give_space_back_from_now_on();
    statements_.reserve(prepared_count);
    for (const char* sql : prepared_sql) {
        statements_.emplace_back(db_, sql);
        if (statements_.back().get() == nullptr)
            throw DataFileError("acemq: the broker's data file " + detail::in_quotes(path_) +
                                " is damaged: its schema is not the one this acemq-cpp wrote (SQLite: " +
                                sqlite3_errmsg(db_) + "); " + restore_advice);
    }
}

DataFile::~DataFile() {
    statements_.clear();
    sqlite3_close_v2(db_);
}

void DataFile::fail(const std::string& action) const {
    const int code = sqlite3_extended_errcode(db_);
    const std::string said = sqlite3_errmsg(db_);
    const int primary = code & 0xff;
    const std::string cannot = "acemq: cannot " + action + " in the broker's data file " + detail::in_quotes(path_);
    const Space space = space_around(path_);
    if (primary == SQLITE_FULL && full_at_its_limit(db_, max_bytes_, space))
        throw StorageFailure(cannot + ": disk full: the file holds its limit of " + std::to_string(max_bytes_) +
                                 " bytes (SQLite: " + said +
                                 "); consume what is queued, or raise the limit (BrokerOptions::max_data_bytes, "
                                 "acemq-broker's --max-data-bytes)",
                             true);
    if (primary == SQLITE_FULL)
        throw StorageFailure(cannot + ": disk full: the disk holding it has no room left" +
                                 (space.known ? " (" + std::to_string(space.free_bytes) + " bytes free)" : "") +
                                 " (SQLite: " + said + "); free space on that disk",
                             true);
    throw StorageFailure(
        cannot + ": SQLite said \"" + said + "\" (code " + std::to_string(code) + ")" + why_not_writable(path_), false);
}

void DataFile::exec(const char* sql, const std::string& action) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(action);
}

// Decides, before anything is written, whether this is a new file or one of ours. The
// exclusive lock is taken first, so a file another broker holds is refused as held.
void DataFile::check_ours() {
    auto refuse = [&](const std::string& why) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw DataFileError("acemq: cannot open " + detail::in_quotes(path_) + " as the broker's data file: " + why);
    };
    if (sqlite3_exec(db_, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) != SQLITE_OK ||
        sqlite3_exec(db_, "SELECT 1 FROM sqlite_master LIMIT 1", nullptr, nullptr, nullptr) != SQLITE_OK) {
        const int code = sqlite3_extended_errcode(db_) & 0xff;
        if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
            refuse(
                "another broker holds it (in this process or another); stop that broker, or give this one "
                "its own file");
        if (code == SQLITE_NOTADB && header_says_ours())
            refuse(std::string("its header names it a broker's data file, but SQLite cannot read it: the header is "
                               "damaged; ") +
                   restore_advice);
        if (code == SQLITE_NOTADB)
            refuse(
                "it is not an SQLite database, so not a file a broker wrote; it was left untouched. Give the "
                "broker a new file name");
        if (code == SQLITE_CORRUPT)
            refuse("it is corrupt (SQLite: " + std::string(sqlite3_errmsg(db_)) + "); " + restore_advice);
        const std::string cause = why_not_writable(path_);
        refuse(std::string("SQLite said \"") + sqlite3_errmsg(db_) + "\"" +
               (!cause.empty() ? cause
                : header_says_ours()
                    ? std::string("; if nothing else is wrong with it, it is damaged: ") + restore_advice
                    : std::string()));
    }
    auto integer = [&](const char* sql) { return integer_of(db_, sql); };
    const std::int64_t id = integer("PRAGMA application_id");
    const std::int64_t tables = integer("SELECT count(*) FROM sqlite_master");
    if (id == 0 && tables == 0) {
        make_schema();
        migrate(1);
        version_ = schema_version;
    } else if (id != application_id && integer("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                                               "('broker', 'exchanges', 'queues', 'bindings', 'messages')") == 5) {
        refuse("it holds a broker's tables, but its header's application_id is " + std::to_string(id) +
               ", not a broker's: the header is damaged; " + restore_advice);
    } else if (id != application_id) {
        refuse("it is another program's SQLite database (application_id " + std::to_string(id) + ", " +
               std::to_string(tables) +
               " schema entries), not a broker's; it was left untouched. Give the broker "
               "a file of its own");
    } else if (const std::int64_t version = integer("PRAGMA user_version"); version < 1 || version > schema_version) {
        refuse("it has schema version " + std::to_string(version) + ", and this acemq-cpp reads versions 1 to " +
               std::to_string(schema_version) +
               "; it was left untouched. Open it with the acemq-cpp that wrote it; if none of a later version did, "
               "its header is damaged: restore it from a copy, or start the broker on a new file");
    } else {
        sqlite3_stmt* check = nullptr;
        std::string verdict = "no answer";
        if (sqlite3_prepare_v2(db_, "PRAGMA quick_check", -1, &check, nullptr) == SQLITE_OK &&
            sqlite3_step(check) == SQLITE_ROW)
            verdict = text(check, 0);
        else
            verdict = sqlite3_errmsg(db_);
        sqlite3_finalize(check);
        if (verdict != "ok" && !salvaging_)
            refuse("it is corrupt (SQLite's quick_check: " + verdict + "); " + restore_advice);
        version_ = version;
    }
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
        refuse(std::string("its schema could not be written: ") + sqlite3_errmsg(db_));
}

// Whether the first bytes of the file, read past SQLite, carry a broker's application_id: so
// a file SQLite cannot open is told apart as a broker's with a damaged header. False when
// the file is not on the real disk (another VFS) or is too short.
// A version-1 file has no checksums: its rows are read as if they carried none.
std::string DataFile::checksum_column() const { return version_ >= 2 ? "checksum" : "NULL"; }

bool DataFile::header_says_ours() const {
    std::ifstream in(path_, std::ios::binary);
    unsigned char header[72] = {};
    if (!in.read(reinterpret_cast<char*>(header), sizeof header)) return false;
    const auto at = [&](int offset) { return static_cast<std::uint32_t>(header[offset]); };
    return (at(68) << 24 | at(69) << 16 | at(70) << 8 | at(71)) == static_cast<std::uint32_t>(application_id);
}

void DataFile::make_schema() {
    // Before the first table: afterwards only a VACUUM can change it (see the constructor).
    exec("PRAGMA auto_vacuum = INCREMENTAL", "let it give space back");
    exec(schema, "make its schema");
    exec(("PRAGMA application_id = " + std::to_string(application_id)).c_str(), "mark it as a broker's");
}

// From `version` to schema_version, inside a transaction.
void DataFile::migrate(std::int64_t version) {
    if (version == schema_version) return;
    if (version < 2) exec(to_version_2, "add checksums to its schema");
    if (version < 3) exec(to_version_3, "add streams to its schema");
    exec(("PRAGMA user_version = " + std::to_string(schema_version)).c_str(), "record its schema version");
}

DataFileContents DataFile::read() {
    DataFileContents contents;
    auto each_row = [&](const std::string& sql, std::string_view what, auto&& read_row) {
        sqlite3_stmt* prepared = nullptr;
        const int code = sqlite3_prepare_v2(db_, sql.c_str(), -1, &prepared, nullptr);
        // Finalized whatever read_row throws: an unfinalized statement keeps the file open,
        // and held, after the broker gave up on it.
        const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> statement(prepared, sqlite3_finalize);
        if (code != SQLITE_OK)
            throw DataFileError("acemq: cannot read the " + std::string(what) + " of the broker's data file " +
                                detail::in_quotes(path_) + ": " + sqlite3_errmsg(db_) + "; " + restore_advice);
        int stepped = 0;
        try {
            while ((stepped = sqlite3_step(statement.get())) == SQLITE_ROW) read_row(statement.get());
        } catch (const message_pack::Malformed& error) {
            throw DataFileError("acemq: the broker's data file " + detail::in_quotes(path_) + " holds a row of its " +
                                std::string(what) + " it cannot read (" + error.what() + "); " + restore_advice);
        }
        if (stepped != SQLITE_DONE)
            throw DataFileError("acemq: cannot read the " + std::string(what) + " of the broker's data file " +
                                detail::in_quotes(path_) + ": " + sqlite3_errmsg(db_) + "; " + restore_advice);
    };
    each_row("SELECT key, value FROM broker", "state", [&](sqlite3_stmt* row) {
        const std::string key = text(row, 0);
        if (key == "closed_cleanly") contents.closed_cleanly = sqlite3_column_int64(row, 1) != 0;
        if (key == "opens") contents.opens = static_cast<std::uint64_t>(sqlite3_column_int64(row, 1));
    });
    // A declaration that fails its checksum refuses the file: what it declared (a queue's
    // name, its arguments) cannot be told, so neither can where its messages belong.
    auto check_declaration = [&](sqlite3_stmt* row, int column, std::int64_t computed, const std::string& what) {
        const std::optional<std::int64_t> stored = optional_integer(row, column);
        if (stored && *stored != computed)
            throw DataFileError("acemq: the broker's data file " + detail::in_quotes(path_) + " is damaged: " + what +
                                " does not match its checksum (a byte changed on the disk); " + restore_advice);
    };
    each_row(
        std::string("SELECT name, kind, auto_delete, arguments, ") + checksum_column() + " FROM exchanges", "exchanges",
        [&](sqlite3_stmt* row) {
            const std::string name = text(row, 0), kind = text(row, 1);
            check_declaration(row, 4, exchange_checksum(name, kind, sqlite3_column_int64(row, 2), blob(row, 3)),
                              "the declaration of exchange " + detail::in_quotes(name));
            contents.exchanges.push_back(ExchangeDeclaration{.name = name,
                                                             .kind = enum_named(kind, exchange_kinds, "exchange kind"),
                                                             .durable = true,
                                                             .auto_delete = sqlite3_column_int64(row, 2) != 0,
                                                             .arguments = unpack_table(blob(row, 3), "arguments")});
        });
    each_row(
        std::string("SELECT id, name, type, auto_delete, arguments, ") + checksum_column() + " FROM queues ORDER BY id",
        "queues", [&](sqlite3_stmt* row) {
            const std::int64_t id = sqlite3_column_int64(row, 0);
            const std::string name = text(row, 1), type = text(row, 2);
            check_declaration(row, 5, queue_checksum(id, name, type, sqlite3_column_int64(row, 3), blob(row, 4)),
                              "the declaration of queue " + detail::in_quotes(name));
            contents.queues.push_back(
                StoredQueue{.id = static_cast<std::uint64_t>(id),
                            .declaration = QueueDeclaration{.name = name,
                                                            .type = enum_named(type, queue_types, "queue type"),
                                                            .durable = true,
                                                            .exclusive = false,
                                                            .auto_delete = sqlite3_column_int64(row, 3) != 0,
                                                            .arguments = unpack_table(blob(row, 4), "arguments")}});
        });
    each_row(std::string("SELECT exchange, queue, routing_key, arguments, ") + checksum_column() + " FROM bindings",
             "bindings", [&](sqlite3_stmt* row) {
                 const std::string exchange = text(row, 0), routing_key = text(row, 2);
                 const std::int64_t queue = sqlite3_column_int64(row, 1);
                 check_declaration(row, 4, binding_checksum(exchange, queue, routing_key, blob(row, 3)),
                                   "a binding of exchange " + detail::in_quotes(exchange));
                 contents.bindings.push_back(StoredBinding{.exchange = exchange,
                                                           .queue = static_cast<std::uint64_t>(queue),
                                                           .routing_key = routing_key,
                                                           .arguments = unpack_table(blob(row, 3), "arguments")});
             });
    if (version_ >= 3)
        each_row("SELECT queue, first_offset, checksum FROM stream_starts", "stream starts", [&](sqlite3_stmt* row) {
            const std::int64_t queue = sqlite3_column_int64(row, 0), first = sqlite3_column_int64(row, 1);
            check_declaration(row, 2, stream_start_checksum(queue, first),
                              "where the stream of queue id " + std::to_string(queue) + " starts");
            contents.stream_starts.emplace(static_cast<std::uint64_t>(queue), first);
        });
    // A message that fails its checksum, or whose properties cannot be read, is not delivered
    // altered and does not stop the rest: the broker moves it to the quarantine at open.
    each_row(
        "SELECT id, queue, enqueued, redelivered, properties, body, " + checksum_column() +
            " FROM messages ORDER BY id",
        "messages", [&](sqlite3_stmt* row) {
            DamagedRow raw{.id = sqlite3_column_int64(row, 0),
                           .queue = sqlite3_column_int64(row, 1),
                           .enqueued_ms = optional_integer(row, 2),
                           .checksum = optional_integer(row, 6)};
            const std::span<const std::byte> properties = blob(row, 4), body = blob(row, 5);
            auto damaged = [&](std::string reason) {
                raw.properties.assign(properties.begin(), properties.end());
                raw.body.assign(body.begin(), body.end());
                raw.reason = std::move(reason);
                contents.damaged.push_back(std::move(raw));
            };
            if (raw.checksum && *raw.checksum != message_checksum(raw.id, raw.queue, raw.enqueued_ms, properties, body))
                return damaged("its row does not match its checksum (a byte changed on the disk)");
            StoredRow stored{.id = static_cast<std::uint64_t>(raw.id),
                             .queue = static_cast<std::uint64_t>(raw.queue),
                             .enqueued_ms = raw.enqueued_ms};
            try {
                stored.message = unpack_message(properties, body, sqlite3_column_int64(row, 3) != 0);
            } catch (const message_pack::Malformed& error) {
                return damaged(std::string("its properties cannot be read: ") + error.what());
            }
            contents.messages.push_back(std::move(stored));
        });
    if (version_ >= 2)
        each_row("SELECT count(*) FROM quarantine", "quarantine", [&](sqlite3_stmt* row) {
            contents.quarantined = static_cast<std::uint64_t>(sqlite3_column_int64(row, 0));
        });
    return contents;
}

DataFileContents DataFile::read_readable(std::vector<std::string>& lost) {
    DataFileContents contents;
    // Each row of `sql` to `take` until one cannot be read; whether the scan reached the
    // end, and SQLite's word when it did not.
    auto scan = [&](const std::string& sql, auto&& take) -> std::pair<bool, std::string> {
        sqlite3_stmt* prepared = nullptr;
        const int code = sqlite3_prepare_v2(db_, sql.c_str(), -1, &prepared, nullptr);
        const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> statement(prepared, sqlite3_finalize);
        if (code != SQLITE_OK) return {false, sqlite3_errmsg(db_)};
        int stepped = 0;
        while ((stepped = sqlite3_step(statement.get())) == SQLITE_ROW) take(statement.get());
        if (stepped == SQLITE_DONE) return {true, {}};
        return {false, sqlite3_errmsg(db_)};
    };
    auto checked = [&](sqlite3_stmt* row, int column, std::int64_t computed, const std::string& what) {
        const std::optional<std::int64_t> stored = optional_integer(row, column);
        if (!stored || *stored == computed) return true;
        lost.push_back(what + " fails its checksum");
        return false;
    };
    auto readable = [&](auto&& unpack, const std::string& what) {
        try {
            unpack();
            return true;
        } catch (const message_pack::Malformed& error) {
            lost.push_back(what + " cannot be read: " + error.what());
            return false;
        }
    };
    auto scan_all = [&](const std::string& sql, std::string_view table, auto&& take) {
        if (auto [done, why] = scan(sql, take); !done)
            lost.push_back("the " + std::string(table) + " after the last one copied (SQLite: " + why + ")");
    };
    scan_all(std::string("SELECT name, kind, auto_delete, arguments, ") + checksum_column() + " FROM exchanges",
             "exchanges", [&](sqlite3_stmt* row) {
                 const std::string name = text(row, 0), kind = text(row, 1);
                 const std::string what = "exchange " + detail::in_quotes(name);
                 if (!checked(row, 4, exchange_checksum(name, kind, sqlite3_column_int64(row, 2), blob(row, 3)), what))
                     return;
                 ExchangeDeclaration exchange{
                     .name = name, .durable = true, .auto_delete = sqlite3_column_int64(row, 2) != 0, .arguments = {}};
                 const bool ok = readable(
                     [&] {
                         exchange.kind = enum_named(kind, exchange_kinds, "exchange kind");
                         exchange.arguments = unpack_table(blob(row, 3), "arguments");
                     },
                     what);
                 if (ok) contents.exchanges.push_back(std::move(exchange));
             });
    scan_all(
        std::string("SELECT id, name, type, auto_delete, arguments, ") + checksum_column() + " FROM queues ORDER BY id",
        "queues", [&](sqlite3_stmt* row) {
            const std::int64_t id = sqlite3_column_int64(row, 0);
            const std::string name = text(row, 1), type = text(row, 2);
            const std::string what = "queue " + detail::in_quotes(name);
            if (!checked(row, 5, queue_checksum(id, name, type, sqlite3_column_int64(row, 3), blob(row, 4)), what))
                return;
            StoredQueue queue{.id = static_cast<std::uint64_t>(id),
                              .declaration = QueueDeclaration{.name = name,
                                                              .durable = true,
                                                              .exclusive = false,
                                                              .auto_delete = sqlite3_column_int64(row, 3) != 0,
                                                              .arguments = {}}};
            const bool ok = readable(
                [&] {
                    queue.declaration.type = enum_named(type, queue_types, "queue type");
                    queue.declaration.arguments = unpack_table(blob(row, 4), "arguments");
                },
                what);
            if (ok) contents.queues.push_back(std::move(queue));
        });
    scan_all(std::string("SELECT exchange, queue, routing_key, arguments, ") + checksum_column() + " FROM bindings",
             "bindings", [&](sqlite3_stmt* row) {
                 const std::string exchange = text(row, 0), routing_key = text(row, 2);
                 const std::int64_t queue = sqlite3_column_int64(row, 1);
                 const std::string what = "a binding of exchange " + detail::in_quotes(exchange);
                 if (!checked(row, 4, binding_checksum(exchange, queue, routing_key, blob(row, 3)), what)) return;
                 StoredBinding binding{
                     .exchange = exchange, .queue = static_cast<std::uint64_t>(queue), .routing_key = routing_key};
                 if (readable([&] { binding.arguments = unpack_table(blob(row, 3), "arguments"); }, what))
                     contents.bindings.push_back(std::move(binding));
             });

    if (version_ >= 3)
        scan_all("SELECT queue, first_offset, checksum FROM stream_starts", "stream starts", [&](sqlite3_stmt* row) {
            const std::int64_t queue = sqlite3_column_int64(row, 0), first = sqlite3_column_int64(row, 1);
            if (checked(row, 2, stream_start_checksum(queue, first),
                        "where the stream of queue id " + std::to_string(queue) +
                            " starts (its offsets begin at 0 "
                            "in the copy)"))
                contents.stream_starts.emplace(static_cast<std::uint64_t>(queue), first);
        });
    // Messages from both ends: a damaged page in the middle of the table stops a scan, and
    // what lies beyond it is read from the other end.
    std::set<std::int64_t> seen;
    auto take_message = [&](sqlite3_stmt* row) {
        const std::int64_t id = sqlite3_column_int64(row, 0);
        if (!seen.insert(id).second) return;
        const std::optional<std::int64_t> enqueued = optional_integer(row, 2);
        const std::span<const std::byte> properties = blob(row, 4), body = blob(row, 5);
        const std::string what = "message " + std::to_string(id);
        if (!checked(row, 6, message_checksum(id, sqlite3_column_int64(row, 1), enqueued, properties, body), what))
            return;
        StoredRow stored{.id = static_cast<std::uint64_t>(id),
                         .queue = static_cast<std::uint64_t>(sqlite3_column_int64(row, 1)),
                         .enqueued_ms = enqueued};
        const bool redelivered = sqlite3_column_int64(row, 3) != 0;
        if (!readable([&] { stored.message = unpack_message(properties, body, redelivered); }, what)) return;
        contents.messages.push_back(std::move(stored));
    };
    const std::string columns =
        "SELECT id, queue, enqueued, redelivered, properties, body, " + checksum_column() + " FROM messages ";
    if (auto [done, why] = scan(columns + "ORDER BY id", take_message); !done) {
        const std::string after = seen.empty() ? "the first" : "id " + std::to_string(*seen.rbegin());
        const std::int64_t from = seen.empty() ? std::numeric_limits<std::int64_t>::min() : *seen.rbegin();
        scan(columns + "WHERE id > " + std::to_string(from) + " ORDER BY id DESC", take_message);
        const auto resumed = seen.upper_bound(from);
        lost.push_back("the messages after " + after +
                       (resumed != seen.end() ? " and before id " + std::to_string(*resumed) : std::string()) +
                       ", in a damaged stretch of the table (SQLite: " + why + ")");
        std::sort(contents.messages.begin(), contents.messages.end(),
                  [](const StoredRow& a, const StoredRow& b) { return a.id < b.id; });
    }
    return contents;
}

void DataFile::begin(bool synced) {
    if (synced != synchronous_full_) {
        // Outside any transaction: SQLite refuses to change it inside one.
        exec(synced ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", "choose how to commit");
        synchronous_full_ = synced;
    }
    exec("BEGIN", "begin a transaction");
}

void DataFile::commit() {
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
        try {
            fail("commit");
        } catch (...) {
            rollback();
            throw;
        }
    }
}

void DataFile::rollback() noexcept {
    if (sqlite3_get_autocommit(db_) == 0) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

DataFile::Statement& DataFile::statement(int which) { return statements_[static_cast<std::size_t>(which)]; }

namespace {

// Binds, steps and resets one prepared statement; false when the step failed.
class Run {
public:
    explicit Run(sqlite3_stmt* statement) : statement_(statement) {}
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;
    ~Run() {
        sqlite3_reset(statement_);
        sqlite3_clear_bindings(statement_);
    }

    Run& integer(int index, std::int64_t value) {
        sqlite3_bind_int64(statement_, index, value);
        return *this;
    }
    Run& null(int index) {
        sqlite3_bind_null(statement_, index);
        return *this;
    }
    Run& text(int index, std::string_view value) {
        sqlite3_bind_text64(statement_, index, value.data(), value.size(), SQLITE_STATIC, SQLITE_UTF8);
        return *this;
    }
    Run& blob(int index, std::span<const std::byte> value) {
        sqlite3_bind_blob64(statement_, index, value.empty() ? "" : static_cast<const void*>(value.data()),
                            value.size(), SQLITE_STATIC);
        return *this;
    }
    bool step() { return sqlite3_step(statement_) == SQLITE_DONE; }

private:
    sqlite3_stmt* statement_;
};

}  // namespace

void DataFile::put_exchange(const ExchangeDeclaration& exchange) {
    const std::vector<std::byte> arguments = pack_table(exchange.arguments);
    const std::string kind(to_string(exchange.kind));
    Run run(statement(put_exchange_sql).get());
    run.text(1, exchange.name)
        .text(2, kind)
        .integer(3, exchange.auto_delete)
        .blob(4, arguments)
        .integer(5, exchange_checksum(exchange.name, kind, exchange.auto_delete, arguments));
    if (!run.step()) fail("write exchange " + detail::in_quotes(exchange.name));
}

void DataFile::delete_exchange(const std::string& name) {
    for (int which : {delete_exchange_bindings_sql, delete_exchange_sql}) {
        Run run(statement(which).get());
        if (!run.text(1, name).step()) fail("delete exchange " + detail::in_quotes(name));
    }
}

void DataFile::put_queue(std::uint64_t id, const QueueDeclaration& queue) {
    const std::vector<std::byte> arguments = pack_table(queue.arguments);
    const std::string type(to_string(queue.type));
    Run run(statement(put_queue_sql).get());
    run.integer(1, static_cast<std::int64_t>(id))
        .text(2, queue.name)
        .text(3, type)
        .integer(4, queue.auto_delete)
        .blob(5, arguments)
        .integer(6, queue_checksum(static_cast<std::int64_t>(id), queue.name, type, queue.auto_delete, arguments));
    if (!run.step()) fail("write queue " + detail::in_quotes(queue.name));
}

void DataFile::delete_queue(std::uint64_t id) {
    for (int which :
         {delete_queue_messages_sql, delete_queue_stream_sql, delete_queue_bindings_sql, delete_queue_sql}) {
        Run run(statement(which).get());
        if (!run.integer(1, static_cast<std::int64_t>(id)).step()) fail("delete a queue");
    }
}

void DataFile::put_binding(const StoredBinding& binding) {
    const std::vector<std::byte> arguments = pack_table(binding.arguments);
    Run run(statement(put_binding_sql).get());
    run.text(1, binding.exchange)
        .integer(2, static_cast<std::int64_t>(binding.queue))
        .text(3, binding.routing_key)
        .blob(4, arguments)
        .integer(5, binding_checksum(binding.exchange, static_cast<std::int64_t>(binding.queue), binding.routing_key,
                                     arguments));
    if (!run.step()) fail("write a binding of exchange " + detail::in_quotes(binding.exchange));
}

void DataFile::insert_message(std::uint64_t id, std::uint64_t queue, std::optional<std::int64_t> enqueued_ms,
                              bool redelivered, std::span<const std::byte> properties, std::span<const std::byte> body,
                              std::int64_t checksum) {
    Run run(statement(insert_message_sql).get());
    run.integer(1, static_cast<std::int64_t>(id)).integer(2, static_cast<std::int64_t>(queue));
    if (enqueued_ms)
        run.integer(3, *enqueued_ms);
    else
        run.null(3);
    run.integer(4, redelivered).blob(5, properties).blob(6, body).integer(7, checksum);
    if (!run.step()) fail("write a message");
}

void DataFile::delete_message(std::uint64_t id) {
    Run run(statement(delete_message_sql).get());
    if (!run.integer(1, static_cast<std::int64_t>(id)).step()) fail("delete a message");
}

void DataFile::mark_redelivered(std::uint64_t id) {
    Run run(statement(mark_redelivered_sql).get());
    if (!run.integer(1, static_cast<std::int64_t>(id)).step()) fail("mark a message redelivered");
}

void DataFile::set_stream_start(std::uint64_t queue, std::int64_t first_offset) {
    Run run(statement(set_stream_start_sql).get());
    run.integer(1, static_cast<std::int64_t>(queue))
        .integer(2, first_offset)
        .integer(3, stream_start_checksum(static_cast<std::int64_t>(queue), first_offset));
    if (!run.step()) fail("write where a stream starts");
}

void DataFile::set_closed_cleanly(bool clean) {
    Run run(statement(set_clean_sql).get());
    if (!run.integer(1, clean).step()) fail("record how the broker closed");
}

void DataFile::quarantine(const DamagedRow& row, std::int64_t now_ms) {
    {
        Run run(statement(quarantine_sql).get());
        run.integer(1, row.id).integer(2, row.queue);
        if (row.enqueued_ms)
            run.integer(3, *row.enqueued_ms);
        else
            run.null(3);
        run.blob(4, row.properties).blob(5, row.body);
        if (row.checksum)
            run.integer(6, *row.checksum);
        else
            run.null(6);
        run.text(7, row.reason).integer(8, now_ms);
        if (!run.step()) fail("quarantine a damaged message");
    }
    delete_message(static_cast<std::uint64_t>(row.id));
}

void DataFile::record_open() {
    set_closed_cleanly(false);
    Run run(statement(count_open_sql).get());
    if (!run.step()) fail("count the broker's opens");
}

// A file made before the broker gave space back (auto_vacuum NONE) is rewritten once, so it
// can from now on. Not fatal when it fails (a disk too full to hold the copy VACUUM makes):
// the file works as before, only keeps its size.
void DataFile::give_space_back_from_now_on() {
    constexpr std::int64_t incremental = 2;
    if (integer_of(db_, "PRAGMA auto_vacuum") == incremental) return;
    if (sqlite3_exec(db_, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM", nullptr, nullptr, nullptr) != SQLITE_OK)
        log(LogLevel::warning, "durable-broker",
            "acemq: the broker's data file " + detail::in_quotes(path_) +
                " could not be rewritten to give space back when messages are acked (SQLite: " + sqlite3_errmsg(db_) +
                "); it works as before, and keeps its size");
}

void DataFile::give_space_back() noexcept {
    try {
        begin(true);
        exec("PRAGMA incremental_vacuum", "give free pages back");
        commit();
    } catch (const StorageFailure&) {
        // Nothing is lost: the free pages stay for the next writes, and a disk that refuses
        // this refuses the next commit too, which reports it.
        rollback();
        return;
    }
    checkpoint();
}

std::unique_ptr<OnlineBackup> DataFile::backup_to(const std::string& path) {
    return std::make_unique<OnlineBackup>(db_, path);
}

std::optional<std::uint64_t> free_disk_bytes(const std::string& path) {
    const Space space = space_around(path);
    if (!space.known) return std::nullopt;
    return space.free_bytes;
}

void DataFile::checkpoint() noexcept {
    sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
}

std::vector<std::byte> pack_properties(const InboundMessage& message) {
    msgpack::sbuffer buffer(64 + message.headers().size() * 48);
    message_pack::Packer out(buffer);
    out.pack_array(6);
    message_pack::pack_text(out, message.content_type());
    message_pack::pack_text(out, message.exchange());
    message_pack::pack_text(out, message.routing_key());
    message_pack::pack_text(out, message.message_id());
    message_pack::pack_text(out, message.reply_to());
    message_pack::pack_table(out, message.headers());
    const auto* data = reinterpret_cast<const std::byte*>(buffer.data());
    return {data, data + buffer.size()};
}

InboundMessage unpack_message(std::span<const std::byte> properties, std::span<const std::byte> body,
                              bool redelivered) {
    const msgpack::object_handle handle = message_pack::unpack_checked(properties, "row");
    const msgpack::object_array& fields = message_pack::read_array(handle.get(), "properties", 6);
    // The headers read straight into the packed form the message keeps.
    OutboundMessage message;
    message.content_type = message_pack::read_text(fields.ptr[0], "content_type");
    message.exchange = message_pack::read_text(fields.ptr[1], "exchange");
    message.routing_key = message_pack::read_text(fields.ptr[2], "routing_key");
    message.message_id = message_pack::read_text(fields.ptr[3], "message_id");
    message.reply_to = message_pack::read_text(fields.ptr[4], "reply_to");
    message.headers = message_pack::read_packed_table(fields.ptr[5], "headers", message.message_id);
    message.body.assign(body.begin(), body.end());
    return message_pack::message_of(std::move(message), redelivered);
}

}  // namespace acemq::inproc::detail
