#include "inproc/data_file.hpp"

#include <sqlite3.h>

#include <acemq/inproc.hpp>
#include "inproc/quoted.hpp"
#include "msgpack/message_pack.hpp"

namespace acemq::inproc::detail {

namespace {

// PRAGMA application_id of a broker's data file: "AcMQ".
constexpr int application_id = 0x41634d51;
constexpr int schema_version = 1;

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

// The statements written in transactions, prepared once, by index.
enum Prepared : int {
    put_exchange_sql,
    delete_exchange_sql,
    put_queue_sql,
    delete_queue_sql,
    delete_queue_bindings_sql,
    delete_queue_messages_sql,
    put_binding_sql,
    insert_message_sql,
    delete_message_sql,
    mark_redelivered_sql,
    set_clean_sql,
    count_open_sql,
    prepared_count
};

constexpr const char* prepared_sql[prepared_count] = {
    "INSERT OR REPLACE INTO exchanges(name, kind, auto_delete, arguments) VALUES(?1, ?2, ?3, ?4)",
    "DELETE FROM exchanges WHERE name = ?1",
    "INSERT OR REPLACE INTO queues(id, name, type, auto_delete, arguments) VALUES(?1, ?2, ?3, ?4, ?5)",
    "DELETE FROM queues WHERE id = ?1",
    "DELETE FROM bindings WHERE queue = ?1",
    "DELETE FROM messages WHERE queue = ?1",
    "INSERT OR IGNORE INTO bindings(exchange, queue, routing_key, arguments) VALUES(?1, ?2, ?3, ?4)",
    "INSERT INTO messages(id, queue, enqueued, redelivered, properties, body) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    "DELETE FROM messages WHERE id = ?1",
    "UPDATE messages SET redelivered = 1 WHERE id = ?1",
    "UPDATE broker SET value = ?1 WHERE key = 'closed_cleanly'",
    "INSERT INTO broker(key, value) VALUES('opens', 1) ON CONFLICT(key) DO UPDATE SET value = value + 1",
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

DataFile::DataFile(const std::string& path, const std::string& vfs, std::uint64_t max_bytes) : path_(path) {
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    const int opened = sqlite3_open_v2(path.c_str(), &db_, flags, vfs.empty() ? nullptr : vfs.c_str());
    if (opened != SQLITE_OK) {
        const std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(opened);
        sqlite3_close_v2(db_);
        db_ = nullptr;
        throw DataFileError("acemq: cannot open the broker's data file " + detail::in_quotes(path) + ": " + why +
                            "; check that its directory exists and is writable" +
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
            sqlite3_stmt* page_size = nullptr;
            sqlite3_prepare_v2(db_, "PRAGMA page_size", -1, &page_size, nullptr);
            const std::int64_t page = sqlite3_step(page_size) == SQLITE_ROW ? sqlite3_column_int64(page_size, 0) : 4096;
            sqlite3_finalize(page_size);
            const std::uint64_t pages = std::max<std::uint64_t>(max_bytes / static_cast<std::uint64_t>(page), 1);
            exec(("PRAGMA max_page_count = " + std::to_string(pages)).c_str(), "cap its size");
        }
        statements_.reserve(prepared_count);
        for (const char* sql : prepared_sql) {
            statements_.emplace_back(db_, sql);
            if (statements_.back().get() == nullptr) fail("prepare its statements");
        }
    } catch (...) {
        statements_.clear();
        sqlite3_close_v2(db_);
        db_ = nullptr;
        throw;
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
    if (primary == SQLITE_FULL)
        throw StorageFailure("acemq: cannot " + action + " in the broker's data file " + detail::in_quotes(path_) +
                                 ": disk full (SQLite: " + said +
                                 "); free space on its disk, or raise BrokerOptions::max_data_bytes",
                             true);
    throw StorageFailure("acemq: cannot " + action + " in the broker's data file " + detail::in_quotes(path_) +
                             ": SQLite said \"" + said + "\" (code " + std::to_string(code) + ")",
                         false);
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
        if (code == SQLITE_NOTADB)
            refuse(
                "it is not an SQLite database, so not a file a broker wrote; it was left untouched. Give the "
                "broker a new file name");
        if (code == SQLITE_CORRUPT)
            refuse("it is corrupt (SQLite: " + std::string(sqlite3_errmsg(db_)) +
                   "); it was left untouched. Restore it from a copy, or start the broker on a new file");
        refuse(std::string("SQLite said \"") + sqlite3_errmsg(db_) + "\"");
    }
    auto integer = [&](const char* sql) {
        sqlite3_stmt* statement = nullptr;
        std::int64_t value = 0;
        if (sqlite3_prepare_v2(db_, sql, -1, &statement, nullptr) == SQLITE_OK && sqlite3_step(statement) == SQLITE_ROW)
            value = sqlite3_column_int64(statement, 0);
        sqlite3_finalize(statement);
        return value;
    };
    const std::int64_t id = integer("PRAGMA application_id");
    const std::int64_t tables = integer("SELECT count(*) FROM sqlite_master");
    if (id == 0 && tables == 0) {
        make_schema();
    } else if (id != application_id) {
        refuse("it is another program's SQLite database (application_id " + std::to_string(id) + ", " +
               std::to_string(tables) +
               " schema entries), not a broker's; it was left untouched. Give the broker "
               "a file of its own");
    } else if (const std::int64_t version = integer("PRAGMA user_version"); version != schema_version) {
        refuse("it has schema version " + std::to_string(version) + ", and this acemq-cpp reads version " +
               std::to_string(schema_version) + "; it was left untouched. Open it with the acemq-cpp that wrote it");
    } else {
        sqlite3_stmt* check = nullptr;
        std::string verdict = "no answer";
        if (sqlite3_prepare_v2(db_, "PRAGMA quick_check", -1, &check, nullptr) == SQLITE_OK &&
            sqlite3_step(check) == SQLITE_ROW)
            verdict = text(check, 0);
        else
            verdict = sqlite3_errmsg(db_);
        sqlite3_finalize(check);
        if (verdict != "ok")
            refuse("it is corrupt (SQLite's quick_check: " + verdict +
                   "); it was left untouched. Restore it from a copy, or start the broker on a new file");
    }
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
        refuse(std::string("its schema could not be written: ") + sqlite3_errmsg(db_));
}

void DataFile::make_schema() {
    exec(schema, "make its schema");
    exec(("PRAGMA application_id = " + std::to_string(application_id)).c_str(), "mark it as a broker's");
    exec(("PRAGMA user_version = " + std::to_string(schema_version)).c_str(), "record its schema version");
}

DataFileContents DataFile::read() {
    DataFileContents contents;
    auto each_row = [&](const char* sql, std::string_view what, auto&& read_row) {
        sqlite3_stmt* statement = nullptr;
        if (sqlite3_prepare_v2(db_, sql, -1, &statement, nullptr) != SQLITE_OK)
            throw DataFileError("acemq: cannot read the " + std::string(what) + " of the broker's data file " +
                                detail::in_quotes(path_) + ": " + sqlite3_errmsg(db_));
        int stepped = 0;
        try {
            while ((stepped = sqlite3_step(statement)) == SQLITE_ROW) read_row(statement);
        } catch (const message_pack::Malformed& error) {
            sqlite3_finalize(statement);
            throw DataFileError("acemq: the broker's data file " + detail::in_quotes(path_) + " holds a row of its " +
                                std::string(what) + " it cannot read (" + error.what() +
                                "); it was left untouched. Restore it from a copy, or start on a new file");
        }
        sqlite3_finalize(statement);
        if (stepped != SQLITE_DONE)
            throw DataFileError("acemq: cannot read the " + std::string(what) + " of the broker's data file " +
                                detail::in_quotes(path_) + ": " + sqlite3_errmsg(db_) +
                                "; it was left untouched. Restore it from a copy, or start on a new file");
    };
    each_row("SELECT key, value FROM broker", "state", [&](sqlite3_stmt* row) {
        const std::string key = text(row, 0);
        if (key == "closed_cleanly") contents.closed_cleanly = sqlite3_column_int64(row, 1) != 0;
        if (key == "opens") contents.opens = static_cast<std::uint64_t>(sqlite3_column_int64(row, 1));
    });
    each_row("SELECT name, kind, auto_delete, arguments FROM exchanges", "exchanges", [&](sqlite3_stmt* row) {
        contents.exchanges.push_back(
            ExchangeDeclaration{.name = text(row, 0),
                                .kind = enum_named(text(row, 1), exchange_kinds, "exchange kind"),
                                .durable = true,
                                .auto_delete = sqlite3_column_int64(row, 2) != 0,
                                .arguments = unpack_table(blob(row, 3), "arguments")});
    });
    each_row("SELECT id, name, type, auto_delete, arguments FROM queues ORDER BY id", "queues", [&](sqlite3_stmt* row) {
        contents.queues.push_back(
            StoredQueue{.id = static_cast<std::uint64_t>(sqlite3_column_int64(row, 0)),
                        .declaration = QueueDeclaration{.name = text(row, 1),
                                                        .type = enum_named(text(row, 2), queue_types, "queue type"),
                                                        .durable = true,
                                                        .exclusive = false,
                                                        .auto_delete = sqlite3_column_int64(row, 3) != 0,
                                                        .arguments = unpack_table(blob(row, 4), "arguments")}});
    });
    each_row("SELECT exchange, queue, routing_key, arguments FROM bindings", "bindings", [&](sqlite3_stmt* row) {
        contents.bindings.push_back(StoredBinding{.exchange = text(row, 0),
                                                  .queue = static_cast<std::uint64_t>(sqlite3_column_int64(row, 1)),
                                                  .routing_key = text(row, 2),
                                                  .arguments = unpack_table(blob(row, 3), "arguments")});
    });
    each_row("SELECT id, queue, enqueued, redelivered, properties, body FROM messages ORDER BY id", "messages",
             [&](sqlite3_stmt* row) {
                 StoredRow stored{.id = static_cast<std::uint64_t>(sqlite3_column_int64(row, 0)),
                                  .queue = static_cast<std::uint64_t>(sqlite3_column_int64(row, 1))};
                 if (sqlite3_column_type(row, 2) != SQLITE_NULL) stored.enqueued_ms = sqlite3_column_int64(row, 2);
                 stored.message.redelivered = sqlite3_column_int64(row, 3) != 0;
                 unpack_properties(blob(row, 4), stored.message);
                 const std::span<const std::byte> body = blob(row, 5);
                 stored.message.body.assign(body.begin(), body.end());
                 contents.messages.push_back(std::move(stored));
             });
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
    Run run(statement(put_exchange_sql).get());
    run.text(1, exchange.name).text(2, to_string(exchange.kind)).integer(3, exchange.auto_delete).blob(4, arguments);
    if (!run.step()) fail("write exchange " + detail::in_quotes(exchange.name));
}

void DataFile::delete_exchange(const std::string& name) {
    Run run(statement(delete_exchange_sql).get());
    if (!run.text(1, name).step()) fail("delete exchange " + detail::in_quotes(name));
}

void DataFile::put_queue(std::uint64_t id, const QueueDeclaration& queue) {
    const std::vector<std::byte> arguments = pack_table(queue.arguments);
    Run run(statement(put_queue_sql).get());
    run.integer(1, static_cast<std::int64_t>(id))
        .text(2, queue.name)
        .text(3, to_string(queue.type))
        .integer(4, queue.auto_delete)
        .blob(5, arguments);
    if (!run.step()) fail("write queue " + detail::in_quotes(queue.name));
}

void DataFile::delete_queue(std::uint64_t id) {
    for (int which : {delete_queue_messages_sql, delete_queue_bindings_sql, delete_queue_sql}) {
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
        .blob(4, arguments);
    if (!run.step()) fail("write a binding of exchange " + detail::in_quotes(binding.exchange));
}

void DataFile::insert_message(std::uint64_t id, std::uint64_t queue, std::optional<std::int64_t> enqueued_ms,
                              bool redelivered, std::span<const std::byte> properties,
                              std::span<const std::byte> body) {
    Run run(statement(insert_message_sql).get());
    run.integer(1, static_cast<std::int64_t>(id)).integer(2, static_cast<std::int64_t>(queue));
    if (enqueued_ms)
        run.integer(3, *enqueued_ms);
    else
        run.null(3);
    run.integer(4, redelivered).blob(5, properties).blob(6, body);
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

void DataFile::set_closed_cleanly(bool clean) {
    Run run(statement(set_clean_sql).get());
    if (!run.integer(1, clean).step()) fail("record how the broker closed");
}

void DataFile::record_open() {
    set_closed_cleanly(false);
    Run run(statement(count_open_sql).get());
    if (!run.step()) fail("count the broker's opens");
}

void DataFile::checkpoint() noexcept {
    sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
}

std::vector<std::byte> pack_properties(const InboundMessage& message) {
    msgpack::sbuffer buffer(64 + message.headers.size() * 48);
    message_pack::Packer out(buffer);
    out.pack_array(6);
    message_pack::pack_text(out, message.content_type);
    message_pack::pack_text(out, message.exchange);
    message_pack::pack_text(out, message.routing_key);
    message_pack::pack_text(out, message.message_id);
    message_pack::pack_text(out, message.reply_to);
    message_pack::pack_table(out, message.headers);
    const auto* data = reinterpret_cast<const std::byte*>(buffer.data());
    return {data, data + buffer.size()};
}

void unpack_properties(std::span<const std::byte> properties, InboundMessage& message) {
    const msgpack::object_handle handle = message_pack::unpack_checked(properties, "row");
    const msgpack::object_array& fields = message_pack::read_array(handle.get(), "properties", 6);
    message.content_type = message_pack::read_text(fields.ptr[0], "content_type");
    message.exchange = message_pack::read_text(fields.ptr[1], "exchange");
    message.routing_key = message_pack::read_text(fields.ptr[2], "routing_key");
    message.message_id = message_pack::read_text(fields.ptr[3], "message_id");
    message.reply_to = message_pack::read_text(fields.ptr[4], "reply_to");
    message.headers = message_pack::read_table(fields.ptr[5], "headers");
}

}  // namespace acemq::inproc::detail
