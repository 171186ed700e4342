// The durable embedded broker, one behaviour at a time: what a restart brings back and what
// it does not, redelivered flags, TTL and dead letters across a restart, the files it
// refuses (and leaves untouched), a full disk, and what a ConfirmFn may do. The crash drills
// (kill -9) and the simulated power cuts are tests of their own.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <acemq/error.hpp>
#include <acemq/log.hpp>
#include <acemq/naming.hpp>
#include "../inproc/inbox.hpp"
#include "../support/temp_dir.hpp"
#include "../support/wait.hpp"

using namespace acemq;
using namespace inproc_test;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// One data file, and a broker on it that a test closes and opens again as a restart would.
struct Restartable {
    testing_support::TempDir directory{"durable"};
    std::string file = (directory.path() / "broker.db").string();
    std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();

    std::shared_ptr<inproc::Broker> open() {
        return inproc::broker(unique_name("durable"), inproc::BrokerOptions{.clock = clock, .data = file});
    }
};

OutboundMessage persistent(std::string queue, std::string_view body) {
    return OutboundMessage{.routing_key = std::move(queue), .body = bytes(body), .persistent = true};
}

std::vector<std::string> bodies(const std::vector<InboundMessage>& messages) {
    std::vector<std::string> out;
    for (const InboundMessage& message : messages) out.push_back(text(message.body()));
    return out;
}

std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void declare_queue(inproc::Broker& broker, std::string name, FieldTable arguments = {}, bool durable = true) {
    const auto connection = broker.open_connection();
    broker.declare_queue(connection, QueueDeclaration{.name = std::move(name),
                                                      .type = QueueType::classic,
                                                      .durable = durable,
                                                      .exclusive = false,
                                                      .auto_delete = false,
                                                      .arguments = std::move(arguments)});
    broker.close_connection(connection);
}

}  // namespace

TEST_CASE("a restart brings back durable queues and persistent messages, in order, and nothing else") {
    Restartable data;
    {
        auto broker = data.open();
        declare_queue(*broker, "orders");
        declare_queue(*broker, "scratch", {}, false);
        for (int i = 1; i <= 5; ++i)
            REQUIRE(broker->publish(persistent("orders", "order " + std::to_string(i))).confirmed);
        REQUIRE(
            broker->publish(OutboundMessage{.routing_key = "orders", .body = bytes("transient"), .persistent = false})
                .confirmed);
        REQUIRE(broker->publish(persistent("scratch", "in a transient queue")).confirmed);
        CHECK(broker->queue_depth(broker->open_connection(), "orders") == 6);
    }
    auto broker = data.open();
    const auto connection = broker->open_connection();
    CHECK(broker->queue_exists(connection, "orders"));
    CHECK_FALSE(broker->queue_exists(connection, "scratch"));
    CHECK(bodies(pull_all(*broker, "orders")) ==
          std::vector<std::string>{"order 1", "order 2", "order 3", "order 4", "order 5"});
}

TEST_CASE("after a clean close only what was handed out comes back redelivered, and acked messages never") {
    Restartable data;
    {
        auto broker = data.open();
        declare_queue(*broker, "jobs");
        for (const char* body : {"acked", "handed out", "never touched"})
            REQUIRE(broker->publish(persistent("jobs", body)).confirmed);
        const auto connection = broker->open_connection();
        auto acked = broker->pull(connection, "jobs");
        REQUIRE(acked);
        acked->ack();
        auto held = broker->pull(connection, "jobs");
        REQUIRE(held);
        CHECK(text(held->message().body()) == "handed out");
        // Still unsettled when the broker's last owner lets go: a clean close marks it.
    }
    auto broker = data.open();
    const std::vector<InboundMessage> back = pull_all(*broker, "jobs");
    REQUIRE(bodies(back) == std::vector<std::string>{"handed out", "never touched"});
    CHECK(back[0].redelivered());
    CHECK_FALSE(back[1].redelivered());
}

