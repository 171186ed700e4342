#include "power_cut_vfs.hpp"

#include <sqlite3.h>

#include <acemq/error.hpp>
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

namespace acemq::testing {

// The disk's model, named rather than file-local: State, a class power_cut_vfs.hpp declares,
// holds these as members (a file-local type there trips -Wsubobject-linkage once this file
// shares a unity chunk).
inline namespace disk_model {

constexpr std::int64_t sector_size = 512;

// A write or a truncation since the file's last sync. A truncation has no bytes and `offset`
// is the new size.
struct Pending {
    std::int64_t offset;
    std::vector<std::byte> bytes;
    bool truncation;
};

void put(std::vector<std::byte>& image, std::int64_t offset, const std::byte* bytes, std::size_t size) {
    const auto end = static_cast<std::size_t>(offset) + size;
    if (image.size() < end) image.resize(end);
    std::memcpy(image.data() + offset, bytes, size);
}

void replay(std::vector<std::byte>& image, const Pending& pending) {
    if (pending.truncation)
        image.resize(static_cast<std::size_t>(pending.offset));
    else
        put(image, pending.offset, pending.bytes.data(), pending.bytes.size());
}

struct File {
    std::vector<std::byte> durable;
    std::vector<std::byte> current;  // durable with the pending writes applied: what reads see
    std::vector<Pending> pending;
    bool exists_durably = false;
    // SQLite's lock levels: how many handles hold SHARED, and which one (if any) holds each
    // of the others.
    int shared = 0;
    const void* reserved = nullptr;
    const void* pending_lock = nullptr;
    const void* exclusive = nullptr;

    void forget_locks() {
        shared = 0;
        reserved = pending_lock = exclusive = nullptr;
    }

    // Which of the pending writes reached the platter: per sector, the first k writes to it
    // for a random k, replayed in the order they were made.
    void keep_random_sectors(std::mt19937_64& random) {
        std::unordered_map<std::int64_t, std::pair<int, int>> sectors;  // sector -> {kept, seen}
        auto for_each_sector = [](const Pending& write, auto&& visit) {
            const auto size = static_cast<std::int64_t>(write.bytes.size());
            for (auto sector = write.offset / sector_size; sector * sector_size < write.offset + size; ++sector) {
                const auto begin = std::max(write.offset, sector * sector_size);
                const auto end = std::min(write.offset + size, (sector + 1) * sector_size);
                visit(sector, begin, end);
            }
        };
        for (const auto& write : pending) {
            if (write.truncation) continue;
            for_each_sector(write, [&](std::int64_t sector, std::int64_t, std::int64_t) { ++sectors[sector].first; });
        }
        for (auto& [sector, versions] : sectors)
            versions.first = std::uniform_int_distribution<int>(0, versions.first)(random);
        for (const auto& write : pending) {
            if (write.truncation) {
                if (random() % 2 == 0) replay(durable, write);
                continue;
            }
            for_each_sector(write, [&](std::int64_t sector, std::int64_t begin, std::int64_t end) {
                auto& [kept, seen] = sectors[sector];
                if (seen++ < kept)
                    put(durable, begin, write.bytes.data() + (begin - write.offset),
                        static_cast<std::size_t>(end - begin));
            });
        }
    }

    // Every pending write reached the platter but the bytes in `torn`, which are as before.
    void keep_all_but(const PowerCutDisk::Mode::Torn& torn) {
        std::vector<std::byte> before(static_cast<std::size_t>(std::max<std::int64_t>(torn.end - torn.begin, 0)));
        for (std::int64_t at = torn.begin; at < torn.end; ++at)
            if (at < static_cast<std::int64_t>(durable.size()))
                before[static_cast<std::size_t>(at - torn.begin)] = durable[static_cast<std::size_t>(at)];
        for (const auto& write : pending) replay(durable, write);
        const auto end = std::min<std::int64_t>(torn.end, static_cast<std::int64_t>(durable.size()));
        if (torn.begin < end)
            std::memcpy(durable.data() + torn.begin, before.data(), static_cast<std::size_t>(end - torn.begin));
    }
};

}  // namespace disk_model

struct PowerCutDisk::State {
    // One xOpen's handle: which file, and in which life of the disk it was opened.
    struct Open {
        State* disk;
        std::shared_ptr<File> file;
        std::string path;  // empty for a temporary file, which is in no directory
        std::uint64_t life;
        bool delete_on_close;
        int lock = SQLITE_LOCK_NONE;
    };
    // What SQLite allocates (szOsFile) for a handle: sqlite3_file first, as SQLite requires.
    struct Handle {
        sqlite3_file base;
        Open* open;
    };

