// The durable embedded broker side by side with raw SQLite doing the same durable work, in
// one run, on one disk (a fresh directory under $TMPDIR, /tmp by default; its filesystem is
// printed), both with WAL, synchronous=FULL, locking_mode=EXCLUSIVE and a 16 MiB
// journal_size_limit, as the broker's data file has. For payloads of 64 B and 1 KiB:
//   (a) window 256: messages published with 256 confirmed publishes kept outstanding
//       (Broker::publish with a ConfirmFn), persistent, to a durable queue, consumed (prefetch
//       256) and acked on a thread of their own; msg/s from the first publish to the last
//       ack. Once on a connection with the default options, whose acks ride the next commit
//       (what an InprocTransport and the zmq server get), and once on one that opted in to
//       acks waiting for their commit (acks_wait = true). Raw: BEGIN, 256 INSERTs, COMMIT,
//       then BEGIN, their 256 DELETEs, COMMIT; and the same one message at a time.
//   (b) one confirmed Broker::publish at a time (nobody consuming), p50 and p99, against one
//       raw BEGIN, INSERT, COMMIT, the two in turn so that both meet the same disk.
//   (c) of (a), bytes written (write_bytes: sent towards the disk; wchar: handed to write())
//       per byte of payload, from /proc/self/io before and after, the writer thread included.
//   (d) (a) and (b) on a broker with no data file: what durability costs.
//   (e) the data file (db + -wal) after half and after all of 1,000,000 messages (100,000
//       with --quick) through (a) with acks riding the next commit, and raw's file after the
//       same: it must stay bounded, not grow with what went through.
// Throughputs and (c) are the median of several runs. Figures only, never asserted on: the
// machine is shared and its speed moves by tens of percent, so read the ratios, which come
// from one run.
//
//   build/bench/durable_bench [--quick]   (or ACEMQ_BENCH_QUICK=1)
//   build/bench/durable_bench --window-only [--acks ride|wait]   (only (a), to profile it: the
//                                             broker's, with its commits a 256 messages beside
//                                             raw's 2, and raw's, plain and with the broker's file
//                                             shape; --acks keeps one of the broker's two connections.
//                                             Raw's instructions alone: valgrind --tool=callgrind
//                                             --toggle-collect='*raw_through*')
//   --payload 64|1024 keeps one of the two payloads, for any of the above
//   build/bench/durable_bench --publish-only  (only (b), the broker's and raw's, to profile it)
#include <sqlite3.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <acemq/error.hpp>
#include <acemq/inproc.hpp>
#include <acemq/topology.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "acker.hpp"
#include "measure.hpp"

using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;
using acemq::Error;
using acemq::inproc::Broker;

constexpr int window = 256;
constexpr auto drain_deadline = 120s;

struct Sizes {
    int runs;              // of each throughput and (c), the median reported
    int window_messages;   // (a) per run
    int one_at_a_time;     // raw (a) with one message per transaction, per run
    int single_publishes;  // (b)
    int warm_up;           // publishes and commits before the timed ones
    int steady_messages;   // (e)
};