TEST_CASE("exchanges, bindings and properties come back as they were declared and published") {
    Restartable data;
    const Headers headers{{"tenant", FieldValue("acme")}, {"attempt", FieldValue(std::int64_t{3})}};
    {
        auto broker = data.open();
        const auto connection = broker->open_connection();
        broker->declare(connection, Topology{}
                                        .exchange("events", ExchangeKind::topic)
                                        .queue("audit", classic())
                                        .bind("audit", "events", "order.*"));
        REQUIRE(broker
                    ->publish(OutboundMessage{.exchange = "events",
                                              .routing_key = "order.paid",
                                              .body = bytes("paid"),
                                              .content_type = "application/json",
                                              .message_id = "m-1",
                                              .headers = headers,
                                              .reply_to = "replies"})
                    .confirmed);
    }
    auto broker = data.open();
    const std::vector<InboundMessage> back = pull_all(*broker, "audit");
    REQUIRE(back.size() == 1);
    CHECK(back[0].exchange() == "events");
    CHECK(back[0].routing_key() == "order.paid");
    CHECK(back[0].content_type() == "application/json");
    CHECK(back[0].message_id() == "m-1");
    CHECK(back[0].reply_to() == "replies");
    CHECK(back[0].headers() == headers);
    // The binding came back: routing still reaches the queue.
    REQUIRE(broker->publish(OutboundMessage{.exchange = "events", .routing_key = "order.sent", .body = bytes("sent")})
                .confirmed);
    CHECK(broker->queue_depth(broker->open_connection(), "audit") == 2);
}

TEST_CASE("a message on a TTL rung keeps its age across a restart and dead-letters into a durable queue") {
    Restartable data;
    const FieldTable rung{{std::string(argument::message_ttl), FieldValue(std::int32_t{500})},
                          {std::string(argument::dead_letter_exchange), FieldValue("")},
                          {std::string(argument::dead_letter_routing_key), FieldValue("home")}};
    {
        auto broker = inproc::broker(unique_name("ttl"), inproc::BrokerOptions{.data = data.file});
        declare_queue(*broker, "home");
        declare_queue(*broker, "rung", rung);
        REQUIRE(broker->publish(persistent("rung", "retry me")).confirmed);
    }
    // The rung's 500 ms run out while no broker is up. Ages cross a restart as wall-clock
    // time, so the broker opened now, on a ManualClock that never moves, finds the message
    // due at once; had the restart started its TTL again, it would wait for the clock forever.
    std::this_thread::sleep_for(milliseconds(600));
    auto broker = data.open();
    for (int i = 0; i < 500 && broker->queue_depth(broker->open_connection(), "home") == 0; ++i)
        std::this_thread::sleep_for(milliseconds(10));  // the move is committed on the writer thread
    REQUIRE(broker->queue_depth(broker->open_connection(), "home") == 1);
    CHECK(broker->queue_depth(broker->open_connection(), "rung") == 0);
    broker.reset();
    broker = data.open();
    const std::vector<InboundMessage> home = pull_all(*broker, "home");
    REQUIRE(home.size() == 1);
    CHECK(text(home[0].body()) == "retry me");
    CHECK(home[0].headers().contains("x-death"));
    CHECK(broker->queue_depth(broker->open_connection(), "rung") == 0);
}

TEST_CASE("a rejected message dead-letters into a durable queue and stays there, once") {
    Restartable data;
    {
        auto broker = data.open();
        declare_queue(*broker, "orders.dlq");
        declare_queue(*broker, "orders",
                      {{std::string(argument::dead_letter_exchange), FieldValue("")},
                       {std::string(argument::dead_letter_routing_key), FieldValue("orders.dlq")}});
        REQUIRE(broker->publish(persistent("orders", "poison")).confirmed);
        const auto connection = broker->open_connection();
        auto delivery = broker->pull(connection, "orders");
        REQUIRE(delivery);
        delivery->reject();
    }
    auto broker = data.open();
    CHECK(bodies(pull_all(*broker, "orders.dlq")) == std::vector<std::string>{"poison"});
    CHECK(broker->queue_depth(broker->open_connection(), "orders") == 0);
}

TEST_CASE("a deleted queue stays deleted, with its messages") {
    Restartable data;
    {
        auto broker = data.open();
        declare_queue(*broker, "gone");
        REQUIRE(broker->publish(persistent("gone", "x")).confirmed);
        broker->delete_queue(broker->open_connection(), "gone");
        declare_queue(*broker, "gone");  // a new queue of the same name starts empty
    }
    auto broker = data.open();
    CHECK(broker->queue_exists(broker->open_connection(), "gone"));
    CHECK(broker->queue_depth(broker->open_connection(), "gone") == 0);
}

