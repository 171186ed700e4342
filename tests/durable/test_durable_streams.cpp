// Stream queues on the durable embedded broker: the log, each message's offset and when it
// was appended survive a restart, and retention takes the stored rows too, so that a
// restart never brings back what retention took and never renumbers what it kept.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <span>

#include <acemq/error.hpp>
#include "../inproc/inbox.hpp"
#include "../support/temp_dir.hpp"
#include "inproc/row_checksum.hpp"

using namespace acemq;
using namespace inproc_test;
using std::chrono::seconds;

namespace {

using Read = std::vector<std::pair<std::string, std::int64_t>>;

struct DurableStreams {
    testing_support::TempDir directory{"durable-streams"};
    std::string file = (directory.path() / "broker.db").string();
    std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();

    std::shared_ptr<inproc::Broker> open() {
        return inproc::broker(unique_name("durable-streams"), inproc::BrokerOptions{.clock = clock, .data = file});
    }

    // Moves the append time of the first `count` stored messages by `ms`, their checksums
    // rewritten to match, while no broker holds the file.
    void shift_appended(int count, std::int64_t ms) {
        sqlite3* db = nullptr;
        REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
        sqlite3_stmt* rows = nullptr;
        REQUIRE(sqlite3_prepare_v2(db,
                                   "SELECT id, queue, enqueued, properties, body FROM messages ORDER BY id LIMIT ?1",
                                   -1, &rows, nullptr) == SQLITE_OK);
        sqlite3_bind_int(rows, 1, count);
        std::vector<std::pair<std::int64_t, std::pair<std::int64_t, std::int64_t>>> updates;
        while (sqlite3_step(rows) == SQLITE_ROW) {
            auto blob = [&](int column) {
                return std::span<const std::byte>(static_cast<const std::byte*>(sqlite3_column_blob(rows, column)),
                                                  static_cast<std::size_t>(sqlite3_column_bytes(rows, column)));
            };
            const std::int64_t id = sqlite3_column_int64(rows, 0), enqueued = sqlite3_column_int64(rows, 2) + ms;
            updates.push_back({id,
                               {enqueued, inproc::detail::message_checksum(id, sqlite3_column_int64(rows, 1), enqueued,
                                                                           blob(3), blob(4))}});
        }
        sqlite3_finalize(rows);
        REQUIRE(updates.size() == static_cast<std::size_t>(count));
        for (const auto& [id, change] : updates) {
            const std::string sql = "UPDATE messages SET enqueued = " + std::to_string(change.first) +
                                    ", checksum = " + std::to_string(change.second) +
                                    " WHERE id = " + std::to_string(id);
            REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
        }
        sqlite3_close(db);
    }

