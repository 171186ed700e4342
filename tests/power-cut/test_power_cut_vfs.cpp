// The power-cut disk bites: raw SQLite in WAL mode with synchronous=FULL keeps every
// transaction whose COMMIT returned SQLITE_OK across cuts at random points (mid-commit and
// mid-checkpoint), and always opens; with synchronous=OFF a cut loses committed transactions,
// so a broker that does not sync fails these tests. Also: a full disk, locks, dead handles.
#include "power_cut_vfs.hpp"

#include <sqlite3.h>

#include <acemq/error.hpp>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../support/wait.hpp"

namespace {

using acemq::testing::PowerCutDisk;

constexpr const char* database = "/broker.db";

// A raw connection on the disk, closed by its destructor whatever the disk did to it.
class Connection {
public:
    explicit Connection(const PowerCutDisk& disk) {
        opened_ = sqlite3_open_v2(database, &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, disk.name().c_str());
    }
    ~Connection() { sqlite3_close(db_); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    int opened() const { return opened_; }
    sqlite3* handle() const { return db_; }
    int execute(const std::string& sql) { return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr); }
    std::string message() const { return sqlite3_errmsg(db_); }

    // The first column of each row, as text; nullopt if the statement failed.
    std::optional<std::vector<std::string>> column(const std::string& sql) {
        sqlite3_stmt* statement = nullptr;
        if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) return std::nullopt;
        std::vector<std::string> values;
        int step;
        while ((step = sqlite3_step(statement)) == SQLITE_ROW) {
            const auto* text = sqlite3_column_text(statement, 0);
            values.emplace_back(text != nullptr ? reinterpret_cast<const char*>(text) : "");
        }
        sqlite3_finalize(statement);
        if (step != SQLITE_DONE) return std::nullopt;
        return values;
    }
    std::optional<std::string> value(const std::string& sql) {
        auto values = column(sql);
        if (!values || values->size() != 1) return std::nullopt;
        return values->front();
    }

private:
    sqlite3* db_ = nullptr;
    int opened_;
};

// The durable broker's settings, so far as this VFS can have them; false if the disk failed.
// locking_mode comes first: without it this VFS cannot have WAL (power_cut_vfs.hpp).
bool configure(Connection& db, const std::string& synchronous) {
    return db.opened() == SQLITE_OK && db.execute("PRAGMA locking_mode=EXCLUSIVE") == SQLITE_OK &&
           db.value("PRAGMA journal_mode=WAL") == "wal" &&
           db.execute("PRAGMA synchronous=" + synchronous) == SQLITE_OK &&
           db.execute("CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)") == SQLITE_OK;
}

// Transaction n inserts row n and deletes row n - window, so the table holds the last
// `window` transactions that committed, and which those are shows what survived.
constexpr std::int64_t window = 40;

std::string payload(std::int64_t id) {
    std::string text;
    while (text.size() < 300) text += "txn " + std::to_string(id) + ";";
    return text;
}

struct Ledger {
    std::int64_t confirmed = 0;  // the last transaction whose COMMIT returned SQLITE_OK
    std::int64_t attempted = 0;  // the last one begun
};

// Runs up to `transactions` transactions; stops at the first failure, as a process whose
// disk failed would.
void run_transactions(Connection& db, Ledger& ledger, int transactions) {
    for (int i = 0; i < transactions; ++i) {
        const auto id = ++ledger.attempted;
        if (db.execute("BEGIN") != SQLITE_OK) return;
        if (db.execute("INSERT INTO ledger (id, payload) VALUES (" + std::to_string(id) + ", '" + payload(id) + "')") !=
                SQLITE_OK ||
            db.execute("DELETE FROM ledger WHERE id <= " + std::to_string(id - window)) != SQLITE_OK ||
            db.execute("COMMIT") != SQLITE_OK) {
            db.execute("ROLLBACK");
            return;
        }
        ledger.confirmed = id;
    }
}

