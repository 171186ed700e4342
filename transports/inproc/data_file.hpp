// The SQLite file of a durable embedded broker: opening it (refusing one that is held, not
// ours or corrupt, and leaving it untouched), reading back what it holds, and writing the
// broker's changes inside transactions. WAL, synchronous=FULL, locking_mode=EXCLUSIVE: the
// broker holds the file for as long as it is open, and the WAL index lives in this
// process's memory (no -shm file).
//
// What is kept (schema version 3): durable exchanges; durable queues that are not
// exclusive, by the id the broker gave them; the bindings between those; the persistent
// messages in those queues (their id orders them), every message of a stream, with the
// wall-clock time they entered their queue and whether they were redelivered; where each
// stream's log starts (the offset of its first stored message: the offset of each message
// is that plus its place among the stream's rows); whether the broker closed cleanly, and
// how many times it was opened. Every row carries a checksum (row_checksum.hpp), checked when
// it is read back; a message that fails it is moved to the quarantine table, never delivered.
//
// Internal to the inproc broker. Not thread-safe: one thread at a time (the journal's
// writer, or the broker while it opens).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <acemq/topology.hpp>
#include <acemq/transport.hpp>

struct sqlite3;
struct sqlite3_stmt;

namespace acemq::inproc::detail {

class OnlineBackup;

// A change that could not be written: the transaction was rolled back. `disk_full` when
// SQLite said the disk (or the file's page limit) is full.
class StorageFailure : public Error {
public:
    StorageFailure(const std::string& what, bool disk_full) : Error(what), disk_full_(disk_full) {}
    bool disk_full() const noexcept { return disk_full_; }

private:
    bool disk_full_;
};

struct StoredQueue {
    std::uint64_t id = 0;
    QueueDeclaration declaration{};
};

struct StoredBinding {
    std::string exchange{};
    std::uint64_t queue = 0;  // a StoredQueue's id
    std::string routing_key{};
    FieldTable arguments{};
};

struct StoredRow {
    std::uint64_t id = 0;
    std::uint64_t queue = 0;
    std::optional<std::int64_t> enqueued_ms{};  // wall-clock milliseconds since the epoch
    InboundMessage message{};                   // redelivered as it was written
};

// A stored message whose row failed its checksum or cannot be read: its columns as they are
// on the disk, and why it is set aside.
struct DamagedRow {
    std::int64_t id = 0;
    std::int64_t queue = 0;
    std::optional<std::int64_t> enqueued_ms{};
    std::vector<std::byte> properties{};
    std::vector<std::byte> body{};
    std::optional<std::int64_t> checksum{};
    std::string reason{};
};

// What a data file holds, as read at open.
struct DataFileContents {
    std::vector<ExchangeDeclaration> exchanges;
    std::vector<StoredQueue> queues;
    std::vector<StoredBinding> bindings;
    std::vector<StoredRow> messages;  // by id, so each queue's in publish order
    // A stream's first offset by queue id; a stream missing here starts at 0.
    std::unordered_map<std::uint64_t, std::int64_t> stream_starts;
    bool closed_cleanly = true;       // false after a crash (or for a new file: nothing to tell)
    std::uint64_t opens = 0;          // how many times a broker opened it before
    std::vector<DamagedRow> damaged;  // messages to quarantine, never to deliver
    std::uint64_t quarantined = 0;    // messages quarantined at earlier opens
};

class DataFile {
public:
    // Opens `path` (made when missing) with SQLite VFS `vfs` ("" = the default); `max_bytes`
    // caps the file (0 = no cap). Throws DataFileError, leaving the file as it was, when it
    // is held by another broker, is not SQLite, is another program's database, is of a later
    // schema version, or fails SQLite's quick_check.
    // `salvaging`: a copy of a damaged file, opened to read what can be read, even when
    // SQLite's quick_check fails (read_readable).
    DataFile(const std::string& path, const std::string& vfs, std::uint64_t max_bytes, bool salvaging = false);
    ~DataFile();
    DataFile(const DataFile&) = delete;
    DataFile& operator=(const DataFile&) = delete;

    const std::string& path() const noexcept { return path_; }

