// The durable broker's writer: the changes the broker makes to its durable state, in the
// order it makes them, and the one thread that commits them to the data file. Group commit:
// the writer takes everything waiting, writes it in one transaction with one sync, tells the
// broker how far it got, and runs the confirms waiting on it; what arrives meanwhile waits
// for the next transaction. Nothing waits on a timer: a lone change is committed at once.
//
// A transaction that fails (disk full, an I/O error) loses the publishes in it: their
// confirms say refused, naming why, and the broker drops those messages. Every other change
// (acks, dead-lettering, topology) is kept and written with the next transaction, tried
// again with each new change and every second.
//
// Threads: record() and confirm_after() are called with the broker's lock held, which is
// what orders them; wait() and close() without it. The writer calls Committed without any
// lock of its own, and Committed takes the broker's lock.
// Internal to the inproc broker.
#pragma once

#include <condition_variable>
#include <cstdint>
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
// commit refuses it; otherwise it was moved there (dead-lettered) and must be kept.
struct InsertMessage {
    std::uint64_t id;
    std::uint64_t queue;
    std::optional<std::int64_t> enqueued_ms;
    std::vector<std::byte> properties;
    Bytes body;
    bool published;
};
struct DeleteMessage {
    std::uint64_t id;
};

using Change =
    std::variant<PutExchange, DeleteExchange, PutQueue, DeleteQueue, PutBinding, InsertMessage, DeleteMessage>;

}  // namespace journal

class Journal {
public:
    // After each transaction: every change recorded up to `through` was committed (`ok`),
    // or the publishes among them were lost and the rest kept for the next one.
    using Committed = std::function<void(std::uint64_t through, bool ok)>;

    Journal(std::unique_ptr<DataFile> file, Committed committed);
    ~Journal();  // close() unless closed
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;

    // Queues a change for the writer; its sequence number, which wait() and Committed use.
    std::uint64_t record(journal::Change change);
    // Calls `confirmed` once change `sequence` is committed, with `result`; with a refusal
    // naming why when its transaction failed.
    void confirm_after(std::uint64_t sequence, PublishResult result, ConfirmFn confirmed);
    // Returns once change `sequence` was committed, or its transaction failed and it is kept
    // for the next. Refuses (UsageError) to wait on the writer's own thread.
    void wait(std::uint64_t sequence);
    // The last sequence number given out.
    std::uint64_t last_recorded();
    // The error text of the last transaction when it failed: persistent publishes are being
    // refused until one succeeds. nullopt while commits succeed.
    std::optional<std::string> failure();

    // Commits what is waiting, stops the writer, then marks `redelivered` messages so and
    // records a clean close, checkpointing the WAL into the file. Idempotent; never throws
    // (a failure goes to the library's log: the broker is going away).
    void close(const std::vector<std::uint64_t>& redelivered);

    // True on the writer's thread, where the broker must not wait for the writer.
    static bool on_writer_thread() noexcept;

private:
    struct Entry {
        std::uint64_t sequence;
        journal::Change change;
    };
    struct Confirm {
        std::uint64_t sequence;
        PublishResult result;
        ConfirmFn confirmed;
    };

    void run();
    // Writes `batch` in one transaction; the error text when it failed.
    std::optional<std::string> write(const std::vector<Entry>& batch);

    std::unique_ptr<DataFile> file_;
    Committed committed_;

    std::mutex mutex_;
    std::condition_variable wake_;      // the writer: work arrived, or close
    std::condition_variable finished_;  // waiters: a transaction ended
    std::vector<Entry> pending_;
    std::vector<Confirm> confirms_;
    std::uint64_t next_sequence_ = 1;
    std::uint64_t finished_through_ = 0;  // every change up to here is committed or kept
    bool stopping_ = false;
    bool closed_ = false;
    bool unwritten_ = false;  // the writer stopped with changes it could not write
    std::optional<std::string> failure_;
    std::thread writer_;
};

}  // namespace acemq::inproc::detail
