// The outbox on SQLite, in ns/op: add (one business insert and the outbox insert in one
// transaction) and the relay's sweep (claim, read, publish to the embedded broker,
// delete), each beside raw sqlite3 doing the same statements in the same transaction mode
// (WAL, BEGIN IMMEDIATE, prepared statements kept), once with synchronous=FULL (the
// driver's default) and once with NORMAL, both sides alike. The raw add binds
// headers JSON made once; ours renders it per record, which is part of what is measured.
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <acemq/acemq.hpp>
#include <acemq/outbox.hpp>
#include <acemq/stores/sql_outbox_store.hpp>
#include <acemq/stores/sqlite.hpp>
#include "measure.hpp"
#include "sqlite_modes.hpp"

using namespace acemq;

namespace {

struct Order {
    std::string id;
    std::int64_t cents = 0;
};

constexpr std::size_t sweep_batch = 100;

const char* outbox_ddl =
    "CREATE TABLE outbox (id VARCHAR(64) NOT NULL PRIMARY KEY, exchange_name VARCHAR(255) NOT NULL,"
    " routing_key VARCHAR(255) NOT NULL, body BLOB NOT NULL, content_type VARCHAR(255) NOT NULL,"
    " headers TEXT NOT NULL, created_at BIGINT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,"
    " claimed_by VARCHAR(64), claim_expires_at BIGINT)";
const char* index_ddl[] = {"CREATE INDEX outbox_pending ON outbox (created_at)"};
const char* business_ddl = "CREATE TABLE orders (id VARCHAR(64) NOT NULL PRIMARY KEY, cents BIGINT NOT NULL)";

void remove_db(const std::string& path) {
    for (const char* ending : {"", "-wal", "-shm"}) std::filesystem::remove(path + ending);
}

// A fresh database path: whatever an earlier run left there is removed first.
std::string temp_path(const std::string& name) {
    const std::string path = (std::filesystem::temp_directory_path() / ("acemq-outbox-bench-" + name + ".db")).string();
    remove_db(path);
    return path;
}

// Raw sqlite3, as a program without the library would write it.
class Raw {
public:
    Raw(const std::string& path, const char* synchronous_pragma) {
        if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("cannot open " + path);
        run("PRAGMA journal_mode = WAL");
        run(synchronous_pragma);
        run(outbox_ddl);
        for (const char* ddl : index_ddl) run(ddl);
        run(business_ddl);
        begin_ = prepare("BEGIN IMMEDIATE");
        commit_ = prepare("COMMIT");
        business_ = prepare("INSERT INTO orders (id, cents) VALUES (?, ?)");
        outbox_ = prepare(
            "INSERT INTO outbox (id, exchange_name, routing_key, body, content_type, headers, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING");
        oldest_ = prepare(
            "SELECT id, exchange_name, routing_key, body, content_type, headers, created_at FROM outbox"
            " ORDER BY created_at, id LIMIT ?");
        delete_ = prepare("DELETE FROM outbox WHERE id = ?");
    }
    ~Raw() {
        for (sqlite3_stmt* statement : {begin_, commit_, business_, outbox_, oldest_, delete_})
            sqlite3_finalize(statement);
        sqlite3_close(db_);
    }

    void add(const OutboxRecord& made, const std::string& headers_json) {
        step(begin_);
        sqlite3_bind_text(business_, 1, made.id.data(), static_cast<int>(made.id.size()), SQLITE_STATIC);
        sqlite3_bind_int64(business_, 2, 100);
        step(business_);
        sqlite3_bind_text(outbox_, 1, made.id.data(), static_cast<int>(made.id.size()), SQLITE_STATIC);
        sqlite3_bind_text(outbox_, 2, made.exchange.data(), static_cast<int>(made.exchange.size()), SQLITE_STATIC);
        sqlite3_bind_text(outbox_, 3, made.routing_key.data(), static_cast<int>(made.routing_key.size()),
                          SQLITE_STATIC);
        sqlite3_bind_blob(outbox_, 4, made.body.data(), static_cast<int>(made.body.size()), SQLITE_STATIC);
        sqlite3_bind_text(outbox_, 5, made.content_type.data(), static_cast<int>(made.content_type.size()),
                          SQLITE_STATIC);
        sqlite3_bind_text(outbox_, 6, headers_json.data(), static_cast<int>(headers_json.size()), SQLITE_STATIC);
        sqlite3_bind_int64(outbox_, 7, made.created_at.time_since_epoch().count());
        step(outbox_);
        step(commit_);
    }

