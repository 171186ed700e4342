#include "inproc/journal.hpp"

#include <algorithm>
#include <chrono>

#include <acemq/log.hpp>
#include "inproc/quoted.hpp"
#include "inproc/row_checksum.hpp"

namespace acemq::inproc::detail {

journal::InsertMessage journal::insert_message(std::uint64_t id, std::uint64_t queue,
                                               std::optional<std::int64_t> enqueued_ms,
                                               std::vector<std::byte> properties, Bytes body, bool published) {
    const std::int64_t checksum = message_checksum(static_cast<std::int64_t>(id), static_cast<std::int64_t>(queue),
                                                   enqueued_ms, properties, body);
    return {.id = id,
            .queue = queue,
            .enqueued_ms = enqueued_ms,
            .properties = std::move(properties),
            .body = std::move(body),
            .checksum = checksum,
            .published = published};
}

namespace {

thread_local bool writing = false;
thread_local JournalBurst* innermost_burst = nullptr;

// What a change does to the file.
struct Apply {
    DataFile& file;
    void operator()(const journal::PutExchange& change) const { file.put_exchange(change.exchange); }
    void operator()(const journal::DeleteExchange& change) const { file.delete_exchange(change.name); }
    void operator()(const journal::PutQueue& change) const { file.put_queue(change.id, change.queue); }
    void operator()(const journal::DeleteQueue& change) const { file.delete_queue(change.id); }
    void operator()(const journal::PutBinding& change) const { file.put_binding(change.binding); }
    void operator()(const journal::InsertMessage& change) const {
        file.insert_message(change.id, change.queue, change.enqueued_ms, false, change.properties, change.body,
                            change.checksum);
    }
    void operator()(const journal::DeleteMessage& change) const { file.delete_message(change.id); }
    void operator()(const journal::TrimStream& change) const {
        for (const std::uint64_t row : change.rows) file.delete_message(row);
        file.set_stream_start(change.queue, change.first_offset);
    }
};

bool published(const journal::Change& change) {
    const auto* insert = std::get_if<journal::InsertMessage>(&change);
    return insert != nullptr && insert->published;
}

// A change kept after a failed transaction is tried again this often when nothing new comes.
constexpr auto retry_every = std::chrono::seconds(1);
// After this long with nothing to write, the file gives back the space acked messages freed:
// not after every commit, which would cost a busy broker a checkpoint each time.
constexpr auto give_space_back_after = std::chrono::seconds(1);

}  // namespace

Journal::Journal(std::unique_ptr<DataFile> file, Committed committed)
    : file_(std::move(file)), committed_(std::move(committed)), announcer_([this] { run_announcer(); }),
      writer_([this] { run(); }) {}

Journal::~Journal() { close({}); }

bool Journal::on_writer_thread() noexcept { return writing; }

std::uint64_t Journal::record(journal::Change change) {
    std::uint64_t sequence;
    {
        std::lock_guard guard(mutex_);
        sequence = next_sequence_++;
        pending_.push_back(Entry{sequence, std::move(change)});
    }
    if (innermost_burst != nullptr && &innermost_burst->journal_ == this)
        innermost_burst->recorded_ = true;
    else
        wake_.notify_one();
    return sequence;
}

void Journal::wake_for_waiting() {
    {
        // Most often a caller committed it itself in wait(): then nothing is left to wake for.
        std::lock_guard guard(mutex_);
        if (pending_.empty()) return;
    }
    wake_.notify_one();
}

JournalBurst::JournalBurst(Journal& journal) : journal_(journal), outer_(innermost_burst) { innermost_burst = this; }

JournalBurst::~JournalBurst() {
    innermost_burst = outer_;
    if (!recorded_) return;
    if (outer_ != nullptr && &outer_->journal_ == &journal_)
        outer_->recorded_ = true;
    else
        journal_.wake_for_waiting();
}

std::uint64_t Journal::last_recorded() {
    std::lock_guard guard(mutex_);
    return next_sequence_ - 1;
}

std::optional<std::string> Journal::failure() {
    std::lock_guard guard(mutex_);
    return failure_;
}

Journal::CommitStats Journal::commit_stats() {
    std::lock_guard guard(mutex_);
    return stats_;
}

BackupResult Journal::backup(const std::string& path) {
    if (writing)
        throw UsageError(
            "acemq: cannot back up the durable inproc broker's data file on its writer thread, which makes the "
            "copy; a ConfirmFn must hand its result on and return");
    Backup request{.path = path};
    std::unique_lock lock(mutex_);
    if (stopping_)
        throw ManagementError(ManagementError::Reason::failed, "acemq: cannot back up the broker's data file to " +
                                                                   in_quotes(path) + ": the broker is closing");
    backups_.push_back(&request);
    wake_.notify_one();
    finished_.wait(lock, [&] { return request.done; });
    lock.unlock();
    if (request.error) std::rethrow_exception(request.error);
    return OnlineBackup::complete(path);
}

bool Journal::copy_step(Backup& backup) {
    try {
        if (!backup.copy) backup.copy = file_->backup_to(backup.path);
        if (!backup.copy->step()) return false;
        backup.copy->finish();
    } catch (...) {
        backup.error = std::current_exception();
    }
    backup.copy.reset();
    return true;
}

void Journal::confirm_after(std::uint64_t sequence, PublishResult result, ConfirmFn confirmed) {
    std::lock_guard guard(mutex_);
    confirms_.push_back(Confirm{sequence, std::move(result), std::move(confirmed)});
}

void Journal::wait(std::uint64_t sequence) {
    if (writing)
        throw UsageError(
            "acemq: cannot wait for the durable inproc broker's commit on its writer thread, which makes the "
            "commit; a ConfirmFn must hand its result on and return, not publish and wait");
    std::unique_lock lock(mutex_);
    while (finished_through_ < sequence && !closed_) {
        // Nothing uses the file and nothing waits to be announced before it: this thread
        // writes what is waiting itself, its change among it, and announces it, sparing the
        // wake-ups of the writer and the announcer and the one back.
        if (file_busy_ || unannounced_ != 0 || stopping_ || !backups_.empty() || pending_.empty()) {
            finished_.wait(lock);
            continue;
        }
        file_busy_ = true;
        writing = true;
        const auto give_the_file_back = [&] {
            if (!lock.owns_lock()) lock.lock();
            writing = false;
            file_busy_ = false;
            // The writer only if it waits for the file: work that came meanwhile woke it
            // already, and waking it for nothing would cost the next publish a race for the file.
            file_free_.notify_one();
            finished_.notify_all();  // other callers, to commit what came meanwhile
        };
        try {
            commit_waiting(lock, false);
        } catch (...) {
            // Only a Committed or ConfirmFn callback that throws (its own bug) gets here; the
            // file must still go back, or every later commit would wait for it forever.
            give_the_file_back();
            throw;
        }
        give_the_file_back();
    }
}

void Journal::run() {
    writing = true;
    std::unique_lock lock(mutex_);
    const auto work = [&] { return !pending_.empty() || stopping_ || !backups_.empty(); };
    for (;;) {
        // A waiting caller may be writing a transaction (wait): the file is one thread's at a time.
        if (file_busy_) {
            file_free_.wait(lock, [&] { return !file_busy_; });
            continue;
        }
        // A backup goes a step at a time, each between two transactions, so that a publish
        // waits for one step of it at most.
        if (!backups_.empty() && !stopping_) {
            Backup& backup = *backups_.front();
            file_busy_ = true;
            lock.unlock();
            const bool done = copy_step(backup);
            lock.lock();
            file_busy_ = false;
            if (done) {
                backups_.erase(backups_.begin());
                backup.done = true;
                finished_.notify_all();
            }
            if (pending_.empty()) continue;
        }
        if (pending_.empty()) {
            if (stopping_ && kept_.empty()) break;
            if (kept_.empty() && written_since_tidy_) {
                if (!wake_.wait_for(lock, give_space_back_after, work) && !file_busy_) {
                    file_busy_ = true;
                    lock.unlock();
                    file_->give_space_back();
                    lock.lock();
                    file_busy_ = false;
                    written_since_tidy_ = false;
                }
                continue;
            }
            if (kept_.empty())
                wake_.wait(lock, work);
            else if (!stopping_)
                wake_.wait_for(lock, retry_every, work);
            if (file_busy_ || (pending_.empty() && (kept_.empty() || (!backups_.empty() && !stopping_)))) continue;
        }
        file_busy_ = true;
        const bool failed = commit_waiting(lock, true).has_value();
        file_busy_ = false;
        if (failed && stopping_ && pending_.empty()) {
            log(LogLevel::error, "durable-broker",
                *failure_ + "; " + std::to_string(kept_.size()) + " changes were not written before the broker closed");
            unwritten_ = true;
            break;
        }
    }
    for (Backup* backup : backups_) {
        backup->copy.reset();
        backup->error = std::make_exception_ptr(ManagementError(
            ManagementError::Reason::failed, "acemq: cannot back up the broker's data file to " +
                                                 in_quotes(backup->path) +
                                                 ": the broker closed before the copy was finished; nothing was kept"));
        backup->done = true;
    }
    backups_.clear();
    finished_.notify_all();
}

std::optional<std::string> Journal::commit_waiting(std::unique_lock<std::mutex>& lock, bool hand_off) {
    std::vector<Entry> batch = std::move(kept_);
    kept_.clear();
    batch.reserve(batch.size() + pending_.size());
    for (Entry& entry : pending_) batch.push_back(std::move(entry));
    pending_.clear();
    const std::uint64_t through = batch.back().sequence;
    lock.unlock();

    const auto began = std::chrono::steady_clock::now();
    const std::optional<std::string> failure = write(batch);
    const auto took = std::chrono::steady_clock::now() - began;
    if (failure)
        for (Entry& entry : batch)
            if (!published(entry.change)) kept_.push_back(std::move(entry));
    // Once per streak: an operator needs to hear that commits fail, and that they work again.
    if (failure && !failing_)
        log(LogLevel::error, "durable-broker",
            *failure + "; persistent publishes are refused until a commit succeeds, " + std::to_string(kept_.size()) +
                " other changes are kept and tried again",
            {{"event", "commits-refused"}, {"reason", *failure}});
    else if (!failure && failing_)
        log(LogLevel::warning, "durable-broker",
            "acemq: the durable inproc broker's commits succeed again; what was kept is written",
            {{"event", "commits-resumed"}});
    failing_ = failure.has_value();
    written_since_tidy_ = written_since_tidy_ || !failure;

    lock.lock();
    failure_ = failure;
    if (!failure) {
        ++stats_.commits;
        stats_.total += took;
        stats_.longest = std::max<std::chrono::nanoseconds>(stats_.longest, took);
    }
    Announcement announcement{.through = through, .failure = failure, .batch = std::move(batch)};
    if (!hand_off) {
        announce(std::move(announcement), lock);
        return failure;
    }
    announced_.wait(lock, [&] { return unannounced_ <= max_waiting_announcements; });
    announcements_.push_back(std::move(announcement));
    ++unannounced_;
    announce_.notify_one();
    return failure;
}

void Journal::run_announcer() {
    writing = true;
    std::unique_lock lock(mutex_);
    for (;;) {
        announce_.wait(lock, [&] { return !announcements_.empty() || announcer_stopping_; });
        if (announcements_.empty()) break;
        Announcement next = std::move(announcements_.front());
        announcements_.pop_front();
        announce(std::move(next), lock);
        --unannounced_;
        announced_.notify_one();
        // A caller in wait() may now commit its change itself.
        finished_.notify_all();
    }
}

void Journal::announce(Announcement announcement, std::unique_lock<std::mutex>& lock) {
    const std::optional<std::string>& failure = announcement.failure;
    lock.unlock();
    committed_(announcement.through, !failure);

    std::vector<Confirm> due;
    lock.lock();
    finished_through_ = announcement.through;
    std::erase_if(confirms_, [&](Confirm& confirm) {
        if (confirm.sequence > announcement.through) return false;
        due.push_back(std::move(confirm));
        return true;
    });
    finished_.notify_all();
    lock.unlock();
    for (Confirm& confirm : due) {
        if (failure)
            confirm.result = PublishResult{.return_reason = *failure, .why = PublishResult::Unconfirmed::refused};
        confirm.confirmed(std::move(confirm.result));
    }
    announcement.batch.clear();
    lock.lock();
}

std::optional<std::string> Journal::write(const std::vector<Entry>& batch) {
    try {
        // Acks alone need not wait for the disk: written to the WAL they survive a crash of
        // the process, and only a power cut can lose them, redelivering their messages. A
        // sync per ack would bound a consumer at one ack per disk flush. What a cut leaves of
        // them after a torn frame can never be applied later: DataFile::record_open.
        const bool only_deletions = std::all_of(batch.begin(), batch.end(), [](const Entry& entry) {
            return std::holds_alternative<journal::DeleteMessage>(entry.change);
        });
        file_->begin(!only_deletions);
        const Apply apply{*file_};
        for (const Entry& entry : batch) std::visit(apply, entry.change);
        file_->commit();
        return std::nullopt;
    } catch (const StorageFailure& failure) {
        file_->rollback();
        return failure.what();
    }
}

void Journal::close(const std::vector<std::uint64_t>& redelivered) {
    {
        std::lock_guard guard(mutex_);
        if (closed_) return;
        stopping_ = true;
    }
    wake_.notify_all();
    if (writer_.joinable()) writer_.join();
    {
        // What the writer committed last is announced before the announcer stops.
        std::lock_guard guard(mutex_);
        announcer_stopping_ = true;
    }
    announce_.notify_all();
    if (announcer_.joinable()) announcer_.join();
    {
        std::lock_guard guard(mutex_);
        closed_ = true;
    }
    finished_.notify_all();
    if (unwritten_) return;  // the file is as of the last commit: not a clean close
    try {
        file_->begin();
        for (std::uint64_t id : redelivered) file_->mark_redelivered(id);
        file_->set_closed_cleanly(true);
        file_->commit();
        file_->checkpoint();
    } catch (const StorageFailure& failure) {
        file_->rollback();
        log(LogLevel::error, "durable-broker",
            std::string(failure.what()) + "; the next open treats every message as redelivered");
    }
}

}  // namespace acemq::inproc::detail
