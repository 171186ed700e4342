// The durable broker's writer: the changes the broker makes to its durable state, in the
// order it makes them, and the thread that commits them to the data file. Group commit:
// the writer takes everything waiting and writes it in one transaction with one sync; what
// arrives meanwhile waits for the next transaction. Nothing waits on a timer: a lone change
// is committed at once. Telling the broker how far a transaction got (which delivers what it
// made visible) and running the confirms waiting on it is the announcer's, a second thread,
// transactions in the order they were committed: the writer starts the next transaction
// meanwhile, so the file is not idle while consumers and publishers are told, and at most
// two transactions wait to be announced.
// A caller that waits for its change (wait()) while the file is idle and nothing waits to be
// announced commits it and announces it itself, with whatever else is waiting, so that a lone
// confirmed publish pays its commit and no hand-off between threads; the writer and such
// callers use the file one at a time.
//
// A transaction that fails (disk full, an I/O error) loses the publishes in it: their
// confirms say refused, naming why, and the broker drops those messages. Every other change
// (acks, dead-lettering, topology) is kept and written with the next transaction, tried
// again with each new change and every second.
//
// It also makes an online backup of the file (OnlineBackup), a step between transactions.
//
// Threads: record() and confirm_after() are called with the broker's lock held, which is
// what orders them; wait(), backup() and close() without it; commit_stats() either way.
// Committed and the confirms run on the announcer's thread, or on a caller's inside wait(),
// which counts as the writer's thread (on_writer_thread()) meanwhile, one transaction at a
// time, without any lock of the journal's; Committed takes the broker's lock, and that is
// what lets a transaction's confirms be gathered after it: a publish records its change and
// asks for its confirm inside one hold of that lock.
// Internal to the inproc broker.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <acemq/inproc.hpp>
#include "inproc/data_file.hpp"
#include "inproc/online_backup.hpp"

namespace acemq::inproc::detail {

namespace journal {

struct PutExchange {
    ExchangeDeclaration exchange;
};
struct DeleteExchange {
    std::string name;
};
struct PutQueue {
    std::uint64_t id;
    QueueDeclaration queue;
};
struct DeleteQueue {
    std::uint64_t id;
};
struct PutBinding {
    StoredBinding binding;
};
// A message entering a stored queue. `published`: it comes from a publish, so a failed
// commit refuses it; otherwise it was moved there (dead-lettered) and must be kept. Made by
// insert_message(), which computes the row's checksum on the recording thread.
struct InsertMessage {
    std::uint64_t id;
    std::uint64_t queue;
    std::optional<std::int64_t> enqueued_ms;
    std::vector<std::byte> properties;
    Bytes body;
    std::int64_t checksum;
    bool published;
};
InsertMessage insert_message(std::uint64_t id, std::uint64_t queue, std::optional<std::int64_t> enqueued_ms,
                             std::vector<std::byte> properties, Bytes body, bool published);
struct DeleteMessage {
    std::uint64_t id;
};

// Retention took a stream's oldest messages: their rows go, and the stream's log now starts
// at `first_offset`, in one change so that the offsets read back at a restart stay right.
struct TrimStream {
    std::uint64_t queue;
    std::int64_t first_offset;
    std::vector<std::uint64_t> rows;
};

using Change = std::variant<PutExchange, DeleteExchange, PutQueue, DeleteQueue, PutBinding, InsertMessage,
                            DeleteMessage, TrimStream>;

}  // namespace journal

class Journal;

// While one lives on a thread, the changes that thread records in `journal` wake its writer
// once, when it ends, rather than each at once: a thread handing the broker a run of changes
// (a received burst of publishes, a publish that will commit itself in wait()) then starts
// one transaction with all of them, instead of the first alone starting one and the rest
// waiting behind its sync. Nothing waits on a timer: it ends when the run does. Made and
// ended on one thread, the innermost first, inside the journal's life; one nested in another
// on the same journal hands what it held to the outer one.
class JournalBurst {
public:
    explicit JournalBurst(Journal& journal);
    ~JournalBurst();
    JournalBurst(const JournalBurst&) = delete;
    JournalBurst& operator=(const JournalBurst&) = delete;

private:
    friend class Journal;
    Journal& journal_;
    JournalBurst* outer_;
    bool recorded_ = false;  // a change waits for the writer's wake-up at the end
};

class Journal {
public:
    // After each transaction: every change recorded up to `through` was committed (`ok`),
    // or the publishes among them were lost and the rest kept for the next one.
    using Committed = std::function<void(std::uint64_t through, bool ok)>;

    Journal(std::unique_ptr<DataFile> file, Committed committed);
    ~Journal();  // close() unless closed
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;

