// A simulated machine's disk for SQLite, with a volatile write cache, to prove that a database
// survives power cuts: what a committed transaction confirmed is still there, and the file
// always opens. The disk registers itself as a SQLite VFS under the name it is given; open a
// database on it with sqlite3_open_v2(path, &db, flags, disk.name().c_str()).
//
// The model. Files live in memory (path -> file), never on the real disk. Each file has a
// durable image, what survives a cut, and the writes and truncations made since its last
// xSync, which reads already see. xSync makes everything written so far to that file durable.
// Directories are not modelled: a created file exists durably from its first sync (a cut
// before that removes it), and xDelete takes effect at once, durably.
//
// WAL needs `PRAGMA locking_mode=EXCLUSIVE`, run on every connection before anything else:
// this is an iVersion 1 VFS, without the shared-memory methods, so SQLite keeps the WAL index
// in heap memory only when it holds the file exclusively. Without it `PRAGMA journal_mode=WAL`
// stays in rollback mode, and a database already in WAL mode fails to open (SQLITE_CANTOPEN).
//
// Thread-safe: one mutex guards the disk, so a writer thread may run SQLite on it while the
// test thread calls cut(). Destroy the disk only after closing every connection that uses it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace acemq::testing {

class PowerCutDisk {
public:
    // What of the writes since each file's last sync survives a cut.
    class Mode {
    public:
        // None: every file reverts to its durable image.
        static Mode drop_unsynced() { return Mode(std::nullopt); }
        // A random part, chosen by `seed`, at 512-byte sector granularity: each sector a
        // pending write touched holds afterwards its durable content or its content after one
        // of those writes, so a write across sectors may be torn. A sector never goes back to
        // older data than the disk had already stored, as a real cache writes one sector's
        // data in order. A pending truncation survives or not, by a coin toss.
        static Mode keep_random_sectors(std::uint64_t seed) { return Mode(seed); }
        // Every pending write, but the bytes in [begin, end) of file `path`, which keep their
        // durable content (zeros where the durable file was shorter): the one torn stretch a
        // test chooses, as a cache that wrote all but one of its sectors.
        static Mode keep_all_but(std::string path, std::int64_t begin, std::int64_t end) {
            Mode mode(std::nullopt);
            mode.torn_ = Torn{std::move(path), begin, end};
            return mode;
        }

        struct Torn {
            std::string path;
            std::int64_t begin;
            std::int64_t end;
        };
        const std::optional<std::uint64_t>& seed() const { return seed_; }
        const std::optional<Torn>& torn() const { return torn_; }

    private:
        explicit Mode(std::optional<std::uint64_t> seed) : seed_(seed) {}
        std::optional<std::uint64_t> seed_;
        std::optional<Torn> torn_;
    };

    // Registers the VFS as `name`; throws acemq::UsageError if a VFS of that name exists.
    explicit PowerCutDisk(std::string name);
    // Unregisters the VFS.
    ~PowerCutDisk();
    PowerCutDisk(const PowerCutDisk&) = delete;
    PowerCutDisk& operator=(const PowerCutDisk&) = delete;

    const std::string& name() const;

    // The power cut. Every file keeps what `mode` says survives; its locks are gone. A file
    // handle opened before the cut belongs to a dead process: every later call on it fails
    // with SQLITE_IOERR and touches nothing, and only closing it works. The files stay on the
    // disk, so the next sqlite3_open_v2 on the VFS sees what survived. xDelete has no handle
    // and so cannot tell a dead process from a live one; SQLite deletes a WAL or journal only
    // after a checkpoint or commit, which a dead connection cannot make, but closing the old
    // connections before opening new ones leaves no doubt. Disarms fail_after (the machine
    // restarts); a disk_full_after limit stays, being the disk's.
    void cut(Mode mode);

    // Arms the moment of the cut: the next `n` write, sync and truncate calls work, and every
    // one after fails with SQLITE_IOERR and reaches nothing, until cut(). Reads still work.
    void fail_after(std::uint64_t n);
    // How many write, sync and truncate calls live handles have made on the disk, failed ones
    // included, so a test can pick a point for fail_after.
    std::uint64_t operations() const;
    // The size of file `path` as reads see it (0 when there is none), so a test can find
    // where its next write lands.
    std::int64_t file_size(const std::string& path) const;

    // A write or truncation that would grow the files' total size beyond `bytes` fails with
    // SQLITE_FULL and changes nothing, until disk_has_room().
    void disk_full_after(std::uint64_t bytes);
    void disk_has_room();

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace acemq::testing
