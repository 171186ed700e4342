// An online copy of a durable broker's data file into a new file, through SQLite's backup API
// on the broker's own connection (the broker holds its file exclusively, so no other
// connection could read it). Made a step of a few pages at a time by the thread that uses the
// file, the journal's writer, between its transactions: SQLite carries each change that
// connection commits meanwhile into the pages already copied, so the finished copy holds
// every change committed by the time it finished. The copy is synced to the disk once, at
// the end, off the writer's thread.
//
// Internal to the inproc broker. Not thread-safe: only the thread using the source connection
// calls it, and destroys it.
#pragma once

#include <cstddef>
#include <string>

#include <acemq/management.hpp>

struct sqlite3;
struct sqlite3_backup;

namespace acemq::inproc::detail {

class OnlineBackup {
public:
    // Pages a step copies: 256 pages of 4 KiB are 1 MiB, 2.5 to 10 ms of the writer's on the
    // test machine (a 13.7 MB file of 10,000 messages took 14 steps).
    static constexpr int pages_per_step = 256;

    // Makes the new file `path` and prepares the copy of `source` into it. ManagementError
    // failed when `path` exists or cannot be made.
    OnlineBackup(sqlite3* source, std::string path);
    // A copy that did not finish is removed.
    ~OnlineBackup();
    OnlineBackup(const OnlineBackup&) = delete;
    OnlineBackup& operator=(const OnlineBackup&) = delete;

    // Copies the next pages; true once every page is copied (then finish()). ManagementError
    // failed when SQLite cannot read the source or write the copy.
    bool step();
    // Completes the copy, which is then left in place, not synced yet.
    void finish();
    // After finish(), on any thread (not the writer's: it reads the whole copy): counts the
    // copy's messages and syncs it and its directory to the disk. ManagementError failed,
    // the copy removed, when it cannot be read back or synced.
    static BackupResult complete(const std::string& path);

private:
    [[noreturn]] void fail(const std::string& what);
    void close() noexcept;
    // Closes and removes the unfinished copy.
    void discard() noexcept;

    std::string path_;
    sqlite3* destination_ = nullptr;
    sqlite3_backup* backup_ = nullptr;
    bool finished_ = false;
};

}  // namespace acemq::inproc::detail