    // Queues a change for the writer, waking it unless a JournalBurst of this thread holds the
    // wake-up back; its sequence number, which wait() and Committed use.
    std::uint64_t record(journal::Change change);
    // Calls `confirmed` once change `sequence` is committed, with `result`; with a refusal
    // naming why when its transaction failed.
    void confirm_after(std::uint64_t sequence, PublishResult result, ConfirmFn confirmed);
    // Returns once change `sequence` was committed, or its transaction failed and it is kept
    // for the next; when nothing is using the file, commits it (and what else waits) on the
    // calling thread, running Committed and the confirms due there. Refuses (UsageError) to
    // wait on the writer's own thread.
    void wait(std::uint64_t sequence);
    // The last sequence number given out.
    std::uint64_t last_recorded();
    // The error text of the last transaction when it failed: persistent publishes are being
    // refused until one succeeds. nullopt while commits succeed.
    std::optional<std::string> failure();

    // The transactions committed since the writer started, and the time each took from BEGIN
    // to its COMMIT's return (its sync included); failed ones are not counted.
    struct CommitStats {
        std::uint64_t commits = 0;
        std::chrono::nanoseconds total{0};
        std::chrono::nanoseconds longest{0};
    };
    CommitStats commit_stats();

    // Copies the file to the new file `path` on the writer's thread, a step between
    // transactions, and returns once the copy is finished (it holds every change committed
    // by then), counted and synced on the calling thread (OnlineBackup::complete). Backups
    // asked for together are made one after the other. ManagementError failed (the broker
    // closing meanwhile, too); UsageError on the writer's thread.
    BackupResult backup(const std::string& path);

    // Commits what is waiting, stops the writer, then marks `redelivered` messages so and
    // records a clean close, checkpointing the WAL into the file. Idempotent; never throws
    // (a failure goes to the library's log: the broker is going away).
    void close(const std::vector<std::uint64_t>& redelivered);

    // True on the writer's and the announcer's threads, where the broker must not wait for
    // the writer.
    static bool on_writer_thread() noexcept;

private:
    friend class JournalBurst;

    struct Entry {
        std::uint64_t sequence;
        journal::Change change;
    };
    struct Confirm {
        std::uint64_t sequence;
        PublishResult result;
        ConfirmFn confirmed;
    };
    // A backup asked for: the caller's, which waits for `done`; `copy` is the writer's alone.
    struct Backup {
        std::string path;
        std::unique_ptr<OnlineBackup> copy{};
        std::exception_ptr error{};
        bool done = false;
    };

    // A transaction written, to be announced: how far it got, its failure's text, and its
    // changes, freed where it is announced rather than on the writer's thread.
    struct Announcement {
        std::uint64_t through;
        std::optional<std::string> failure;
        std::vector<Entry> batch;
    };
    // Transactions waiting for the announcer beyond the one it announces: the writer waits
    // rather than run further ahead of what consumers and publishers have been told.
    static constexpr std::size_t max_waiting_announcements = 1;

    void run();
    void run_announcer();
    // A burst ended: wakes the writer if what it held back still waits.
    void wake_for_waiting();
    // Takes what waits (what a failed transaction kept first) and writes it in one
    // transaction; announces it on this thread (`hand_off` false) or hands it to the
    // announcer; the failure's text. Called with `lock` held and file_busy_ set by the caller,
    // returns with the lock held.
    std::optional<std::string> commit_waiting(std::unique_lock<std::mutex>& lock, bool hand_off);
    // Tells Committed, gathers the confirms due (after Committed, which took the broker's
    // lock: every confirm of the transaction was asked for by then), marks the transaction
    // finished and runs them. Called and returns with `lock` held.
    void announce(Announcement announcement, std::unique_lock<std::mutex>& lock);
    // One step of `backup`; true when it is done (finished or failed).
    bool copy_step(Backup& backup);
    // Writes `batch` in one transaction; the error text when it failed.
    std::optional<std::string> write(const std::vector<Entry>& batch);

    std::unique_ptr<DataFile> file_;
    Committed committed_;

    std::mutex mutex_;
    std::condition_variable wake_;       // the writer: work arrived, or close
    std::condition_variable file_free_;  // the writer: a caller in wait() gave the file back
    std::condition_variable finished_;   // waiters: a transaction ended
    std::condition_variable announce_;   // the announcer: a transaction to announce, or close
    std::condition_variable announced_;  // the writer: the announcer took one
    std::vector<Entry> pending_;
    std::vector<Confirm> confirms_;
    std::uint64_t next_sequence_ = 1;
    std::uint64_t finished_through_ = 0;  // every change up to here is committed or kept
    bool stopping_ = false;
    bool closed_ = false;
    bool unwritten_ = false;  // the writer stopped with changes it could not write
    // A thread uses the file (a transaction, a backup step, giving space back): the writer, or
    // a caller in wait(). Only that thread touches the three below, without the lock.
    bool file_busy_ = false;
    std::vector<Entry> kept_;  // after a failed transaction: written first in the next one
    bool failing_ = false;
    bool written_since_tidy_ = false;
    std::optional<std::string> failure_;
    CommitStats stats_;
    std::vector<Backup*> backups_;            // oldest first; the writer copies the first
    std::deque<Announcement> announcements_;  // oldest first, waiting for the announcer
    std::size_t unannounced_ = 0;             // those, and the one being announced
    bool announcer_stopping_ = false;
    std::thread announcer_;
    std::thread writer_;
};

}  // namespace acemq::inproc::detail
