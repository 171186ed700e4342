// The library's log records: the default sink's text line (RFC 3339 UTC to the millisecond,
// level, component, message) and its JSON line (one object a line, read back with the
// library's own JSON codec), record and line sinks in one slot, and the zmq broker's session
// lines carrying the peer, the client and the reason; the durable broker's commits refused
// and resumed, once each a streak.
#include <catch2/catch.hpp>

#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include <acemq/acemq.hpp>
#include <acemq/zmq.hpp>
#include "../support/temp_dir.hpp"
#include "../support/wait.hpp"
#include "../zmq/broker_process.hpp"
#include "full_data_file.hpp"

using namespace std::chrono_literals;

namespace {

// Every record the library logs while it lives, copied.
class RecordedLog {
public:
    struct Entry {
        acemq::LogLevel level;
        std::string component, message;
        std::vector<std::pair<std::string, std::string>> fields;
        std::string field(std::string_view name) const {
            for (const auto& [key, value] : fields)
                if (key == name) return value;
            return "(none)";
        }
    };
    RecordedLog()
        : previous_(acemq::set_log_record_sink([this](const acemq::LogRecord& record) {
              Entry entry{record.level, std::string(record.component), std::string(record.message), {}};
              for (const acemq::LogField& field : record.fields) entry.fields.emplace_back(field.name, field.value);
              std::lock_guard guard(lock_);
              entries_.push_back(std::move(entry));
          })) {}
    ~RecordedLog() { acemq::set_log_record_sink(std::move(previous_)); }
    std::vector<Entry> entries() const {
        std::lock_guard guard(lock_);
        return entries_;
    }
    std::optional<Entry> find(std::string_view event) const {
        for (const Entry& entry : entries())
            if (entry.field("event") == event) return entry;
        return std::nullopt;
    }

private:
    mutable std::mutex lock_;
    std::vector<Entry> entries_;
    acemq::LogRecordSink previous_;  // last: the sink it installs uses the members above
};

acemq::LogRecord record_at(std::chrono::system_clock::time_point when, std::span<const acemq::LogField> fields) {
    return acemq::LogRecord{when, acemq::LogLevel::warning, "zmq-broker", "refused a frame \"x\"", fields};
}

}  // namespace

