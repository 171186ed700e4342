// Bit rot in a durable broker's data file: a small file (two queues, an exchange, bindings,
// ten persistent messages, one of them spilling onto overflow pages), closed cleanly, then
// each of its bytes altered in turn (one bit, a different one from byte to byte) and the
// file cut short at each page boundary, and opened each time. Every outcome must be one of:
// opened with every message intact; opened with the damaged messages quarantined and the
// rest intact; refused with an error that names the file and what to do. Never a message
// delivered altered, never an intact message lost. The counts of each outcome are printed.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <acemq/inproc.hpp>
#include <acemq/log.hpp>
#include "../inproc/inbox.hpp"
#include "../support/queues.hpp"
#include "../support/rounds.hpp"
#include "../support/temp_dir.hpp"

using namespace acemq;
using namespace inproc_test;

namespace {

constexpr std::size_t page_size = 4096;  // SQLite's default, which the broker keeps

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string payload(int n) {
    char head[32];
    std::snprintf(head, sizeof head, "PAYLOAD-%03d-", n);
    std::string body = head;
    const std::size_t size = n == 7 ? 3 * page_size : 120;  // 7 overflows its page
    while (body.size() < size) body += "abcdefghijklmnopqrstuvwxyz";
    return body;
}

struct Expected {
    std::string queue;
    InboundMessage message;
};

bool same(const InboundMessage& delivered, const InboundMessage& stored) {
    return std::ranges::equal(delivered.body(), stored.body()) && delivered.headers() == stored.headers() &&
           delivered.content_type() == stored.content_type() && delivered.exchange() == stored.exchange() &&
           delivered.routing_key() == stored.routing_key() && delivered.message_id() == stored.message_id();
}

// The messages a clean close left in `path`, by message id.
std::map<std::string, Expected> make_file(const std::string& path) {
    std::map<std::string, Expected> expected;
    auto broker = inproc::broker(unique_name("bit-rot-source"), inproc::BrokerOptions{.data = path});
    const auto connection = broker->open_connection();
    broker->declare_exchange(ExchangeDeclaration{
        .name = "orders", .kind = ExchangeKind::direct, .durable = true, .auto_delete = false, .arguments = {}});
    for (const char* queue : {"a", "b"}) {
        broker->declare_queue(connection, testing_support::durable_queue(queue));
        broker->bind(connection,
                     BindingDeclaration{.queue = queue, .exchange = "orders", .routing_key = queue, .arguments = {}});
    }
    for (int n = 0; n < 10; ++n) {
        const std::string queue = n % 2 == 0 ? "a" : "b";
        OutboundMessage message{.exchange = "orders",
                                .routing_key = queue,
                                .body = bytes(payload(n)),
                                .content_type = "text/plain",
                                .message_id = "m-" + std::to_string(n),
                                .headers = {{"x-n", FieldValue(std::int64_t{n})}},
                                .persistent = true};
        REQUIRE(broker->publish(message).confirmed);
        expected.emplace(message.message_id,
                         Expected{queue, InboundMessage(InboundParts{.body = message.body,
                                                                     .content_type = message.content_type,
                                                                     .exchange = message.exchange,
                                                                     .routing_key = message.routing_key,
                                                                     .message_id = message.message_id,
                                                                     .reply_to = {},
                                                                     .headers = message.headers.table()})});
    }
    broker->close_connection(connection);
    return expected;
}

enum class Outcome { intact, quarantined, refused };

struct Verdict {
    Outcome outcome = Outcome::intact;
    std::vector<std::string> altered;  // message ids delivered with other content
    std::size_t lost = 0;              // missing and not accounted for by the quarantine
    std::string refusal;
};

Verdict open_and_read(const std::string& path, const std::map<std::string, Expected>& expected) {
    Verdict verdict;
    std::shared_ptr<inproc::Broker> broker;
    try {
        broker = inproc::broker(unique_name("bit-rot"), inproc::BrokerOptions{.data = path});
    } catch (const Error& error) {
        verdict.outcome = Outcome::refused;
        verdict.refusal = error.what();
        return verdict;
    }
    std::set<std::string> delivered;
    const auto connection = broker->open_connection();
    std::vector<Delivery> held;  // handed back when the connection closes
    for (const char* queue : {"a", "b"}) {
        while (auto delivery = broker->pull(connection, queue)) {
            const InboundMessage& message = delivery->message();
            const auto found = expected.find(std::string(message.message_id()));
            if (found == expected.end() || found->second.queue != queue || !same(message, found->second.message))
                verdict.altered.push_back(std::string(message.message_id()));
            else
                delivered.insert(std::string(message.message_id()));
            held.push_back(std::move(*delivery));
        }
    }
    broker->close_connection(connection);
    const std::uint64_t quarantined = broker->quarantined_messages();
    broker.reset();
    const std::size_t missing = expected.size() - delivered.size() - verdict.altered.size();
    if (missing > quarantined) verdict.lost = missing - quarantined;
    verdict.outcome = quarantined > 0 ? Outcome::quarantined : Outcome::intact;
    return verdict;
}

}  // namespace