    // Everything the file holds, with the messages that fail their checksum or cannot be read
    // apart in `damaged`; DataFileError for a declaration that fails its checksum, a row it
    // cannot read otherwise, or a file SQLite finds corrupt while reading.
    DataFileContents read();
    // After read() found the file good: brings a file of an earlier schema version up to this
    // one (its checksum columns), rewrites a file made without auto_vacuum once so that it can
    // give space back, and prepares the writes. Until then a refused file is left as it was.
    // Throws StorageFailure when it cannot write, DataFileError for a damaged schema.
    void make_writable();

    // For salvage: every declaration and message that can be read and passes its checksum;
    // each thing that cannot, told in a sentence appended to `lost`. Never throws for a
    // damaged row or page.
    DataFileContents read_readable(std::vector<std::string>& lost);

    // One transaction around the writes between them; each write throws StorageFailure, as
    // does commit, after which the transaction is rolled back. A transaction that is not
    // `synced` is committed to the WAL (it survives the process) without waiting for the
    // disk: the next synced commit makes it durable with its own.
    void begin(bool synced = true);
    void commit();
    void rollback() noexcept;

    void put_exchange(const ExchangeDeclaration& exchange);
    void delete_exchange(const std::string& name);  // with its bindings
    void put_queue(std::uint64_t id, const QueueDeclaration& queue);
    void delete_queue(std::uint64_t id);  // with its bindings and messages
    void put_binding(const StoredBinding& binding);
    // `checksum`: message_checksum() of the row (row_checksum.hpp), made by the caller, so that
    // the writer's thread need not.
    void insert_message(std::uint64_t id, std::uint64_t queue, std::optional<std::int64_t> enqueued_ms,
                        bool redelivered, std::span<const std::byte> properties, std::span<const std::byte> body,
                        std::int64_t checksum);
    void delete_message(std::uint64_t id);
    void mark_redelivered(std::uint64_t id);
    // Where stream `queue`'s stored log now starts.
    void set_stream_start(std::uint64_t queue, std::int64_t first_offset);
    void set_closed_cleanly(bool clean);
    // What a broker writes first in each life: not closed cleanly (until the clean close
    // says so), and one more open. The count makes the first frame of every life unlike any
    // frame an earlier life left in the WAL: a life after a crash appends where the WAL's
    // valid frames ended, over frames the crashed life wrote and never synced, and if its
    // first frame were byte for byte one of those (an UPDATE storing identical bytes writes
    // no frame at all), the WAL's checksum chain would run on into the stale ones behind it
    // and the next open would apply them: acks never made in this life, publishes refused.
    void record_open();
    // Moves a damaged message from the messages to the quarantine, as it is on the disk.
    void quarantine(const DamagedRow& row, std::int64_t now_ms);

    // Starts an online copy of the file into the new file `path` (OnlineBackup).
    std::unique_ptr<OnlineBackup> backup_to(const std::string& path);

    // Copies the WAL into the file and empties it; for a clean close.
    void checkpoint() noexcept;
    // Gives the disk back the pages acked messages freed, and empties the WAL: for a broker
    // that has been idle a while. Failures change nothing (the next commit reports them).
    void give_space_back() noexcept;

private:
    class Statement;

    [[noreturn]] void fail(const std::string& action) const;
    void exec(const char* sql, const std::string& action);
    void check_ours();
    bool header_says_ours() const;
    std::string checksum_column() const;
    void make_schema();
    void migrate(std::int64_t version);
    void give_space_back_from_now_on();
    Statement& statement(int which);

    std::string path_;
    sqlite3* db_ = nullptr;
    std::uint64_t max_bytes_ = 0;
    bool salvaging_ = false;
    std::int64_t version_ = 0;      // the file's schema version, as found or made
    bool synchronous_full_ = true;  // the connection's PRAGMA synchronous: FULL, else NORMAL
    std::vector<Statement> statements_;
};

// The free bytes of the file system holding `path`; nullopt when it cannot be told (a path
// another SQLite VFS gives meaning to, say).
std::optional<std::uint64_t> free_disk_bytes(const std::string& path);

// The properties of a message (all but its body) as the data file stores them.
std::vector<std::byte> pack_properties(const InboundMessage& message);
// The message a row holds, from its properties, body and redelivered columns; throws
// message_pack::Malformed.
InboundMessage unpack_message(std::span<const std::byte> properties, std::span<const std::byte> body, bool redelivered);

}  // namespace acemq::inproc::detail