    std::string name;
    sqlite3_vfs* fallback;
    sqlite3_vfs vfs{};
    mutable std::mutex mutex;
    std::map<std::string, std::shared_ptr<File>> files;
    std::uint64_t life = 0;  // one more at each cut: handles of an earlier life are dead
    std::uint64_t operations = 0;
    std::optional<std::uint64_t> operations_left;
    std::optional<std::uint64_t> capacity;

    static State& of(sqlite3_vfs* vfs) { return *static_cast<State*>(vfs->pAppData); }
    static Open& open_of(sqlite3_file* file) { return *reinterpret_cast<Handle*>(file)->open; }

    bool dead(const Open& open) const { return open.life != life; }

    // Counts a write, sync or truncation; false once the moment of the cut has passed.
    bool operation_allowed() {
        ++operations;
        if (!operations_left) return true;
        if (*operations_left == 0) return false;
        --*operations_left;
        return true;
    }

    bool room_for(const File& file, std::uint64_t new_size) const {
        if (!capacity || new_size <= file.current.size()) return true;
        std::uint64_t used = 0;
        for (const auto& [path, other] : files) used += other->current.size();
        return used + (new_size - file.current.size()) <= *capacity;
    }

    // Runs a method of a handle under the disk's mutex; a handle of a dead process gets
    // `dead_code`. SQLite's C frames must not see an exception, and the bodies throw only
    // when memory or the mutex fails, which SQLite knows as an I/O error of its own.
    template <typename Body>
    static int on_handle(sqlite3_file* handle, int dead_code, Body&& body) {
        try {
            Open& open = open_of(handle);
            std::lock_guard guard(open.disk->mutex);
            if (open.disk->dead(open)) return dead_code;
            return body(*open.disk, open, *open.file);
        } catch (const std::exception&) {
            return SQLITE_IOERR_NOMEM;
        }
    }

    template <typename Body>
    static int on_disk(sqlite3_vfs* vfs, Body&& body) {
        try {
            State& disk = of(vfs);
            std::lock_guard guard(disk.mutex);
            return body(disk);
        } catch (const std::exception&) {
            return SQLITE_IOERR_NOMEM;
        }
    }

    // Lets go of every lock above `level` (SQLITE_LOCK_SHARED or SQLITE_LOCK_NONE).
    static void release(Open& open, File& file, int level) {
        if (open.lock >= SQLITE_LOCK_RESERVED) {
            if (file.reserved == &open) file.reserved = nullptr;
            if (file.pending_lock == &open) file.pending_lock = nullptr;
            if (file.exclusive == &open) file.exclusive = nullptr;
            open.lock = SQLITE_LOCK_SHARED;
        }
        if (level == SQLITE_LOCK_NONE && open.lock == SQLITE_LOCK_SHARED) {
            --file.shared;
            open.lock = SQLITE_LOCK_NONE;
        }
    }

    static int x_close(sqlite3_file* handle) {
        Open* open = &open_of(handle);
        try {
            std::lock_guard guard(open->disk->mutex);
            State& disk = *open->disk;
            if (!disk.dead(*open)) {
                release(*open, *open->file, SQLITE_LOCK_NONE);
                const auto named = disk.files.find(open->path);
                if (open->delete_on_close && named != disk.files.end() && named->second == open->file)
                    disk.files.erase(named);
            }
        } catch (const std::exception&) {
            // Only the mutex can throw here; the handle is freed all the same, as SQLite
            // forgets it whatever xClose returns.
            delete open;
            return SQLITE_IOERR_CLOSE;
        }
        delete open;
        return SQLITE_OK;
    }

    static int x_read(sqlite3_file* handle, void* buffer, int amount, sqlite3_int64 offset) {
        return on_handle(handle, SQLITE_IOERR_READ, [&](State&, Open&, File& file) {
            const auto size = static_cast<std::int64_t>(file.current.size());
            const auto available = std::clamp<std::int64_t>(size - offset, 0, amount);
            if (available > 0) std::memcpy(buffer, file.current.data() + offset, static_cast<std::size_t>(available));
            if (available == amount) return SQLITE_OK;
            // SQLite requires the rest zeroed on a short read.
            std::memset(static_cast<char*>(buffer) + available, 0, static_cast<std::size_t>(amount - available));
            return SQLITE_IOERR_SHORT_READ;
        });
    }