constexpr Sizes full_sizes{5, 51'200, 1'000, 2'000, 100, 1'000'000};
constexpr Sizes quick_sizes{3, 5'120, 200, 200, 20, 100'000};

double seconds(Clock::duration elapsed) { return std::chrono::duration<double>(elapsed).count(); }
double micros(Clock::duration elapsed) { return std::chrono::duration<double, std::micro>(elapsed).count(); }

template <class Run>
double median_of_runs(int runs, Run&& run) {
    std::vector<double> figures;
    for (int i = 0; i < runs; ++i) figures.push_back(run());
    return bench::median(std::move(figures));
}

// ---- the disk -------------------------------------------------------------------------------

// A directory of this run's own for every file; it goes at the end.
class Scratch {
public:
    Scratch() {
        std::string pattern = (std::filesystem::temp_directory_path() / "acemq-durable-bench.XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr)
            throw Error("cannot make a directory for the data files under " +
                        std::filesystem::temp_directory_path().string() + ": set TMPDIR to a writable one");
        directory_ = pattern;
    }
    ~Scratch() {
        std::error_code ignored;  // a leftover file in /tmp is no reason to fail the run
        std::filesystem::remove_all(directory_, ignored);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

    const std::filesystem::path& directory() const { return directory_; }
    std::string fresh(const std::string& what) {
        return (directory_ / (what + "." + std::to_string(++made_) + ".db")).string();
    }

private:
    std::filesystem::path directory_;
    int made_ = 0;
};

std::string filesystem_of(const std::filesystem::path& directory) {
    struct statfs about {};
    if (statfs(directory.c_str(), &about) != 0) return "unknown";
    switch (static_cast<unsigned long>(about.f_type)) {
    case 0xEF53: return "ext2/3/4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs (no real sync: the figures say little about a disk)";
    case 0x794C7630: return "overlayfs";
    default: return "f_type 0x" + std::to_string(static_cast<unsigned long>(about.f_type));
    }
}

// db + -wal, the space the data file takes.
std::uint64_t file_bytes(const std::string& db) {
    std::uint64_t bytes = 0;
    for (const std::string& path : {db, db + "-wal"}) {
        std::error_code missing;
        const std::uintmax_t size = std::filesystem::file_size(path, missing);
        if (!missing) bytes += size;
    }
    return bytes;
}

// This process's write counters, every thread's, from /proc/self/io.
struct Written {
    double wchar = 0, write_bytes = 0;
};

Written written_so_far() {
    std::ifstream io("/proc/self/io");
    Written counters;
    for (std::string key; io >> key;) {
        double value = 0;
        io >> value;
        if (key == "wchar:") counters.wchar = value;
        if (key == "write_bytes:") counters.write_bytes = value;
    }
    if (!io.eof()) throw Error("cannot read /proc/self/io");
    return counters;
}

// What a throughput run measured: msg/s, and bytes written per byte of payload.
struct Figures {
    double per_second = 0, write_bytes = 0, wchar = 0;
};

// Runs `run` (which moves `count` messages of `payload` bytes) `runs` times; each figure
// is the median of its own.
template <class Run>
Figures median_figures(int runs, int count, std::size_t payload, Run&& run) {
    std::vector<double> per_second, write_bytes, wchar;
    for (int i = 0; i < runs; ++i) {
        const Written before = written_so_far();
        const auto start = Clock::now();
        run();
        per_second.push_back(count / seconds(Clock::now() - start));
        const Written after = written_so_far();
        const double payload_bytes = static_cast<double>(count) * static_cast<double>(payload);
        write_bytes.push_back((after.write_bytes - before.write_bytes) / payload_bytes);
        wchar.push_back((after.wchar - before.wchar) / payload_bytes);
    }
    return {bench::median(per_second), bench::median(write_bytes), bench::median(wchar)};
}

// ---- raw SQLite -----------------------------------------------------------------------------

struct Close {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct Finalize {
    void operator()(sqlite3_stmt* statement) const noexcept { sqlite3_finalize(statement); }
};
using Statement = std::unique_ptr<sqlite3_stmt, Finalize>;

// The messages table of the broker's data file, written by hand with the same pragmas. With
// the broker's file shape, also what the broker's file has for its own ends: auto_vacuum =
// INCREMENTAL, so that it can give space back (docs/durability.md), and a checksum beside
// each row (a value of its 8 bytes here: the broker computes it on the publisher's thread).
enum class Shape { plain, brokers };

class Raw {
public:
    explicit Raw(const std::string& path, Shape shape = Shape::plain) : shape_(shape) {
        sqlite3* raw = nullptr;
        const int opened = sqlite3_open_v2(path.c_str(), &raw,
                                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
        db_.reset(raw);
        check(opened);
        if (shape == Shape::brokers)
            check(sqlite3_exec(db_.get(), "PRAGMA auto_vacuum = INCREMENTAL", nullptr, nullptr, nullptr));
        for (const char* sql :
             {"PRAGMA locking_mode = EXCLUSIVE", "PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL",
              "PRAGMA journal_size_limit = 16777216",
              "CREATE TABLE messages(id INTEGER PRIMARY KEY, queue INTEGER NOT NULL, enqueued INTEGER, "
              "redelivered INTEGER NOT NULL, properties BLOB NOT NULL, body BLOB NOT NULL, checksum INTEGER)"})
            check(sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr));
        begin_ = prepare("BEGIN");
        commit_ = prepare("COMMIT");
        insert_ = prepare(
            "INSERT INTO messages(id, queue, enqueued, redelivered, properties, body, checksum) "
            "VALUES(?1, 1, ?2, 0, ?3, ?4, ?5)");
        delete_ = prepare("DELETE FROM messages WHERE id = ?1");
    }

    void begin() { run(begin_.get()); }
    void commit() { run(commit_.get()); }
    // A message as the broker stores it; its id, for the delete.
    std::int64_t insert(const acemq::Bytes& payload) {
        const std::int64_t id = ++last_id_;
        const auto now = std::chrono::system_clock::now().time_since_epoch();
        sqlite3_bind_int64(insert_.get(), 1, id);
        sqlite3_bind_int64(insert_.get(), 2, std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
        // About what the broker packs: content type, routing key and four empty fields.
        static constexpr char properties[] =
            "\x96\xb8"
            "application/octet-stream\xa0\xa5queue\xa0\xa0\x80";
        sqlite3_bind_blob(insert_.get(), 3, properties, sizeof properties - 1, SQLITE_STATIC);
        sqlite3_bind_blob(insert_.get(), 4, payload.data(), static_cast<int>(payload.size()), SQLITE_STATIC);
        if (shape_ == Shape::brokers)
            sqlite3_bind_int64(insert_.get(), 5, static_cast<std::int64_t>(0x9e3779b97f4a7c15ULL * std::uint64_t(id)));
        else
            sqlite3_bind_null(insert_.get(), 5);
        run(insert_.get());
        return id;
    }
    void remove(std::int64_t id) {
        sqlite3_bind_int64(delete_.get(), 1, id);
        run(delete_.get());
    }

private:
    void check(int code) {
        if (code != SQLITE_OK) throw Error(std::string("sqlite3: ") + sqlite3_errmsg(db_.get()));
    }
    Statement prepare(const char* sql) {
        sqlite3_stmt* statement = nullptr;
        check(sqlite3_prepare_v2(db_.get(), sql, -1, &statement, nullptr));
        return Statement(statement);
    }
    void run(sqlite3_stmt* statement) {
        const int stepped = sqlite3_step(statement);
        sqlite3_reset(statement);
        if (stepped != SQLITE_DONE) throw Error(std::string("sqlite3: ") + sqlite3_errmsg(db_.get()));
    }

    Shape shape_;
    std::unique_ptr<sqlite3, Close> db_;  // declared first: closed after the statements
    Statement begin_, commit_, insert_, delete_;
    std::int64_t last_id_ = 0;
};

// `count` messages in transactions of `batch` inserts, each followed by one of their deletes.
void raw_through(Raw& raw, const acemq::Bytes& payload, int count, int batch) {
    std::vector<std::int64_t> ids;
    for (int done = 0; done < count; done += batch) {
        ids.clear();
        raw.begin();
        for (int i = 0; i < batch; ++i) ids.push_back(raw.insert(payload));
        raw.commit();
        raw.begin();
        for (const std::int64_t id : ids) raw.remove(id);
        raw.commit();
    }
}

// (a) on raw's side: `count` messages through `raw` in transactions of a window, after one
// untimed round that lays out the file's first pages; the median of `runs` rounds.
Figures raw_window(Raw& raw, const acemq::Bytes& payload, int count, int runs) {
    raw_through(raw, payload, count, window);
    return median_figures(runs, count, payload.size(), [&] { raw_through(raw, payload, count, window); });
}

struct Latency {
    double p50_us, p99_us;
};

// One commit of one insert, in us; the row's id goes to `ids`, to be deleted untimed.
double raw_commit(Raw& raw, const acemq::Bytes& payload, std::vector<std::int64_t>& ids) {
    const auto start = Clock::now();
    raw.begin();
    ids.push_back(raw.insert(payload));
    raw.commit();
    return micros(Clock::now() - start);
}

void raw_remove(Raw& raw, const std::vector<std::int64_t>& ids) {
    raw.begin();
    for (const std::int64_t id : ids) raw.remove(id);
    raw.commit();
}

// ---- the broker -----------------------------------------------------------------------------

// Keeps at most `window` publishes waiting for their confirm.
class Outstanding {
public:
    void take_slot() {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return waiting_ < window; });
        ++waiting_;
    }
    acemq::inproc::ConfirmFn confirm() {
        return [this](acemq::PublishResult result) {
            std::lock_guard lock(mutex_);
            if (!result.confirmed || !result.routed) failure_ = result.return_reason;
            --waiting_;
            changed_.notify_one();
        };
    }
    // Throws when any publish came back unconfirmed or unrouted.
    void drain() {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return waiting_ == 0; });
        if (!failure_.empty()) throw Error("a publish was not confirmed: " + failure_);
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    int waiting_ = 0;
    std::string failure_;
};

acemq::OutboundMessage message_to(const std::string& queue, const acemq::Bytes& payload) {
    return {.routing_key = queue,
            .body = payload,
            .content_type = "application/octet-stream",
            .persistent = true,
            .mandatory = true};
}

// A broker, a connection to it and a durable queue on it, all gone at the end.
class BrokerUnderTest {
public:
    BrokerUnderTest(const std::string& data, bool acks_wait)
        : broker_(acemq::inproc::broker("durable_bench." + std::to_string(++made_), {.data = data})),
          connection_(broker_->open_connection({.acks_wait = acks_wait})) {
        broker_->declare(connection_, acemq::Topology{}.queue(queue_, {.durable = true}));
    }
    ~BrokerUnderTest() { broker_->close_connection(connection_); }
    Broker& broker() { return *broker_; }
    BrokerUnderTest(const BrokerUnderTest&) = delete;
    BrokerUnderTest& operator=(const BrokerUnderTest&) = delete;

    // `count` messages through window-256 publishing, a consumer and its acks.
    void through(const acemq::Bytes& payload, int count) {
        bench::Acker acker;
        auto subscription = broker_->consume(connection_, queue_, {.prefetch = window},
                                             [&acker](acemq::Delivery delivery) { acker.hand(std::move(delivery)); });
        Outstanding outstanding;
        for (int i = 0; i < count; ++i) {
            outstanding.take_slot();
            broker_->publish(message_to(queue_, payload), outstanding.confirm());
        }
        outstanding.drain();
        acker.wait_for(count, drain_deadline);
        subscription->close();
    }

    // One Broker::publish, nobody consuming: the time until it returned confirmed, in us.
    double publish(const acemq::Bytes& payload) {
        acemq::OutboundMessage message = message_to(queue_, payload);
        const auto start = Clock::now();
        const acemq::PublishResult result = broker_->publish(std::move(message));
        const double took = micros(Clock::now() - start);
        if (!result.confirmed || !result.routed) throw Error("a publish was not confirmed: " + result.return_reason);
        return took;
    }
    // Drops what publish() left in the queue.
    void empty_queue() {
        broker_->delete_queue(connection_, queue_);
        broker_->declare(connection_, acemq::Topology{}.queue(queue_, {.durable = true}));
    }
    // One publish at a time; the queue is emptied afterwards.
    Latency publishes(const acemq::Bytes& payload, int count, int warm_up) {
        std::vector<double> samples;
        for (int i = 0; i < warm_up + count; ++i) {
            const double took = publish(payload);
            if (i >= warm_up) samples.push_back(took);
        }
        empty_queue();
        return {bench::percentile(samples, 0.50), bench::percentile(samples, 0.99)};
    }

private:
    static inline int made_ = 0;
    std::shared_ptr<Broker> broker_;
    Broker::ConnectionId connection_;
    const std::string queue_ = "durable_bench";
};

// (b): one raw commit and one broker publish in turn, so that both meet the same disk; on a
// shared machine its syncs take from a quarter to several milliseconds from one second to
// the next, and measured one after the other the ratio moved from 0.5 to 2.5.
struct Commits {
    Latency raw, broker;
};
Commits commits_and_publishes(Raw& raw, BrokerUnderTest& broker, const acemq::Bytes& payload, int count, int warm_up) {
    std::vector<std::int64_t> ids;
    std::vector<double> raw_samples, broker_samples;
    for (int i = 0; i < warm_up + count; ++i) {
        const double raw_took = raw_commit(raw, payload, ids);
        const double broker_took = broker.publish(payload);
        if (i < warm_up) continue;
        raw_samples.push_back(raw_took);
        broker_samples.push_back(broker_took);
    }
    raw_remove(raw, ids);
    broker.empty_queue();
    return {{bench::percentile(raw_samples, 0.50), bench::percentile(raw_samples, 0.99)},
            {bench::percentile(broker_samples, 0.50), bench::percentile(broker_samples, 0.99)}};
}

// ---- the table ------------------------------------------------------------------------------

struct Column {
    Figures raw_window, raw_shaped, raw_one, waited, unwaited, memory;
    Latency raw_commit, publish, memory_publish;
    std::uint64_t steady_half, steady_all, raw_steady_half, raw_steady_all;
};

Column measure(Scratch& scratch, const acemq::Bytes& payload, const Sizes& sizes) {
    Column column{};
    const int count = sizes.window_messages;
    const std::size_t size = payload.size();
    {
        Raw raw(scratch.fresh("raw"));
        column.raw_window = raw_window(raw, payload, count, sizes.runs);
        column.raw_one = median_figures(sizes.runs, sizes.one_at_a_time, size,
                                        [&] { raw_through(raw, payload, sizes.one_at_a_time, 1); });
    }
    {
        Raw shaped(scratch.fresh("raw-shaped"), Shape::brokers);
        column.raw_shaped = raw_window(shaped, payload, count, sizes.runs);
    }
    for (const bool acks_wait : {true, false}) {
        BrokerUnderTest broker(scratch.fresh("broker"), acks_wait);
        broker.through(payload, window * 4);
        Figures& figures = acks_wait ? column.waited : column.unwaited;
        figures = median_figures(sizes.runs, count, size, [&] { broker.through(payload, count); });
    }
    {
        Raw raw(scratch.fresh("raw-commits"));
        BrokerUnderTest broker(scratch.fresh("broker-publishes"), false);
        const Commits commits = commits_and_publishes(raw, broker, payload, sizes.single_publishes, sizes.warm_up);
        column.raw_commit = commits.raw;
        column.publish = commits.broker;
    }
    {
        BrokerUnderTest memory("", true);
        memory.through(payload, window * 4);
        column.memory = median_figures(sizes.runs, count, size, [&] { memory.through(payload, count); });
        column.memory_publish = memory.publishes(payload, sizes.single_publishes, sizes.warm_up);
    }
    const int half = sizes.steady_messages / 2;
    {
        const std::string data = scratch.fresh("steady");
        BrokerUnderTest broker(data, false);
        broker.through(payload, half);
        column.steady_half = file_bytes(data);
        broker.through(payload, half);
        column.steady_all = file_bytes(data);
    }
    const std::string raw_data = scratch.fresh("raw-steady");
    Raw raw(raw_data);
    raw_through(raw, payload, half, window);
    column.raw_steady_half = file_bytes(raw_data);
    raw_through(raw, payload, half, window);
    column.raw_steady_all = file_bytes(raw_data);
    return column;
}

// A markdown row; a figure missing from a side leaves its cell, and the ratio, empty.
void row(const std::string& what, const char* format, std::optional<double> ours, std::optional<double> raw,
         const char* aim = "") {
    auto cell = [&](std::optional<double> value) {
        if (value) std::printf(format, *value);
        std::printf(" | ");
    };
    std::printf("| %s | ", what.c_str());
    cell(ours);
    cell(raw);
    if (ours && raw) std::printf("%.2f", *ours / *raw);
    std::printf(" | %s |\n", aim);
}

void print_table(std::size_t payload, const Column& c, const Sizes& sizes) {
    std::printf("\n**payload %zu B**\n\n| row | ours | raw | ratio | aim |\n|---|---:|---:|---:|---|\n", payload);
    const char* rate = "%.0f";
    const char* us = "%.1f";
    const char* x = "%.2f";
    row("(a) window 256, msg/s, in-process acks (default: ride the next commit)", rate, c.unwaited.per_second,
        c.raw_window.per_second, "≥ 0.8");
    row("(a) window 256, msg/s, acks_wait = true (opt-in: each waits for its commit)", rate, c.waited.per_second,
        c.raw_window.per_second);
    row("    raw one message per transaction, msg/s", rate, std::nullopt, c.raw_one.per_second);
    row("(a) window 256, msg/s, acks ride; raw with the broker's file shape (auto_vacuum INCREMENTAL, a checksum "
        "column)",
        rate, c.unwaited.per_second, c.raw_shaped.per_second);
    row("(b) one confirmed publish, p50 us (raw: one FULL commit)", us, c.publish.p50_us, c.raw_commit.p50_us, "≤ 1.2");
    row("(b) one confirmed publish, p99 us", us, c.publish.p99_us, c.raw_commit.p99_us);
    row("(c) window 256, write_bytes per payload byte, acks wait", x, c.waited.write_bytes, c.raw_window.write_bytes,
        "ours ≤ 3");
    row("(c) window 256, write_bytes per payload byte, acks ride", x, c.unwaited.write_bytes, c.raw_window.write_bytes,
        "ours ≤ 3");
    row("(c) window 256, wchar per payload byte, acks wait", x, c.waited.wchar, c.raw_window.wchar);
    row("(c) window 256, wchar per payload byte, acks ride", x, c.unwaited.wchar, c.raw_window.wchar);
    row("(d) in memory, window 256, msg/s (ratio: to raw)", rate, c.memory.per_second, c.raw_window.per_second);
    row("(d) durable (acks wait) / in memory, throughput", x, c.waited.per_second / c.memory.per_second, std::nullopt);
    row("(d) durable (acks ride) / in memory, throughput", x, c.unwaited.per_second / c.memory.per_second,
        std::nullopt);
    row("(d) in memory, one publish, p50 us", us, c.memory_publish.p50_us, std::nullopt);
    const std::string half = std::to_string(sizes.steady_messages / 2);
    const std::string all = std::to_string(sizes.steady_messages);
    row("(e) db + -wal bytes after " + half + " messages", rate, static_cast<double>(c.steady_half),
        static_cast<double>(c.raw_steady_half), "bounded");
    row("(e) db + -wal bytes after " + all + " messages", rate, static_cast<double>(c.steady_all),
        static_cast<double>(c.raw_steady_all), "bounded");
}

void record_rows(std::size_t payload, const Column& c) {
    const std::string size = ", " + std::to_string(payload) + " B";
    for (const bool acks_wait : {false, true})
        bench::record({.name = std::string("durable broker, window 256, ") +
                               (acks_wait ? "acks_wait = true (opt-in: acks wait for their commit)"
                                          : "in-process acks (default: ride the next commit)") +
                               size,
                       .ours = (acks_wait ? c.waited : c.unwaited).per_second,
                       .against = "raw sqlite3: 256 INSERTs, COMMIT, 256 DELETEs, COMMIT",
                       .underneath = c.raw_window.per_second,
                       .unit = "msg/s",
                       .aim = acks_wait ? std::nullopt : std::optional<double>(0.8),
                       .better = bench::Better::higher});
    bench::record({.name = "durable broker, window 256, in-process acks (default: ride the next commit)" + size,
                   .ours = c.unwaited.per_second,
                   .against = "raw sqlite3 with the broker's file shape (auto_vacuum = INCREMENTAL, a checksum column)",
                   .underneath = c.raw_shaped.per_second,
                   .unit = "msg/s",
                   .better = bench::Better::higher});
    bench::record({.name = "durable broker, one confirmed publish p50" + size,
                   .ours = c.publish.p50_us,
                   .against = "raw sqlite3: one BEGIN, INSERT, COMMIT (FULL)",
                   .underneath = c.raw_commit.p50_us,
                   .unit = "us",
                   .aim = 1.2});
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = bench::quick_from_environment();
    bool window_only = false;
    bool publish_only = false;
    std::vector<bool> acks_waits{true, false};
    std::vector<std::size_t> payloads{64, 1024};
    for (int i = 1; i < argc; ++i) {
        const std::string argument = argv[i];
        if (argument == "--quick") {
            quick = true;
        } else if (argument == "--window-only") {
            window_only = true;
        } else if (argument == "--publish-only") {
            publish_only = true;
        } else if (argument == "--acks" && i + 1 < argc &&
                   (argv[i + 1] == std::string("ride") || argv[i + 1] == std::string("wait"))) {
            acks_waits = {argv[++i] == std::string("wait")};
        } else if (argument == "--payload" && i + 1 < argc &&
                   (argv[i + 1] == std::string("64") || argv[i + 1] == std::string("1024"))) {
            payloads = {static_cast<std::size_t>(std::stoul(argv[++i]))};
        } else {
            std::fprintf(
                stderr,
                "usage: %s [--quick] [--window-only [--acks ride|wait] | --publish-only] [--payload 64|1024]   "
                "(or ACEMQ_BENCH_QUICK=1)\n",
                argv[0]);
            return 2;
        }
    }
    const Sizes& sizes = quick ? quick_sizes : full_sizes;
    try {
        Scratch scratch;
        std::printf(
            "SQLite %s; files in %s (%s); WAL, synchronous=FULL, locking_mode=EXCLUSIVE on both sides; %s: "
            "medians of %d runs of %d messages\n",
            sqlite3_libversion(), scratch.directory().c_str(), filesystem_of(scratch.directory()).c_str(),
            quick ? "quick" : "full", sizes.runs, sizes.window_messages);
        std::fflush(stdout);
        for (const std::size_t size : payloads) {
            const acemq::Bytes payload(size, std::byte{'x'});
            if (window_only) {
                for (const bool acks_wait : acks_waits) {
                    BrokerUnderTest broker(scratch.fresh("broker"), acks_wait);
                    const std::uint64_t commits_before = broker.broker().info().commits;
                    const Figures figures = median_figures(sizes.runs, sizes.window_messages, size,
                                                           [&] { broker.through(payload, sizes.window_messages); });
                    // Raw commits twice for every 256 messages: its inserts, then their deletes.
                    const double commits = static_cast<double>(broker.broker().info().commits - commits_before);
                    std::printf("payload %zu B: window 256, acks %s: %.0f msg/s, %.1f commits a 256 messages\n", size,
                                acks_wait ? "wait (acks_wait = true)" : "ride the next commit (default)",
                                figures.per_second, commits * 256 / (sizes.runs * sizes.window_messages));
                }
                for (const Shape shape : {Shape::plain, Shape::brokers}) {
                    Raw raw(scratch.fresh("raw"), shape);
                    const Figures figures = raw_window(raw, payload, sizes.window_messages, sizes.runs);
                    std::printf("payload %zu B: raw sqlite3%s: %.0f msg/s\n", size,
                                shape == Shape::brokers ? " with the broker's file shape" : "", figures.per_second);
                }
                continue;
            }
            if (publish_only) {
                Raw raw(scratch.fresh("raw"));
                BrokerUnderTest broker(scratch.fresh("broker"), false);
                const Commits commits =
                    commits_and_publishes(raw, broker, payload, sizes.single_publishes, sizes.warm_up);
                const Latency& commit = commits.raw;
                const Latency& publish = commits.broker;
                // The broker's own commits, BEGIN to COMMIT: the rest of a publish is what is not the commit.
                const acemq::BrokerInfo info = broker.broker().info();
                std::printf(
                    "payload %zu B: one confirmed publish p50 %.1f us, one FULL commit p50 %.1f us: %.2f; the "
                    "broker's own commits: mean %lld us\n",
                    size, publish.p50_us, commit.p50_us, publish.p50_us / commit.p50_us,
                    static_cast<long long>(info.commit_latency_mean.value_or(std::chrono::microseconds(0)).count()));
                continue;
            }
            const Column column = measure(scratch, payload, sizes);
            print_table(size, column, sizes);
            record_rows(size, column);
            std::fflush(stdout);
        }
    } catch (const std::exception& error) {
        std::fprintf(stderr, "durable_bench: %s\n", error.what());
        return 1;
    }
    return 0;
}