// The last transaction the database holds, after checking that it opens, is intact and
// holds exactly the rows that transaction left: so no transaction is half there.
std::int64_t last_surviving(Connection& db) {
    REQUIRE(db.opened() == SQLITE_OK);
    REQUIRE(db.execute("PRAGMA locking_mode=EXCLUSIVE") == SQLITE_OK);
    const auto integrity = db.value("PRAGMA integrity_check");
    INFO(db.message());
    REQUIRE(integrity == "ok");
    if (db.value("SELECT count(*) FROM sqlite_schema WHERE name = 'ledger'") == "0") return 0;
    const auto ids = db.column("SELECT id FROM ledger ORDER BY id");
    const auto payloads = db.column("SELECT payload FROM ledger ORDER BY id");
    REQUIRE(ids);
    REQUIRE(payloads);
    if (ids->empty()) return 0;
    const std::int64_t last = std::stoll(ids->back());
    REQUIRE(static_cast<std::int64_t>(ids->size()) == std::min(last, window));
    for (std::size_t i = 0; i < ids->size(); ++i) {
        const auto id = last - static_cast<std::int64_t>(ids->size() - 1 - i);
        REQUIRE(std::stoll((*ids)[i]) == id);
        REQUIRE((*payloads)[i] == payload(id));
    }
    return last;
}

// Checkpoints as the WAL auto-checkpoint makes them (at 4 frames, after a commit), counting
// the cuts that land inside one: SQLite's own auto-checkpoint is a WAL hook too, which
// cannot be watched.
struct Checkpoints {
    PowerCutDisk* disk;
    std::uint64_t failing_operation = 0;  // operations() once the first failing call was made
    int started = 0;
    int cut_inside = 0;

    static int after_commit(void* self, sqlite3* db, const char*, int frames) {
        auto& checkpoints = *static_cast<Checkpoints*>(self);
        if (frames < 4) return SQLITE_OK;
        ++checkpoints.started;
        const auto before = checkpoints.disk->operations();
        sqlite3_wal_checkpoint(db, nullptr);
        const auto after = checkpoints.disk->operations();
        if (before < checkpoints.failing_operation && checkpoints.failing_operation <= after) ++checkpoints.cut_inside;
        return SQLITE_OK;
    }
};

}  // namespace