    // The rows of the data file's `messages` table, read once no broker holds the file.
    int stored_rows() {
        sqlite3* db = nullptr;
        REQUIRE(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
        sqlite3_stmt* row = nullptr;
        REQUIRE(sqlite3_prepare_v2(db, "SELECT count(*) FROM messages", -1, &row, nullptr) == SQLITE_OK);
        REQUIRE(sqlite3_step(row) == SQLITE_ROW);
        const int count = sqlite3_column_int(row, 0);
        sqlite3_finalize(row);
        sqlite3_close(db);
        return count;
    }
};

void declare(inproc::Broker& broker, std::string name, StreamOptions options = {}) {
    const auto connection = broker.open_connection();
    broker.declare(connection, Topology{}.stream(name, options));
    broker.close_connection(connection);
}

void publish(inproc::Broker& broker, const std::string& stream, std::string_view body, bool persistent = true) {
    REQUIRE(broker.publish(OutboundMessage{.routing_key = stream, .body = bytes(body), .persistent = persistent})
                .confirmed);
}

// What a reader starting at `offset` gets now, each delivery acked.
Read read(inproc::Broker& broker, const std::string& stream, FieldValue offset) {
    const auto connection = broker.open_connection();
    Inbox inbox;
    ConsumeSpec spec = with_prefetch(1000);
    spec.arguments.emplace("x-stream-offset", std::move(offset));
    auto subscription = broker.consume(connection, stream, spec, inbox.deliver());
    Read got;
    while (auto delivery = inbox.take()) {
        const FieldValue& header = delivery->message().headers().at("x-stream-offset");
        REQUIRE(header.holds<std::int64_t>());
        got.emplace_back(text(delivery->message().body()), std::get<std::int64_t>(header.get()));
        CHECK_FALSE(delivery->message().redelivered());
        delivery->ack();
    }
    subscription->close();
    broker.close_connection(connection);
    return got;
}

}  // namespace

TEST_CASE("a durable stream's log, offsets and append times survive a restart; reads took nothing") {
    DurableStreams data;
    {
        auto broker = data.open();
        declare(*broker, "events");
        publish(*broker, "events", "a");
        publish(*broker, "events", "b", false);  // a stream keeps every message, persistent or not
        publish(*broker, "events", "c");
        CHECK(read(*broker, "events", FieldValue("first")) == Read{{"a", 0}, {"b", 1}, {"c", 2}});
    }
    // As if a and b had been appended 100 s earlier: what the next broker reads is the time
    // stored in the file (a ManualClock's advance is not wall-clock time, which the file keeps).
    data.shift_appended(2, -100'000);
    auto broker = data.open();
    CHECK(read(*broker, "events", FieldValue("first")) == Read{{"a", 0}, {"b", 1}, {"c", 2}});
    CHECK(read(*broker, "events", FieldValue(std::int64_t{1})) == Read{{"b", 1}, {"c", 2}});
    // The append times came back: only c was appended within the last 50 s.
    CHECK(read(*broker, "events", FieldValue("50s")) == Read{{"c", 2}});
    publish(*broker, "events", "d");
    CHECK(read(*broker, "events", FieldValue("last")) == Read{{"d", 3}});
}

TEST_CASE("a durable stream read and left unsettled at a crash-free close comes back unchanged, not redelivered") {
    DurableStreams data;
    {
        auto broker = data.open();
        declare(*broker, "events");
        publish(*broker, "events", "a");
        const auto connection = broker->open_connection();
        Inbox inbox;
        ConsumeSpec spec = with_prefetch(10);
        spec.arguments.emplace("x-stream-offset", FieldValue("first"));
        auto subscription = broker->consume(connection, "events", spec, inbox.deliver());
        REQUIRE(inbox.size() == 1);
        auto held = inbox.take();
        subscription.reset();
        broker->close_connection(connection);
    }
    auto broker = data.open();
    CHECK(read(*broker, "events", FieldValue("first")) == Read{{"a", 0}});
}

TEST_CASE("retention takes a durable stream's stored rows, and a restart keeps the offsets of what is left") {
    DurableStreams data;
    {
        auto broker = data.open();
        declare(*broker, "by-bytes", StreamOptions{.max_length_bytes = 10});
        declare(*broker, "by-age", StreamOptions{.max_age = seconds(60)});
        for (const char* body : {"aaaa", "bbbb", "cccc", "dddd", "eeee"}) publish(*broker, "by-bytes", body);
        publish(*broker, "by-age", "old");
        data.clock->advance(seconds(61));
        publish(*broker, "by-age", "new");
        CHECK(read(*broker, "by-bytes", FieldValue("first")) == Read{{"dddd", 3}, {"eeee", 4}});
        CHECK(read(*broker, "by-age", FieldValue("first")) == Read{{"new", 1}});
    }
    CHECK(data.stored_rows() == 3);
    auto broker = data.open();
    CHECK(read(*broker, "by-bytes", FieldValue("first")) == Read{{"dddd", 3}, {"eeee", 4}});
    CHECK(read(*broker, "by-age", FieldValue("first")) == Read{{"new", 1}});
    publish(*broker, "by-bytes", "ffff");
    CHECK(read(*broker, "by-bytes", FieldValue("first")) == Read{{"eeee", 4}, {"ffff", 5}});
    broker.reset();
    broker = data.open();
    CHECK(read(*broker, "by-bytes", FieldValue("first")) == Read{{"eeee", 4}, {"ffff", 5}});
}

TEST_CASE("deleting a durable stream deletes where it starts: a stream of the same name starts at 0 again") {
    DurableStreams data;
    {
        auto broker = data.open();
        declare(*broker, "events", StreamOptions{.max_length_bytes = 1});
        for (const char* body : {"a", "b", "c"}) publish(*broker, "events", body);
        const auto connection = broker->open_connection();
        broker->delete_queue(connection, "events");
        broker->close_connection(connection);
        declare(*broker, "events");
        publish(*broker, "events", "again");
    }
    auto broker = data.open();
    CHECK(read(*broker, "events", FieldValue("first")) == Read{{"again", 0}});
}

TEST_CASE("salvage copies where a durable stream starts, so the copy keeps its offsets") {
    DurableStreams data;
    {
        auto broker = data.open();
        declare(*broker, "events", StreamOptions{.max_length_bytes = 10});
        for (const char* body : {"aaaa", "bbbb", "cccc", "dddd", "eeee"}) publish(*broker, "events", body);
    }
    const std::string copy = (data.directory.path() / "salvaged.db").string();
    const inproc::SalvageReport report = inproc::salvage(data.file, copy);
    CHECK(report.lost.empty());
    CHECK(report.messages == 2);
    data.file = copy;
    auto broker = data.open();
    CHECK(read(*broker, "events", FieldValue("first")) == Read{{"dddd", 3}, {"eeee", 4}});
}