    // Reads the oldest `limit` rows and publishes each, deleting it after the confirm.
    std::size_t sweep(Transport& transport, std::size_t limit) {
        sqlite3_bind_int64(oldest_, 1, static_cast<sqlite3_int64>(limit));
        std::vector<OutboundMessage> batch;
        while (sqlite3_step(oldest_) == SQLITE_ROW) {
            OutboundMessage message;
            message.message_id = text(oldest_, 0);
            message.exchange = text(oldest_, 1);
            message.routing_key = text(oldest_, 2);
            const auto* body = static_cast<const std::byte*>(sqlite3_column_blob(oldest_, 3));
            message.body.assign(body, body + sqlite3_column_bytes(oldest_, 3));
            message.content_type = text(oldest_, 4);
            message.headers = {{"x-acemq-id", FieldValue(message.message_id)}};  // stands in for parsing headers
            message.mandatory = true;
            batch.push_back(std::move(message));
        }
        sqlite3_reset(oldest_);
        for (OutboundMessage& message : batch) {
            const std::string id = message.message_id;
            if (!transport.publish(std::move(message)).confirmed) throw std::runtime_error("not confirmed");
            sqlite3_bind_text(delete_, 1, id.data(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
            step(delete_);
        }
        return batch.size();
    }

private:
    static std::string text(sqlite3_stmt* statement, int column) {
        return std::string(reinterpret_cast<const char*>(sqlite3_column_text(statement, column)),
                           static_cast<std::size_t>(sqlite3_column_bytes(statement, column)));
    }
    void run(const char* sql) {
        if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
            throw std::runtime_error(sqlite3_errmsg(db_));
    }
    sqlite3_stmt* prepare(const char* sql) {
        sqlite3_stmt* statement = nullptr;
        if (sqlite3_prepare_v2(db_, sql, -1, &statement, nullptr) != SQLITE_OK)
            throw std::runtime_error(sqlite3_errmsg(db_));
        return statement;
    }
    void step(sqlite3_stmt* statement) {
        const int code = sqlite3_step(statement);
        sqlite3_reset(statement);
        if (code != SQLITE_DONE) throw std::runtime_error(sqlite3_errmsg(db_));
    }

    sqlite3* db_ = nullptr;
    sqlite3_stmt *begin_, *commit_, *business_, *outbox_, *oldest_, *delete_;
};

// Runs `fill` (untimed) and `sweep` (timed) until about a second of sweeping (a third of
// one in the quick run); ns per record.
template <class Fill, class Sweep>
double ns_per_record(Fill&& fill, Sweep&& sweep) {
    using clock = std::chrono::steady_clock;
    const auto enough = bench::quick_from_environment() ? std::chrono::milliseconds(330) : std::chrono::seconds(1);
    auto timed = clock::duration::zero();
    std::size_t records = 0;
    while (timed < enough) {
        fill();
        const auto start = clock::now();
        records += sweep();
        timed += clock::now() - start;
    }
    return std::chrono::duration<double, std::nano>(timed).count() / static_cast<double>(records);
}

// Add and sweep with one setting of synchronous, ours and raw alike, on fresh files.
void compare(Bus& bus, const Topology& queue, const OutboxRecord& model, const bench::SyncMode& mode) {
    std::printf("outbox on SQLite (WAL, synchronous=%s on both sides)\n", mode.name);
    const std::string ours_path = temp_path(std::string("ours-") + mode.name);
    const std::string raw_path = temp_path(std::string("raw-") + mode.name);
    const std::string raw_sweep_path = temp_path(std::string("raw-sweep-") + mode.name);
    {
        sqlite::Database db{ours_path, {.synchronous = mode.driver}};
        auto setup = db.connect();
        setup->execute(outbox_ddl);
        for (const char* ddl : index_ddl) setup->execute(ddl);
        setup->execute(business_ddl);
        SqlOutboxStore store{db, {.table = "outbox"}};
        Raw raw{raw_path, mode.pragma};
        std::string raw_headers_json;
        {  // the JSON our store writes, made once for the raw side
            auto reader = db.connect();
            sql::Transaction tx{*reader};
            store.add(model, tx);
            raw_headers_json = reader->query("SELECT headers FROM outbox").at(0).at(0).as_text();
            tx.rollback();
        }

        auto connection = db.connect();
        std::uint64_t serial = 0;
        OutboxRecord made = model;
        const double ours_add = bench::ns_per_op([&] {
            made.id = "m-" + std::to_string(++serial);
            sql::Transaction tx{*connection};
            connection->execute("INSERT INTO orders (id, cents) VALUES (?, ?)", {made.id, 100});
            store.add(made, tx);
            tx.commit();
        });
        const double raw_add = bench::ns_per_op([&] {
            made.id = "m-" + std::to_string(++serial);
            raw.add(made, raw_headers_json);
        });
        bench::report("add: business insert + outbox insert, one transaction", ours_add);
        bench::report("raw sqlite3: the same two inserts, one transaction", raw_add);
        bench::report_ratio("add", ours_add, raw_add);
        bench::record({.name = std::string("SQLite outbox add, synchronous=") + mode.name,
                       .ours = ours_add,
                       .against = "raw sqlite3: the same two inserts, one transaction",
                       .underneath = raw_add,
                       .unit = "ns/op"});

        // Sweeps start from the same backlog shape: the tables are emptied, then 100 fresh rows.
        connection->execute("DELETE FROM outbox");
        OutboxRelay relay{bus, store, {.batch = sweep_batch}};
        std::size_t published = 0;
        const double ours_sweep = ns_per_record(
            [&] {
                sql::Transaction tx{*connection};
                for (std::size_t i = 0; i < sweep_batch; ++i) {
                    made.id = "s-" + std::to_string(++serial);
                    store.add(made, tx);
                }
                tx.commit();
                if (++published % 50 == 0) {
                    bus.transport().delete_queue("orders.placed");
                    bus.declare(queue);
                }
            },
            [&] { return relay.sweep(); });
        Raw raw_sweeper{raw_sweep_path, mode.pragma};
        const double raw_sweep = ns_per_record(
            [&] {
                for (std::size_t i = 0; i < sweep_batch; ++i) {
                    made.id = "s-" + std::to_string(++serial);
                    raw_sweeper.add(made, raw_headers_json);
                }
                if (++published % 50 == 0) {
                    bus.transport().delete_queue("orders.placed");
                    bus.declare(queue);
                }
            },
            [&] { return raw_sweeper.sweep(bus.transport(), sweep_batch); });
        bench::report("sweep of 100 (claim, read, publish, delete), per record", ours_sweep);
        bench::report("raw sqlite3: read 100, publish, delete, per record", raw_sweep);
        bench::report_ratio("sweep", ours_sweep, raw_sweep);
        bench::record({.name = std::string("SQLite outbox sweep of 100, per record, synchronous=") + mode.name,
                       .ours = ours_sweep,
                       .against = "raw sqlite3: read 100, publish, delete",
                       .underneath = raw_sweep,
                       .unit = "ns/record"});
    }
    remove_db(ours_path);
    remove_db(raw_path);
    remove_db(raw_sweep_path);
}

}  // namespace

int main() {
    Bus bus = connect("inproc://outbox-bench", {.origin = "bench@host"});
    const Topology queue = Topology{}.queue("orders.placed", {.type = QueueType::classic});
    bus.declare(queue);
    const OutboxRecord model = record_to_queue(bus, "orders.placed", Order{"o-1", 4250});

    bench::report("record(): envelope, headers, msgpack body", bench::ns_per_op([&] {
                      OutboxRecord made = record_to_queue(bus, "orders.placed", Order{"o-1", 4250});
                      bench::keep(made);
                  }));
    for (const bench::SyncMode& mode : bench::sync_modes) compare(bus, queue, model, mode);
}