TEST_CASE("a publish with a ConfirmFn is confirmed after its commit, and must not wait there") {
    Restartable data;
    auto broker = data.open();
    declare_queue(*broker, "q");
    std::mutex mutex;
    std::condition_variable called;
    std::optional<PublishResult> result;
    std::string waited_inside;
    broker->publish(persistent("q", "async"), [&](PublishResult confirmed) {
        try {
            broker->publish(persistent("q", "nested"));
        } catch (const UsageError& error) {
            waited_inside = error.what();
        }
        std::lock_guard guard(mutex);
        result = std::move(confirmed);
        called.notify_all();
    });
    std::unique_lock lock(mutex);
    REQUIRE(called.wait_for(lock, seconds(10), [&] { return result.has_value(); }));
    CHECK(result->confirmed);
    CHECK_THAT(waited_inside, Catch::Contains("ConfirmFn") && Catch::Contains("writer thread"));
}

TEST_CASE("a data file another broker holds is refused") {
    Restartable data;
    auto first = data.open();
    CHECK_THROWS_AS(data.open(), inproc::DataFileError);
    CHECK_THROWS_WITH(data.open(), Catch::Contains("another broker holds it") && Catch::Contains(data.file));
    CHECK_THROWS_AS(inproc::broker(first->name(), inproc::BrokerOptions{.data = data.file + ".other"}),
                    InvalidArgument);
    CHECK_THROWS_WITH(inproc::broker(first->name(), inproc::BrokerOptions{.data = data.file + ".other"}),
                      Catch::Contains("already exists with data file"));
}

TEST_CASE("a file that is not a broker's, or is corrupt, is refused and left untouched") {
    Restartable data;
    SECTION("not SQLite") { std::ofstream(data.file) << "these are someone's notes, not a database\n"; }
    SECTION("another program's SQLite database") {
        sqlite3* db = nullptr;
        REQUIRE(sqlite3_open(data.file.c_str(), &db) == SQLITE_OK);
        REQUIRE(sqlite3_exec(db, "CREATE TABLE invoices(id INTEGER PRIMARY KEY); INSERT INTO invoices VALUES(7);",
                             nullptr, nullptr, nullptr) == SQLITE_OK);
        sqlite3_close(db);
    }
    SECTION("a broker's file, corrupted") {
        {
            auto broker = data.open();
            declare_queue(*broker, "q");
            for (int i = 0; i < 200; ++i) REQUIRE(broker->publish(persistent("q", std::string(500, 'x'))).confirmed);
        }
        std::string bytes = file_bytes(data.file);
        REQUIRE(bytes.size() > 3 * 4096);
        for (std::size_t i = 4096 + 100; i < 3 * 4096; ++i) bytes[i] = static_cast<char>(0xA5);
        std::ofstream(data.file, std::ios::binary | std::ios::trunc) << bytes;
    }
    const std::string before = file_bytes(data.file);
    try {
        data.open();
        FAIL("the file was accepted");
    } catch (const inproc::DataFileError& error) {
        const std::string what = error.what();
        INFO(what);
        CHECK((what.find("not an SQLite database") != std::string::npos ||
               what.find("another program's SQLite database") != std::string::npos ||
               what.find("corrupt") != std::string::npos));
        CHECK_THAT(what, Catch::Contains(data.file) && Catch::Contains("left untouched"));
    }
    CHECK(file_bytes(data.file) == before);
}