TEST_CASE(
    "bit rot: every byte of a data file altered in turn, and the file cut at each page, never delivers an altered "
    "message nor loses an intact one") {
    testing_support::TempDir directory("bit-rot");
    const std::string source = (directory.path() / "source.db").string();
    const std::string trial = (directory.path() / "trial.db").string();
    const std::map<std::string, Expected> expected = make_file(source);
    REQUIRE(!std::filesystem::exists(source + "-wal"));  // the clean close left everything in the file
    const std::string pristine = read_file(source);
    REQUIRE(pristine.size() % page_size == 0);
    REQUIRE(pristine.size() >= 6 * page_size);

    // The damaged opens log what they find; the drill counts outcomes instead.
    const LogSink previous = set_log_sink([](LogLevel, std::string_view) {});
    std::map<Outcome, std::size_t> counts;
    std::vector<std::string> failures;
    auto trial_of = [&](const std::string& bytes, const std::string& what) {
        std::filesystem::remove(trial + "-wal");
        write_file(trial, bytes);
        const Verdict verdict = open_and_read(trial, expected);
        ++counts[verdict.outcome];
        if (!verdict.altered.empty()) failures.push_back(what + ": delivered altered: " + verdict.altered.front());
        if (verdict.lost > 0)
            failures.push_back(what + ": " + std::to_string(verdict.lost) + " intact message(s) lost");
        if (verdict.outcome == Outcome::refused && (verdict.refusal.find(trial) == std::string::npos ||
                                                    verdict.refusal.find("estore it from a copy") == std::string::npos))
            failures.push_back(what + ": refused without naming the file and what to do: " + verdict.refusal);
    };
    REQUIRE_NOTHROW(trial_of(pristine, "the file as written"));
    REQUIRE(counts[Outcome::intact] == 1);
    counts.clear();

    // Every byte, or ACEMQ_BIT_FLIPS of them spread over the whole file (the sanitizer builds).
    const auto flips_asked =
        static_cast<std::size_t>(testing_support::rounds_from("ACEMQ_BIT_FLIPS", static_cast<int>(pristine.size())));
    const std::size_t stride = std::max<std::size_t>(pristine.size() / flips_asked, 1);
    for (std::size_t offset = 0; offset < pristine.size(); offset += stride) {
        std::string bytes = pristine;
        bytes[offset] = static_cast<char>(bytes[offset] ^ (1 << (offset % 8)));
        trial_of(bytes, "bit " + std::to_string(offset % 8) + " of byte " + std::to_string(offset));
    }
    const std::size_t flips = counts[Outcome::intact] + counts[Outcome::quarantined] + counts[Outcome::refused];
    std::printf(
        "bit rot: %zu bytes altered one at a time: %zu opened intact, %zu opened with the damaged quarantined, "
        "%zu refused\n",
        flips, counts[Outcome::intact], counts[Outcome::quarantined], counts[Outcome::refused]);
    counts.clear();
    // From one page on: a file cut to nothing is an empty file, which the broker takes for a new
    // one, as it must for a file a user made with `touch`.
    for (std::size_t pages = 1; pages < pristine.size() / page_size; ++pages)
        trial_of(pristine.substr(0, pages * page_size), "cut to " + std::to_string(pages) + " page(s)");
    std::printf(
        "bit rot: the file cut at each of its %zu page boundaries: %zu opened intact, %zu opened with the "
        "damaged quarantined, %zu refused\n",
        pristine.size() / page_size - 1, counts[Outcome::intact], counts[Outcome::quarantined],
        counts[Outcome::refused]);
    set_log_sink(previous);

    std::string told;
    for (std::size_t i = 0; i < failures.size() && i < 20; ++i) told += "\n  " + failures[i];
    if (failures.size() > 20) told += "\n  and " + std::to_string(failures.size() - 20) + " more";
    INFO("failures:" << told);
    CHECK(failures.empty());
    CHECK(flips == (pristine.size() + stride - 1) / stride);
}