TEST_CASE("with synchronous=FULL every confirmed transaction survives cuts at random points", "[power-cut]") {
    constexpr int transactions_per_cycle = 6;
    // How many write, sync and truncate calls a cycle makes when nothing fails, to pick
    // the cut points from.
    std::uint64_t cycle_operations = 0;
    {
        PowerCutDisk calibration("power-cut-calibration");
        Checkpoints checkpoints{&calibration};
        Ledger ledger;
        for (int cycle = 0; cycle < 3; ++cycle) {
            const auto before = calibration.operations();
            Connection db(calibration);
            REQUIRE(configure(db, "FULL"));
            sqlite3_wal_hook(db.handle(), Checkpoints::after_commit, &checkpoints);
            run_transactions(db, ledger, transactions_per_cycle);
            REQUIRE(ledger.confirmed == ledger.attempted);
            cycle_operations = std::max(cycle_operations, calibration.operations() - before);
        }
        REQUIRE(checkpoints.started > 0);
    }

    PowerCutDisk disk("power-cut-durability");
    Checkpoints checkpoints{&disk};
    Ledger ledger;
    std::mt19937_64 random(20240601);
    int cut_short = 0;         // cycles whose cut came before all their transactions were confirmed
    int kept_unconfirmed = 0;  // cycles in which a commit survived that had not returned yet
    for (int cycle = 0; cycle < 1000; ++cycle) {
        const auto mode =
            cycle % 2 == 0 ? PowerCutDisk::Mode::drop_unsynced() : PowerCutDisk::Mode::keep_random_sectors(random());
        const auto point = random() % (cycle_operations + cycle_operations / 4 + 1);
        INFO("cycle " << cycle << ", cut after " << point << " operations, "
                      << (mode.seed() ? "keeping random sectors" : "dropping unsynced writes"));
        const auto confirmed_before = ledger.confirmed;
        {
            // The cut may land while the database is being created, recovered or configured.
            disk.fail_after(point);
            checkpoints.failing_operation = disk.operations() + point + 1;
            Connection db(disk);
            if (configure(db, "FULL")) {
                sqlite3_wal_hook(db.handle(), Checkpoints::after_commit, &checkpoints);
                run_transactions(db, ledger, transactions_per_cycle);
            }
            disk.cut(mode);
        }
        if (ledger.confirmed - confirmed_before < transactions_per_cycle) ++cut_short;

        Connection db(disk);
        const auto last = last_surviving(db);
        REQUIRE(last >= ledger.confirmed);
        REQUIRE(last <= ledger.attempted);
        if (last > ledger.confirmed) ++kept_unconfirmed;
        ledger.confirmed = ledger.attempted = last;
        // Checking reads only, and cutting again leaves the files as the last cut left them
        // for the next cycle; now and then the check closes cleanly instead (a last
        // checkpoint, the WAL deleted).
        if (cycle % 10 != 9) disk.cut(PowerCutDisk::Mode::drop_unsynced());
    }
    INFO(cut_short << " cycles cut short, " << checkpoints.started << " checkpoints, " << checkpoints.cut_inside
                   << " cut inside one, " << kept_unconfirmed << " kept a commit not yet confirmed");
    CHECK(cut_short >= 500);
    CHECK(checkpoints.cut_inside >= 50);
    CHECK(kept_unconfirmed > 0);
    CHECK(ledger.confirmed > 1000);
}

TEST_CASE("with synchronous=OFF a cut loses committed transactions", "[power-cut]") {
    PowerCutDisk disk("power-cut-unsynced");
    Ledger ledger;
    {
        Connection db(disk);
        REQUIRE(configure(db, "FULL"));
        run_transactions(db, ledger, 5);
    }
    {
        Connection db(disk);
        REQUIRE(configure(db, "OFF"));
        run_transactions(db, ledger, 20);
        REQUIRE(ledger.confirmed == 25);
        disk.cut(PowerCutDisk::Mode::drop_unsynced());
    }
    Connection db(disk);
    CHECK(last_surviving(db) == 5);
}

TEST_CASE("a full disk fails writes with SQLITE_FULL until it has room again", "[power-cut]") {
    PowerCutDisk disk("power-cut-full");
    Connection db(disk);
    REQUIRE(configure(db, "FULL"));
    REQUIRE(db.execute("CREATE TABLE blobs (b BLOB NOT NULL)") == SQLITE_OK);
    disk.disk_full_after(256 * 1024);
    int inserted = 0;
    int code = SQLITE_OK;
    while (inserted < 1000 && (code = db.execute("INSERT INTO blobs (b) VALUES (zeroblob(4000))")) == SQLITE_OK)
        ++inserted;
    CHECK(code == SQLITE_FULL);
    CHECK(db.message() == "database or disk is full");
    CHECK(inserted > 10);

    disk.disk_has_room();
    REQUIRE(db.execute("INSERT INTO blobs (b) VALUES (zeroblob(4000))") == SQLITE_OK);
    CHECK(db.value("SELECT count(*) FROM blobs") == std::to_string(inserted + 1));
    CHECK(db.value("PRAGMA integrity_check") == "ok");
    disk.cut(PowerCutDisk::Mode::drop_unsynced());
    Connection reopened(disk);
    REQUIRE(reopened.execute("PRAGMA locking_mode=EXCLUSIVE") == SQLITE_OK);
    CHECK(reopened.value("SELECT count(*) FROM blobs") == std::to_string(inserted + 1));
}