TEST_CASE("a full data file refuses persistent publishes, loses nothing confirmed, and recovers when space returns") {
    Restartable data;
    auto broker =
        inproc::broker(unique_name("full"),
                       inproc::BrokerOptions{.clock = data.clock, .data = data.file, .max_data_bytes = 256 * 1024});
    declare_queue(*broker, "q");
    const std::string body(4000, 'p');
    int confirmed = 0;
    std::optional<PublishResult> refusal;
    for (int i = 0; i < 200 && !refusal; ++i) {
        PublishResult result = broker->publish(persistent("q", body));
        if (result.confirmed)
            ++confirmed;
        else
            refusal = result;
    }
    REQUIRE(refusal);
    CHECK(refusal->why == PublishResult::Unconfirmed::refused);
    CHECK_THAT(refusal->return_reason, Catch::Contains("disk full") && Catch::Contains("max_data_bytes"));
    CHECK(confirmed > 10);
    // The refused message is not in the queue: nothing of it was delivered.
    CHECK(broker->queue_depth(broker->open_connection(), "q") == static_cast<std::uint64_t>(confirmed));
    // Non-persistent messages still go through: they need no room on disk.
    CHECK(broker->publish(OutboundMessage{.routing_key = "q", .body = bytes("light"), .persistent = false}).confirmed);

    // Acking frees rows; then publishes are taken again.
    const auto connection = broker->open_connection();
    for (int i = 0; i < confirmed / 2; ++i) {
        auto delivery = broker->pull(connection, "q");
        REQUIRE(delivery);
        delivery->ack();
    }
    CHECK(broker->publish(persistent("q", body)).confirmed);
    broker->close_connection(connection);
    const auto kept = broker->queue_depth(broker->open_connection(), "q");
    broker.reset();
    broker = data.open();
    // Everything confirmed and not acked is there after a restart (the transient one is not).
    CHECK(broker->queue_depth(broker->open_connection(), "q") == kept - 1);
}

TEST_CASE("a stored body changed on the disk is quarantined, never delivered, and the other messages are delivered") {
    Restartable data;
    {
        auto broker = data.open();
        declare_queue(*broker, "payments");
        for (int i = 0; i < 10; ++i)
            REQUIRE(
                broker->publish(persistent("payments", "PAYLOAD-00" + std::to_string(i) + "-abcdefghij")).confirmed);
    }
    std::string stored = file_bytes(data.file);
    const std::size_t at = stored.find("PAYLOAD-005-abc");
    REQUIRE(at != std::string::npos);
    stored[at + 12] = 'X';  // PAYLOAD-005-Xbc...: bit rot, a stray write
    std::ofstream(data.file, std::ios::binary | std::ios::trunc) << stored;

    std::vector<std::string> logged;
    const LogSink previous = set_log_sink([&](LogLevel level, std::string_view line) {
        if (level == LogLevel::error) logged.emplace_back(line);
    });
    auto broker = data.open();
    set_log_sink(previous);
    CHECK(bodies(pull_all(*broker, "payments")) ==
          std::vector<std::string>{"PAYLOAD-000-abcdefghij", "PAYLOAD-001-abcdefghij", "PAYLOAD-002-abcdefghij",
                                   "PAYLOAD-003-abcdefghij", "PAYLOAD-004-abcdefghij", "PAYLOAD-006-abcdefghij",
                                   "PAYLOAD-007-abcdefghij", "PAYLOAD-008-abcdefghij", "PAYLOAD-009-abcdefghij"});
    CHECK(broker->quarantined_messages() == 1);
    REQUIRE(logged.size() == 1);
    CHECK_THAT(logged.front(), Catch::Contains("1 stored message(s)") && Catch::Contains(data.file) &&
                                   Catch::Contains("checksum") && Catch::Contains("quarantine"));

    // Quarantined once: the next open finds nothing new to set aside, and still counts it.
    broker.reset();
    logged.clear();
    set_log_sink([&](LogLevel level, std::string_view line) {
        if (level == LogLevel::error) logged.emplace_back(line);
    });
    broker = data.open();
    set_log_sink(previous);
    CHECK(logged.empty());
    CHECK(broker->quarantined_messages() == 1);
    CHECK(pull_all(*broker, "payments").size() == 9);
    broker.reset();

    // The damaged row is kept as it was found, with the reason, for the operator.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open_v2(data.file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
    sqlite3_stmt* row = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "SELECT body, reason FROM quarantine", -1, &row, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(row) == SQLITE_ROW);
    CHECK(std::string(static_cast<const char*>(sqlite3_column_blob(row, 0)),
                      static_cast<std::size_t>(sqlite3_column_bytes(row, 0))) == "PAYLOAD-005-Xbcdefghij");
    CHECK_THAT(reinterpret_cast<const char*>(sqlite3_column_text(row, 1)), Catch::Contains("checksum"));
    sqlite3_finalize(row);
    sqlite3_close(db);
}