TEST_CASE("a text line is an RFC 3339 UTC time to the millisecond, the level, the component and the message") {
    const auto when = std::chrono::sys_days{std::chrono::year{2026} / 12 / 5} + 13h + 40min + 1s + 123456us;
    const std::string line = acemq::format_log_record(record_at(when, {}), acemq::LogFormat::text);
    CHECK(line == "2026-12-05T13:40:01.123Z warning zmq-broker: refused a frame \"x\"");
    const std::string now = acemq::format_log_record(
        acemq::LogRecord{std::chrono::system_clock::now(), acemq::LogLevel::info, "", "hello", {}},
        acemq::LogFormat::text);
    CHECK(std::regex_match(now, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info acemq: hello)")));
}

TEST_CASE("a JSON line is one object with time, level, component, message and the fields, cut to 256 bytes") {
    const std::string long_name(1000, 'n');
    const acemq::LogField fields[] = {
        {"peer", "127.0.0.1:5000"}, {"client", long_name}, {"reason", "a \"quoted\"\nline"}};
    const auto when = std::chrono::sys_days{std::chrono::year{2026} / 12 / 5} + 13h + 40min + 1s + 7ms;
    const std::string line = acemq::format_log_record(record_at(when, fields), acemq::LogFormat::json);
    CHECK(line.find('\n') == std::string::npos);
    const acemq::Value parsed = acemq::JsonCodec().decode(std::as_bytes(std::span(line)), "application/json");
    CHECK(parsed.find("time")->as_string() == "2026-12-05T13:40:01.007Z");
    CHECK(parsed.find("level")->as_string() == "warning");
    CHECK(parsed.find("component")->as_string() == "zmq-broker");
    CHECK(parsed.find("message")->as_string() == "refused a frame \"x\"");
    CHECK(parsed.find("peer")->as_string() == "127.0.0.1:5000");
    CHECK(parsed.find("client")->as_string() == std::string(256, 'n'));
    CHECK(parsed.find("reason")->as_string() == "a \"quoted\"\nline");
}

TEST_CASE("record and line sinks share one slot, and each comes back as it was given") {
    std::vector<std::string> lines;
    acemq::LogSink original =
        acemq::set_log_sink([&](acemq::LogLevel, std::string_view line) { lines.emplace_back(line); });
    acemq::log(acemq::LogLevel::warning, "outbox", "as a line");
    {
        RecordedLog recorded;
        acemq::log(acemq::LogLevel::warning, "outbox", "as a record", {{"id", "7"}});
        acemq::log(acemq::LogLevel::info, "from an application");
        const auto entries = recorded.entries();
        REQUIRE(entries.size() == 2);
        CHECK(entries[0].component == "outbox");
        CHECK(entries[0].field("id") == "7");
        CHECK(entries[1].component == "app");
    }
    acemq::log(acemq::LogLevel::warning, "outbox", "a line again");
    CHECK(lines == std::vector<std::string>{"as a line", "a line again"});
    acemq::set_log_sink(std::move(original));
}

TEST_CASE("the zmq broker logs a session's opening and closing with the peer, the client and the reason") {
    RecordedLog recorded;
    zmq_test::ThreadBroker broker("tcp://127.0.0.1:0");
    auto transport = acemq::zmq::open(broker.url(), {.session = {.name = "billing@edge"}});
    REQUIRE(testing_support::eventually([&] { return recorded.find("session-opened").has_value(); }));
    const auto opened = *recorded.find("session-opened");
    CHECK(opened.level == acemq::LogLevel::info);
    CHECK(opened.component == "zmq-broker");
    CHECK(opened.field("client") == "billing@edge");
    CHECK_THAT(opened.field("peer"), Catch::Contains("127.0.0.1"));
    CHECK_THAT(opened.message, Catch::Contains("billing@edge") && Catch::Contains(opened.field("peer")));

    transport->close();
    REQUIRE(testing_support::eventually([&] { return recorded.find("session-closed").has_value(); }));
    const auto closed = *recorded.find("session-closed");
    CHECK(closed.field("peer") == opened.field("peer"));
    CHECK(closed.field("client") == "billing@edge");
    CHECK(closed.field("reason") == "it said goodbye");
    CHECK_THAT(closed.message, Catch::Contains("it said goodbye"));
}

TEST_CASE("a data file that refuses commits is logged once for the streak, and once when it writes again") {
    RecordedLog recorded;
    testing_support::TempDir directory;
    const std::string file = (directory.path() / "broker.db").string();
    const std::string name = "log-format-full-" + acemq::new_uuid().substr(0, 8);
    auto broker = acemq::inproc::broker(name, {.data = file, .max_data_bytes = 256 * 1024});
    auto transport = acemq::open_transport("inproc://" + name + "?data=" + file);
    transport->declare(acemq::Topology{}.queue("q"));
    full_data_file::fill_and_check_down(*transport, file, 1s);
    for (int i = 0; i < 3; ++i)
        CHECK_FALSE(transport->publish({.routing_key = "q", .body = full_data_file::body}).confirmed);
    full_data_file::ack_some(*transport);
    REQUIRE(transport->publish({.routing_key = "q", .body = full_data_file::body}).confirmed);
    std::vector<RecordedLog::Entry> refused, resumed;
    for (const auto& entry : recorded.entries()) {
        if (entry.field("event") == "commits-refused") refused.push_back(entry);
        if (entry.field("event") == "commits-resumed") resumed.push_back(entry);
    }
    REQUIRE(refused.size() == 1);
    CHECK(refused[0].level == acemq::LogLevel::error);
    CHECK(refused[0].component == "durable-broker");
    CHECK_THAT(refused[0].field("reason"), Catch::Contains("disk full"));
    CHECK(resumed.size() == 1);
}