    static int x_write(sqlite3_file* handle, const void* buffer, int amount, sqlite3_int64 offset) {
        return on_handle(handle, SQLITE_IOERR_WRITE, [&](State& disk, Open&, File& file) {
            if (!disk.operation_allowed()) return SQLITE_IOERR_WRITE;
            if (!disk.room_for(file, static_cast<std::uint64_t>(offset + amount))) return SQLITE_FULL;
            const auto* bytes = static_cast<const std::byte*>(buffer);
            file.pending.push_back({offset, std::vector<std::byte>(bytes, bytes + amount), false});
            put(file.current, offset, bytes, static_cast<std::size_t>(amount));
            return SQLITE_OK;
        });
    }

    static int x_truncate(sqlite3_file* handle, sqlite3_int64 size) {
        return on_handle(handle, SQLITE_IOERR_TRUNCATE, [&](State& disk, Open&, File& file) {
            if (!disk.operation_allowed()) return SQLITE_IOERR_TRUNCATE;
            if (!disk.room_for(file, static_cast<std::uint64_t>(size))) return SQLITE_FULL;
            file.pending.push_back({size, {}, true});
            replay(file.current, file.pending.back());
            return SQLITE_OK;
        });
    }

    static int x_sync(sqlite3_file* handle, int) {
        return on_handle(handle, SQLITE_IOERR_FSYNC, [&](State& disk, Open&, File& file) {
            if (!disk.operation_allowed()) return SQLITE_IOERR_FSYNC;
            for (const auto& pending : file.pending) replay(file.durable, pending);
            file.pending.clear();
            file.exists_durably = true;
            return SQLITE_OK;
        });
    }

    static int x_file_size(sqlite3_file* handle, sqlite3_int64* size) {
        return on_handle(handle, SQLITE_IOERR_FSTAT, [&](State&, Open&, File& file) {
            *size = static_cast<sqlite3_int64>(file.current.size());
            return SQLITE_OK;
        });
    }

    // SQLite asks for SHARED, RESERVED or EXCLUSIVE, never PENDING, which a handle holds on
    // its way to EXCLUSIVE so that no new reader starts while the old ones finish.
    static int x_lock(sqlite3_file* handle, int level) {
        return on_handle(handle, SQLITE_IOERR_LOCK, [&](State&, Open& open, File& file) {
            if (open.lock >= level) return SQLITE_OK;
            const bool others_writing = (file.pending_lock != nullptr && file.pending_lock != &open) ||
                                        (file.exclusive != nullptr && file.exclusive != &open);
            if (others_writing) return SQLITE_BUSY;
            if (open.lock == SQLITE_LOCK_NONE) {
                if (level != SQLITE_LOCK_SHARED) return SQLITE_MISUSE;
                ++file.shared;
                open.lock = SQLITE_LOCK_SHARED;
                return SQLITE_OK;
            }
            if (level == SQLITE_LOCK_RESERVED) {
                if (file.reserved != nullptr) return SQLITE_BUSY;
                file.reserved = &open;
                open.lock = SQLITE_LOCK_RESERVED;
                return SQLITE_OK;
            }
            if (level != SQLITE_LOCK_EXCLUSIVE) return SQLITE_MISUSE;
            file.pending_lock = &open;
            open.lock = SQLITE_LOCK_PENDING;
            if (file.shared > 1) return SQLITE_BUSY;
            file.exclusive = &open;
            open.lock = SQLITE_LOCK_EXCLUSIVE;
            return SQLITE_OK;
        });
    }

    static int x_unlock(sqlite3_file* handle, int level) {
        return on_handle(handle, SQLITE_IOERR_UNLOCK, [&](State&, Open& open, File& file) {
            release(open, file, level);
            return SQLITE_OK;
        });
    }

    static int x_check_reserved_lock(sqlite3_file* handle, int* reserved) {
        return on_handle(handle, SQLITE_IOERR_CHECKRESERVEDLOCK, [&](State&, Open&, File& file) {
            *reserved = file.reserved != nullptr || file.pending_lock != nullptr || file.exclusive != nullptr;
            return SQLITE_OK;
        });
    }

    static int x_file_control(sqlite3_file* handle, int, void*) {
        return on_handle(handle, SQLITE_IOERR, [](State&, Open&, File&) { return SQLITE_NOTFOUND; });
    }