TEST_CASE("a data file of schema version 1 opens, keeps its messages, and gains checksums") {
    Restartable data;
    {
        auto broker = data.open();
        declare_queue(*broker, "orders");
        for (int i = 1; i <= 3; ++i)
            REQUIRE(broker->publish(persistent("orders", "order " + std::to_string(i))).confirmed);
    }
    // Back to what a version-1 broker wrote: no checksums, no quarantine.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(data.file.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db,
                         "ALTER TABLE exchanges DROP COLUMN checksum; ALTER TABLE queues DROP COLUMN checksum; "
                         "ALTER TABLE bindings DROP COLUMN checksum; ALTER TABLE messages DROP COLUMN checksum; "
                         "DROP TABLE quarantine; DROP TABLE stream_starts; PRAGMA user_version = 1;",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);

    {
        auto broker = data.open();
        CHECK(bodies(pull_all(*broker, "orders")) == std::vector<std::string>{"order 1", "order 2", "order 3"});
        REQUIRE(broker->publish(persistent("orders", "order 4")).confirmed);
    }
    REQUIRE(sqlite3_open_v2(data.file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
    sqlite3_stmt* row = nullptr;
    REQUIRE(sqlite3_prepare_v2(db,
                               "SELECT count(*), count(checksum), (SELECT user_version FROM pragma_user_version) "
                               "FROM messages",
                               -1, &row, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(row) == SQLITE_ROW);
    CHECK(sqlite3_column_int(row, 0) == 4);
    CHECK(sqlite3_column_int(row, 1) == 1);  // the rows version 1 wrote stay unchecked; new ones carry one
    CHECK(sqlite3_column_int(row, 2) == 3);  // and the later versions' steps (3: streams)
    sqlite3_finalize(row);
    sqlite3_close(db);
}

TEST_CASE("the data file gives back the space of acked messages once the broker is idle, and stays open to a restart") {
    Restartable data;
    auto on_disk = [&] {
        std::error_code none;
        const auto wal = std::filesystem::file_size(data.file + "-wal", none);
        return std::filesystem::file_size(data.file) + (none ? 0 : wal);
    };
    auto broker = data.open();
    declare_queue(*broker, "big");
    REQUIRE(broker->publish(persistent("big", std::string(8 * 1024 * 1024, 'b'))).confirmed);
    REQUIRE(broker->publish(persistent("big", "small, stays")).confirmed);
    CHECK(on_disk() > 8u * 1024 * 1024);
    const auto connection = broker->open_connection();
    auto delivery = broker->pull(connection, "big");
    REQUIRE(delivery);
    delivery->ack();
    // Idle now: the writer gives the freed pages back and empties the WAL.
    CHECK(testing_support::eventually([&] { return on_disk() < 256u * 1024; }));
    broker->close_connection(connection);
    broker.reset();
    broker = data.open();
    CHECK(bodies(pull_all(*broker, "big")) == std::vector<std::string>{"small, stays"});
}

TEST_CASE("a data file made without auto_vacuum is rewritten once at open so that it gives space back") {
    Restartable data;
    sqlite3* db = nullptr;
    {
        auto broker = data.open();
        declare_queue(*broker, "q");
        REQUIRE(broker->publish(persistent("q", "kept")).confirmed);
    }
    REQUIRE(sqlite3_open(data.file.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "PRAGMA auto_vacuum = NONE; VACUUM", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    auto auto_vacuum = [&] {
        REQUIRE(sqlite3_open_v2(data.file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
        sqlite3_stmt* row = nullptr;
        REQUIRE(sqlite3_prepare_v2(db, "PRAGMA auto_vacuum", -1, &row, nullptr) == SQLITE_OK);
        REQUIRE(sqlite3_step(row) == SQLITE_ROW);
        const int mode = sqlite3_column_int(row, 0);
        sqlite3_finalize(row);
        sqlite3_close(db);
        return mode;
    };
    REQUIRE(auto_vacuum() == 0);
    {
        auto broker = data.open();
        CHECK(bodies(pull_all(*broker, "q")) == std::vector<std::string>{"kept"});
    }
    CHECK(auto_vacuum() == 2);  // incremental
}