namespace {

// The ids of the messages in `queue` of the data file `path`, opened by a broker.
std::vector<std::string> ids_in(const std::string& path, const char* queue) {
    auto broker = inproc::broker(unique_name("salvaged"), inproc::BrokerOptions{.data = path});
    const auto connection = broker->open_connection();
    std::vector<std::string> ids;
    std::vector<Delivery> held;
    while (auto delivery = broker->pull(connection, queue)) {
        ids.push_back(std::string(delivery->message().message_id()));
        held.push_back(std::move(*delivery));
    }
    broker->close_connection(connection);
    return ids;
}

void run_sql(const std::string& path, const char* sql) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
}

}  // namespace

TEST_CASE("acemq-broker --salvage copies what passes its checksum from a file the broker refuses, and names the rest") {
    testing_support::TempDir directory("salvage");
    const std::string damaged = (directory.path() / "damaged.db").string();
    const std::string saved = (directory.path() / "saved.db").string();
    make_file(damaged);
    // Queue b's declaration and one message of a damaged on the disk, as bit rot would.
    run_sql(damaged,
            "UPDATE queues SET checksum = checksum + 1 WHERE name = 'b';"
            "UPDATE messages SET checksum = checksum + 1 WHERE id = (SELECT min(id) FROM messages);");
    const std::string before = read_file(damaged);
    try {
        inproc::broker(unique_name("refuses"), inproc::BrokerOptions{.data = damaged});
        FAIL("the damaged file was opened");
    } catch (const inproc::DataFileError& error) {
        CHECK_THAT(error.what(), Catch::Contains("queue \"b\"") && Catch::Contains("--salvage FILE NEWFILE"));
    }

    const std::string out = (directory.path() / "salvage.out").string();
    const int status = std::system(
        (std::string(ACEMQ_BROKER_PROGRAM) + " --salvage '" + damaged + "' '" + saved + "' > '" + out + "' 2>&1")
            .c_str());
    const std::string said = read_file(out);
    INFO(said);
    CHECK(WEXITSTATUS(status) == 1);  // not everything was saved
    CHECK_THAT(said, Catch::Contains("1 queue(s)") && Catch::Contains("4 message(s)") &&
                         Catch::Contains("not saved: queue \"b\" fails its checksum") &&
                         Catch::Contains("fails its checksum") &&
                         Catch::Contains("its queue's declaration was not saved"));
    CHECK(read_file(damaged) == before);  // read through a copy, never changed
    // m-0 was the damaged message; the others of queue a are there, in order.
    CHECK(ids_in(saved, "a") == std::vector<std::string>{"m-2", "m-4", "m-6", "m-8"});

    // A second salvage into the same file is refused: it writes only new files.
    CHECK(WEXITSTATUS(std::system(
              (std::string(ACEMQ_BROKER_PROGRAM) + " --salvage '" + damaged + "' '" + saved + "' > /dev/null 2>&1")
                  .c_str())) == 1);
}

TEST_CASE("salvage reads a messages table past a damaged page, from both ends") {
    testing_support::TempDir directory("salvage-page");
    const std::string damaged = (directory.path() / "damaged.db").string();
    const std::string saved = (directory.path() / "saved.db").string();
    {
        auto broker = inproc::broker(unique_name("many"), inproc::BrokerOptions{.data = damaged});
        const auto connection = broker->open_connection();
        broker->declare_queue(connection, testing_support::durable_queue("a"));
        broker->close_connection(connection);
        for (int n = 0; n < 300; ++n)
            REQUIRE(broker
                        ->publish(OutboundMessage{.routing_key = "a",
                                                  .body = bytes(std::string(400, 'x')),
                                                  .message_id = "m-" + std::to_string(n),
                                                  .persistent = true})
                        .confirmed);
    }
    // One leaf page of the messages table, in the middle of the file, overwritten.
    std::string bytes = read_file(damaged);
    const std::size_t page = bytes.size() / page_size / 2;
    REQUIRE(page > 2);
    for (std::size_t i = page * page_size; i < (page + 1) * page_size; ++i) bytes[i] = static_cast<char>(0xA5);
    write_file(damaged, bytes);
    REQUIRE_THROWS_AS(inproc::broker(unique_name("refuses"), inproc::BrokerOptions{.data = damaged}),
                      inproc::DataFileError);

    const inproc::SalvageReport report = inproc::salvage(damaged, saved);
    std::string lost;
    for (const std::string& sentence : report.lost) lost += sentence + "\n";
    INFO(lost);
    CHECK(report.queues == 1);
    CHECK(report.messages > 250);  // one page holds about nine of them
    CHECK(report.messages < 300);
    CHECK_THAT(lost, Catch::Contains("in a damaged stretch of the table"));
    const std::vector<std::string> ids = ids_in(saved, "a");
    CHECK(ids.size() == report.messages);
    CHECK(ids.front() == "m-0");
    CHECK(ids.back() == "m-299");  // read from the other end
}