TEST_CASE("two connections contend for a file as SQLite's lock levels say", "[power-cut]") {
    PowerCutDisk disk("power-cut-locks");
    SECTION("a connection with locking_mode=EXCLUSIVE keeps a second one out") {
        auto holder = std::make_unique<Connection>(disk);
        REQUIRE(configure(*holder, "FULL"));
        REQUIRE(holder->execute("INSERT INTO ledger (id, payload) VALUES (1, 'one')") == SQLITE_OK);
        Connection second(disk);
        REQUIRE(second.execute("PRAGMA locking_mode=EXCLUSIVE") == SQLITE_OK);
        CHECK(second.execute("SELECT count(*) FROM ledger") == SQLITE_BUSY);
        holder.reset();
        CHECK(second.value("SELECT count(*) FROM ledger") == "1");
    }
    SECTION("in rollback mode: one writer, readers beside it, and no commit under a reader") {
        Connection writer(disk);
        Connection reader(disk);
        REQUIRE(writer.execute("CREATE TABLE t (x)") == SQLITE_OK);
        REQUIRE(writer.execute("BEGIN IMMEDIATE") == SQLITE_OK);  // RESERVED
        CHECK(reader.execute("BEGIN IMMEDIATE") == SQLITE_BUSY);
        REQUIRE(reader.execute("BEGIN") == SQLITE_OK);
        CHECK(reader.value("SELECT count(*) FROM t") == "0");  // SHARED beside RESERVED
        REQUIRE(writer.execute("INSERT INTO t VALUES (1)") == SQLITE_OK);
        CHECK(writer.execute("COMMIT") == SQLITE_BUSY);  // EXCLUSIVE waits for the reader
        REQUIRE(reader.execute("COMMIT") == SQLITE_OK);
        CHECK(writer.execute("COMMIT") == SQLITE_OK);
        CHECK(reader.value("SELECT count(*) FROM t") == "1");
    }
}

TEST_CASE("a connection from before a cut fails and leaves what survived alone", "[power-cut]") {
    PowerCutDisk disk("power-cut-dead");
    Ledger ledger;
    auto dead = std::make_unique<Connection>(disk);
    REQUIRE(configure(*dead, "FULL"));
    run_transactions(*dead, ledger, 3);
    disk.cut(PowerCutDisk::Mode::keep_random_sectors(7));

    Connection survivor(disk);
    CHECK(last_surviving(survivor) == 3);
    CHECK((dead->execute("INSERT INTO ledger (id, payload) VALUES (4, 'four')") & 0xff) == SQLITE_IOERR);
    dead.reset();
    run_transactions(survivor, ledger, 2);
    CHECK(ledger.confirmed == 5);
    CHECK(last_surviving(survivor) == 5);
}

TEST_CASE("a cut from another thread stops a writer thread and keeps what it confirmed", "[power-cut]") {
    PowerCutDisk disk("power-cut-threads");
    Ledger ledger;
    auto writer = std::make_unique<Connection>(disk);
    REQUIRE(configure(*writer, "FULL"));
    std::thread writing([&] { run_transactions(*writer, ledger, 1'000'000); });
    const bool wrote = testing_support::eventually([&] { return disk.operations() >= 200; }, std::chrono::seconds(20),
                                                   std::chrono::milliseconds(1));
    disk.cut(PowerCutDisk::Mode::keep_random_sectors(11));
    writing.join();
    writer.reset();
    REQUIRE(wrote);
    REQUIRE(ledger.confirmed > 0);
    Connection db(disk);
    const auto last = last_surviving(db);
    CHECK(last >= ledger.confirmed);
    CHECK(last <= ledger.attempted);
}

TEST_CASE("a second disk of the same name is refused", "[power-cut]") {
    PowerCutDisk disk("power-cut-twice");
    CHECK_THROWS_AS(PowerCutDisk("power-cut-twice"), acemq::UsageError);
}