    static int x_sector_size(sqlite3_file*) { return static_cast<int>(sector_size); }
    // None of the promises (atomic writes, safe appends, power-safe overwrites): SQLite then
    // protects itself against everything keep_random_sectors does.
    static int x_device_characteristics(sqlite3_file*) { return 0; }

    // Without the shared-memory methods (iVersion 2) and memory mapping (3).
    static constexpr sqlite3_io_methods io_methods = {.iVersion = 1,
                                                      .xClose = x_close,
                                                      .xRead = x_read,
                                                      .xWrite = x_write,
                                                      .xTruncate = x_truncate,
                                                      .xSync = x_sync,
                                                      .xFileSize = x_file_size,
                                                      .xLock = x_lock,
                                                      .xUnlock = x_unlock,
                                                      .xCheckReservedLock = x_check_reserved_lock,
                                                      .xFileControl = x_file_control,
                                                      .xSectorSize = x_sector_size,
                                                      .xDeviceCharacteristics = x_device_characteristics,
                                                      .xShmMap = nullptr,
                                                      .xShmLock = nullptr,
                                                      .xShmBarrier = nullptr,
                                                      .xShmUnmap = nullptr,
                                                      .xFetch = nullptr,
                                                      .xUnfetch = nullptr};

    static int x_open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* handle, int flags, int* out_flags) {
        // SQLite calls xClose only on a handle whose pMethods is set.
        reinterpret_cast<Handle*>(handle)->base.pMethods = nullptr;
        return on_disk(vfs, [&](State& disk) {
            std::shared_ptr<File> file;
            std::string path = name != nullptr ? name : "";
            if (name == nullptr) {
                file = std::make_shared<File>();
            } else if (const auto found = disk.files.find(path); found != disk.files.end()) {
                if ((flags & SQLITE_OPEN_EXCLUSIVE) != 0) return SQLITE_CANTOPEN;
                file = found->second;
            } else {
                if ((flags & SQLITE_OPEN_CREATE) == 0) return SQLITE_CANTOPEN;
                file = std::make_shared<File>();
                disk.files.emplace(path, file);
            }
            const bool delete_on_close = name == nullptr || (flags & SQLITE_OPEN_DELETEONCLOSE) != 0;
            auto* open = new Open{&disk, std::move(file), std::move(path), disk.life, delete_on_close};
            reinterpret_cast<Handle*>(handle)->open = open;
            reinterpret_cast<Handle*>(handle)->base.pMethods = &io_methods;
            if (out_flags != nullptr) *out_flags = flags;
            return SQLITE_OK;
        });
    }

    static int x_delete(sqlite3_vfs* vfs, const char* name, int) {
        return on_disk(
            vfs, [&](State& disk) { return disk.files.erase(name) == 1 ? SQLITE_OK : SQLITE_IOERR_DELETE_NOENT; });
    }

    static int x_access(sqlite3_vfs* vfs, const char* name, int flags, int* result) {
        return on_disk(vfs, [&](State& disk) {
            const auto found = disk.files.find(name);
            // As the unix VFS does, an empty file does not exist: SQLite relies on that, for
            // one, to take an empty WAL or journal for none.
            *result = found != disk.files.end() && (flags != SQLITE_ACCESS_EXISTS || !found->second->current.empty());
            return SQLITE_OK;
        });
    }

    // Not the default VFS's: that one resolves a name against the real current directory and
    // symbolic links, and these names are keys of `files`, nothing on the real disk.
    static int x_full_pathname(sqlite3_vfs*, const char* name, int size, char* out) {
        const std::string full = name[0] == '/' ? std::string(name) : "/" + std::string(name);
        if (full.size() + 1 > static_cast<std::size_t>(size)) return SQLITE_CANTOPEN;
        std::memcpy(out, full.c_str(), full.size() + 1);
        return SQLITE_OK;
    }

