// Suite `reliability`: envelope headers that arrive from RabbitMQ with the AMQP timestamp
// type ('T', epoch seconds), as another client may write them. The contract types
// x-acemq-attempt and x-acemq-version as integers and x-acemq-first-seen as epoch
// milliseconds: a timestamp is no count (the default applies), and as a first-seen it is
// the instant it names, in seconds. No broker: the table is laid out as rabbitmq-c reads it.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include "amqp/wire.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace {

constexpr std::uint64_t new_year_2020 = 1577836800;  // 2020-01-01T00:00:00Z in seconds

// Reads `entries` as the AMQP transport reads a delivery's headers, then as the engine
// reads an envelope.
acemq::Envelope envelope_from(std::vector<amqp_table_entry_t> entries) {
    const amqp_table_t table{static_cast<int>(entries.size()), entries.data()};
    return acemq::read_envelope(acemq::amqp::table_of(table), "orders", "m-1");
}

amqp_table_entry_t timestamp_entry(const char* name, std::uint64_t seconds) {
    amqp_table_entry_t entry{};
    entry.key = amqp_cstring_bytes(name);
    entry.value.kind = AMQP_FIELD_KIND_TIMESTAMP;
    entry.value.value.u64 = seconds;
    return entry;
}

}  // namespace

TEST_CASE("an attempt or version sent as an AMQP timestamp is not a count: the default applies") {
    const acemq::Envelope envelope = envelope_from(
        {timestamp_entry("x-acemq-attempt", new_year_2020), timestamp_entry("x-acemq-version", new_year_2020)});
    CHECK(envelope.attempt == 1);
    CHECK(envelope.version == 1);
}

TEST_CASE("a first-seen sent as an AMQP timestamp is read as the instant it names, in seconds") {
    const acemq::Envelope envelope = envelope_from({timestamp_entry("x-acemq-first-seen", new_year_2020)});
    REQUIRE(envelope.first_seen.has_value());
    CHECK(envelope.first_seen->time_since_epoch() == std::chrono::seconds(new_year_2020));
    // An age that makes sense: about the time since 2020, not since January 1970 + 18 days.
    const auto age = envelope.age(acemq::EpochMillis(std::chrono::seconds(new_year_2020 + 60)));
    REQUIRE(age.has_value());
    CHECK(*age == std::chrono::seconds(60));
}

TEST_CASE("a timestamp header keeps its type through the transport both ways") {
    const acemq::FieldTable sent{
        {"sent-at", acemq::FieldValue(acemq::FieldTimestamp(std::chrono::seconds(new_year_2020)))}};
    const acemq::amqp::TableView view(sent);
    REQUIRE(view.get().num_entries == 1);
    CHECK(view.get().entries[0].value.kind == AMQP_FIELD_KIND_TIMESTAMP);
    CHECK(view.get().entries[0].value.value.u64 == new_year_2020);
    CHECK(acemq::amqp::table_of(view.get()) == sent);
}
