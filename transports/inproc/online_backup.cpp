#include "inproc/online_backup.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "inproc/quoted.hpp"

namespace acemq::inproc::detail {

namespace {

ManagementError backup_failed(const std::string& path, const std::string& why) {
    return ManagementError(ManagementError::Reason::failed,
                           "acemq: cannot back up the broker's data file to " + in_quotes(path) + ": " + why);
}

}  // namespace

OnlineBackup::OnlineBackup(sqlite3* source, std::string path) : path_(std::move(path)) {
    // Made here, exclusively, so that an existing file (another backup, the data file itself)
    // is never overwritten, even one that appears after a check.
    const int made = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (made < 0) {
        const int error = errno;
        if (error == EEXIST)
            throw backup_failed(path_, "the file exists; name a new file, a backup never overwrites one");
        throw backup_failed(path_, std::string(std::strerror(error)) +
                                       "; name a file in a directory that exists and the broker may write");
    }
    ::close(made);
    try {
        // Neither journal nor sync for each step: a copy cut short is removed, never used, and
        // the finished one is synced once (complete), off the writer's thread. Synced steps
        // held the writer for a sync of the copy each.
        if (sqlite3_open_v2(path_.c_str(), &destination_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
                SQLITE_OK ||
            sqlite3_exec(destination_, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF", nullptr, nullptr,
                         nullptr) != SQLITE_OK)
            fail("SQLite cannot open it");
        backup_ = sqlite3_backup_init(destination_, "main", source, "main");
        if (backup_ == nullptr) fail("SQLite cannot start the copy");
    } catch (...) {
        discard();
        throw;
    }
}

OnlineBackup::~OnlineBackup() {
    if (!finished_) discard();
}

void OnlineBackup::discard() noexcept {
    close();
    std::error_code ignored;  // nothing to tell: the copy's failure was told already
    std::filesystem::remove(path_, ignored);
    std::filesystem::remove(path_ + "-journal", ignored);
    std::filesystem::remove(path_ + "-wal", ignored);
}

void OnlineBackup::close() noexcept {
    if (backup_ != nullptr) sqlite3_backup_finish(backup_);
    backup_ = nullptr;
    if (destination_ != nullptr) sqlite3_close_v2(destination_);
    destination_ = nullptr;
}

void OnlineBackup::fail(const std::string& what) {
    const std::string said = destination_ != nullptr ? sqlite3_errmsg(destination_) : "out of memory";
    throw backup_failed(path_,
                        what + " (SQLite: " + said + "); check that its disk has room for a copy of the data file");
}

bool OnlineBackup::step() {
    const int stepped = sqlite3_backup_step(backup_, pages_per_step);
    if (stepped == SQLITE_DONE) return true;
    if (stepped == SQLITE_OK || stepped == SQLITE_BUSY || stepped == SQLITE_LOCKED) return false;
    const int code = sqlite3_backup_finish(backup_);
    backup_ = nullptr;
    fail("the copy failed with " + std::string(sqlite3_errstr(code != SQLITE_OK ? code : stepped)));
}

void OnlineBackup::finish() {
    const int finished = sqlite3_backup_finish(backup_);
    backup_ = nullptr;
    if (finished != SQLITE_OK) fail("the copy could not be completed");
    close();
    finished_ = true;
}

BackupResult OnlineBackup::complete(const std::string& path) {
    BackupResult result{.path = std::filesystem::absolute(path).string()};
    // Whatever goes wrong, the copy is not left to be mistaken for a good one.
    auto refuse = [&](const std::string& why) {
        std::error_code ignored;
        std::filesystem::remove(path, ignored);
        return backup_failed(path, why + "; it was removed");
    };
    sqlite3* copy = nullptr;
    sqlite3_stmt* count = nullptr;
    const bool counted = sqlite3_open_v2(path.c_str(), &copy, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK &&
                         sqlite3_prepare_v2(copy, "SELECT count(*) FROM messages", -1, &count, nullptr) == SQLITE_OK &&
                         sqlite3_step(count) == SQLITE_ROW;
    const std::string said = copy != nullptr ? sqlite3_errmsg(copy) : "out of memory";
    if (counted) result.messages = static_cast<std::uint64_t>(sqlite3_column_int64(count, 0));
    sqlite3_finalize(count);
    sqlite3_close_v2(copy);
    if (!counted) throw refuse("the copy cannot be read back (SQLite: " + said + ")");
    for (const std::string& synced : {path, std::filesystem::path(result.path).parent_path().string()}) {
        // The file, then its directory entry, or a power cut could lose the file.
        const int opened = ::open(synced.c_str(), O_RDONLY | O_CLOEXEC);
        const bool ok = opened >= 0 && ::fsync(opened) == 0;
        const int error = errno;
        if (opened >= 0) ::close(opened);
        if (!ok)
            throw refuse("the copy could not be synced to the disk (" + std::string(std::strerror(error)) +
                         "); check the disk");
    }
    std::error_code unknown;
    result.bytes = std::filesystem::file_size(path, unknown);
    if (unknown) result.bytes = 0;
    return result;
}

}  // namespace acemq::inproc::detail