    static sqlite3_vfs* fallback_of(sqlite3_vfs* vfs) { return of(vfs).fallback; }
    static void* x_dl_open(sqlite3_vfs* vfs, const char* name) {
        return fallback_of(vfs)->xDlOpen(fallback_of(vfs), name);
    }
    static void x_dl_error(sqlite3_vfs* vfs, int size, char* out) {
        fallback_of(vfs)->xDlError(fallback_of(vfs), size, out);
    }
    static void (*x_dl_sym(sqlite3_vfs* vfs, void* library, const char* symbol))() {
        return fallback_of(vfs)->xDlSym(fallback_of(vfs), library, symbol);
    }
    static void x_dl_close(sqlite3_vfs* vfs, void* library) { fallback_of(vfs)->xDlClose(fallback_of(vfs), library); }
    static int x_randomness(sqlite3_vfs* vfs, int size, char* out) {
        return fallback_of(vfs)->xRandomness(fallback_of(vfs), size, out);
    }
    static int x_sleep(sqlite3_vfs* vfs, int microseconds) {
        return fallback_of(vfs)->xSleep(fallback_of(vfs), microseconds);
    }
    static int x_current_time(sqlite3_vfs* vfs, double* now) {
        return fallback_of(vfs)->xCurrentTime(fallback_of(vfs), now);
    }
    static int x_get_last_error(sqlite3_vfs* vfs, int size, char* out) {
        return fallback_of(vfs)->xGetLastError(fallback_of(vfs), size, out);
    }
};

PowerCutDisk::PowerCutDisk(std::string name) : state_(std::make_unique<State>()) {
    if (name.empty()) throw UsageError("PowerCutDisk: the VFS needs a name to be opened by");
    if (sqlite3_vfs_find(name.c_str()) != nullptr)
        throw UsageError("PowerCutDisk: a VFS named '" + name + "' is already registered; give each disk its own");
    state_->fallback = sqlite3_vfs_find(nullptr);
    if (state_->fallback == nullptr)
        throw Error("PowerCutDisk: SQLite has no default VFS to take time and randomness from");
    state_->name = std::move(name);
    sqlite3_vfs& vfs = state_->vfs;
    vfs.iVersion = 1;
    vfs.szOsFile = sizeof(State::Handle);
    vfs.mxPathname = state_->fallback->mxPathname;
    vfs.zName = state_->name.c_str();
    vfs.pAppData = state_.get();
    vfs.xOpen = State::x_open;
    vfs.xDelete = State::x_delete;
    vfs.xAccess = State::x_access;
    vfs.xFullPathname = State::x_full_pathname;
    vfs.xDlOpen = State::x_dl_open;
    vfs.xDlError = State::x_dl_error;
    vfs.xDlSym = State::x_dl_sym;
    vfs.xDlClose = State::x_dl_close;
    vfs.xRandomness = State::x_randomness;
    vfs.xSleep = State::x_sleep;
    vfs.xCurrentTime = State::x_current_time;
    vfs.xGetLastError = State::x_get_last_error;
    if (const int code = sqlite3_vfs_register(&vfs, 0); code != SQLITE_OK)
        throw Error("PowerCutDisk: SQLite did not register the VFS '" + state_->name + "': " + sqlite3_errstr(code));
}

PowerCutDisk::~PowerCutDisk() { sqlite3_vfs_unregister(&state_->vfs); }

const std::string& PowerCutDisk::name() const { return state_->name; }

void PowerCutDisk::cut(Mode mode) {
    std::lock_guard guard(state_->mutex);
    ++state_->life;
    state_->operations_left.reset();
    std::mt19937_64 random(mode.seed().value_or(0));
    for (auto entry = state_->files.begin(); entry != state_->files.end();) {
        File& file = *entry->second;
        file.forget_locks();
        if (!file.exists_durably) {
            entry = state_->files.erase(entry);
            continue;
        }
        if (mode.seed()) file.keep_random_sectors(random);
        if (mode.torn()) file.keep_all_but(entry->first == mode.torn()->path ? *mode.torn() : Mode::Torn{});
        file.pending.clear();
        file.current = file.durable;
        ++entry;
    }
}

void PowerCutDisk::fail_after(std::uint64_t n) {
    std::lock_guard guard(state_->mutex);
    state_->operations_left = n;
}

std::uint64_t PowerCutDisk::operations() const {
    std::lock_guard guard(state_->mutex);
    return state_->operations;
}

std::int64_t PowerCutDisk::file_size(const std::string& path) const {
    std::lock_guard guard(state_->mutex);
    const auto found = state_->files.find(path);
    return found == state_->files.end() ? 0 : static_cast<std::int64_t>(found->second->current.size());
}

void PowerCutDisk::disk_full_after(std::uint64_t bytes) {
    std::lock_guard guard(state_->mutex);
    state_->capacity = bytes;
}

void PowerCutDisk::disk_has_room() {
    std::lock_guard guard(state_->mutex);
    state_->capacity.reset();
}

}  // namespace acemq::testing
