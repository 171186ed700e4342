#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <acemq/envelope.hpp>
#include <acemq/error.hpp>
#include <acemq/transport.hpp>
#include <acemq/uuid.hpp>
#include "../support/fixtures.hpp"

using namespace acemq;

namespace {

bool is_uuid_v4(const std::string& id) {
    return is_canonical_uuid(id) && id[14] == '4' && std::string("89ab").find(id[19]) != std::string::npos;
}

Headers minimal_headers() { return Headers{{"x-acemq-id", FieldValue("id-1")}, {"x-acemq-type", FieldValue("t")}}; }

}  // namespace

TEST_CASE("every envelope fixture case reads and writes back unchanged") {
    const auto document = fixtures::load("envelope-fixtures.json");
    const auto& cases = document.at("cases").as_array();
    REQUIRE(cases.size() == 3);
    for (const auto& fixture_case : cases) {
        const std::string name = fixtures::text(fixture_case.at("case"));
        SECTION(name) {
            const Headers wire = fixtures::table(fixture_case.at("headers").as_object());
            const Envelope envelope = read_envelope(wire, fixtures::text(fixture_case.at("routingKey")),
                                                    fixtures::text(fixture_case.at("messageId")));
            CHECK(envelope.id == fixtures::text(fixture_case.at("messageId")));
            // A delivered message's packed headers read the same.
            const InboundMessage delivered(InboundParts{.routing_key = fixtures::text(fixture_case.at("routingKey")),
                                                        .message_id = fixtures::text(fixture_case.at("messageId")),
                                                        .headers = wire});
            CHECK(read_envelope(delivered) == envelope);
            const Headers written = render_headers(envelope);

            // Nothing gained, lost or renamed.
            std::set<std::string> expected_names, written_names;
            for (const auto& [header, value] : wire) expected_names.insert(header.str());
            for (const auto& [header, value] : written) written_names.insert(header.str());
            CHECK(written_names == expected_names);

            // Nothing changed in value, and the family's integer widths.
            for (const auto& [header, value] : wire) {
                INFO(header);
                const FieldValue& out = written.at(header);
                if (value.holds<std::string>()) {
                    CHECK(out.holds<std::string>());
                    CHECK(out.as_text() == value.as_text());
                } else {
                    CHECK(out.as_integer() == value.as_integer());
                }
                if (header == "x-acemq-version" || header == "x-acemq-attempt") CHECK(out.holds<std::int32_t>());
                if (header == "x-acemq-first-seen") CHECK(out.holds<std::int64_t>());
            }
        }
    }
}

TEST_CASE("the populated and replayed fixtures land on the right envelope fields") {
    const auto document = fixtures::load("envelope-fixtures.json");
    const auto& cases = document.at("cases").as_array();

    const auto& populated = cases.at(1);
    REQUIRE(fixtures::text(populated.at("case")) == "populated");
    Envelope rich = read_envelope(fixtures::table(populated.at("headers").as_object()), "fx.rich",
                                  "11111111-2222-3333-4444-555555555555");
    CHECK(rich.id == "11111111-2222-3333-4444-555555555555");
    CHECK(rich.type == "order.placed");
    CHECK(rich.version == 3);
    CHECK(rich.attempt == 1);
    CHECK(rich.causation == "cause-1");
    CHECK(rich.correlation == "corr-1");
    CHECK(rich.origin == "orders@host-7");
    REQUIRE(rich.first_seen.has_value());
    // Epoch milliseconds, not seconds: 1767323045678 ms is 2026-01-02.
    CHECK(rich.first_seen->time_since_epoch().count() == 1767323045678);
    CHECK(std::chrono::floor<std::chrono::days>(*rich.first_seen) ==
          std::chrono::sys_days{std::chrono::year{2026} / 1 / 2});
    CHECK(rich.headers == Headers{{"x-tenant", FieldValue("acme")}});

    const auto& replayed = cases.at(2);
    REQUIRE(fixtures::text(replayed.at("case")) == "replayed");
    Envelope again = read_envelope(fixtures::table(replayed.at("headers").as_object()), "fx.replayed");
    CHECK(again.headers.size() == 3);
    CHECK(again.headers.at(std::string(header::replayed_from)).as_text() == "orders.new.dlq");
    CHECK(again.headers.at(std::string(header::replay_count)).as_integer() == 2);
    CHECK(again.headers.at(std::string(header::replayed_at)).as_integer() == 1770091506789);
    CHECK(again.causation.empty());
    CHECK_FALSE(render_headers(again).contains("x-acemq-causation"));
}

TEST_CASE("a new message's envelope") {
    const EpochMillis before = epoch_millis_now();
    Envelope envelope = Envelope::for_new_message("order.placed", "orders@pod-1");
    const EpochMillis after = epoch_millis_now();
    CHECK(is_uuid_v4(envelope.id));
    CHECK(envelope.correlation == envelope.id);
    CHECK(envelope.type == "order.placed");
    CHECK(envelope.version == 1);
    CHECK(envelope.attempt == 1);
    CHECK(envelope.origin == "orders@pod-1");
    REQUIRE(envelope.first_seen.has_value());
    CHECK(*envelope.first_seen >= before);
    CHECK(*envelope.first_seen <= after);

    SECTION("an empty routing key (a fanout publish) is typed \"message\"") {
        CHECK(Envelope::for_new_message("").type == "message");
    }
    SECTION("absent is absent: empty optional fields are not written") {
        Headers wire = render_headers(envelope);
        CHECK(wire.size() == 7);
        for (const char* absent : {"x-acemq-causation", "x-acemq-error", "x-acemq-claim", "x-acemq-route",
                                   "x-acemq-route-position", "x-acemq-route-id"})
            CHECK_FALSE(wire.contains(absent));
        envelope.origin.clear();
        CHECK_FALSE(render_headers(envelope).contains("x-acemq-origin"));
    }
    SECTION("every optional field is written when set") {
        envelope.causation = "c-1";
        envelope.error = "the handler rejected it: std::runtime_error: no";
        envelope.claim = "claims/abc";
        envelope.route = {"validate", "charge"};
        envelope.route_position = 1;
        envelope.route_id = "r-1";
        set_header(envelope, "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
        Headers wire = render_headers(envelope);
        CHECK(wire.at("x-acemq-route").as_text() == "validate,charge");
        CHECK(wire.at("x-acemq-route-position").holds<std::int32_t>());
        Envelope back = read_envelope(wire, "ignored");
        CHECK(back == envelope);
        CHECK(back.traceparent() == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
        CHECK_FALSE(back.tracestate().has_value());
    }
}

TEST_CASE("reserved header names are refused as application headers") {
    Envelope envelope = Envelope::for_new_message("k");
    try {
        set_header(envelope, "x-acemq-id", "mine");
        FAIL("set_header accepted a reserved name");
    } catch (const ReservedHeaderError& refused) {
        CHECK(std::string(refused.what()) ==
              "acemq: header \"x-acemq-id\" is in the reserved \"x-acemq-\" namespace and would be dropped on "
              "consume; use a namespace of your own, such as x-yourcompany-");
    }
    CHECK_THROWS_AS(set_header(envelope, "x-acemq-newer-feature", 1), ReservedHeaderError);
    envelope.headers.emplace("x-acemq-sneaked-in", FieldValue("x"));
    CHECK_THROWS_AS(render_headers(envelope), ReservedHeaderError);
    // The shared "acemq-" namespace is not reserved.
    Envelope other = Envelope::for_new_message("k");
    set_header(other, "acemq-replay-count", std::int64_t{1});
    CHECK(render_headers(other).contains("acemq-replay-count"));
}

TEST_CASE("application headers are written among the reserved ones in name order, each once") {
    Envelope envelope = Envelope::for_new_message("k", "svc@host");
    envelope.causation = "cause-1";
    envelope.route = {"a", "b"};
    for (const char* name : {"zz-last", "x-b-after-reserved", "traceparent", "aa-first", "x-acemq"})
        set_header(envelope, name, std::string(name) + "-value");
    const Headers rendered = render_headers(envelope);
    CHECK(std::is_sorted(rendered.begin(), rendered.end(),
                         [](const auto& left, const auto& right) { return left.first < right.first; }));
    CHECK(rendered.size() == envelope.headers.size() + 10);  // 10 reserved: no claim, error or route id
    for (const auto& [name, value] : envelope.headers) CHECK(rendered.at(name) == value);
    CHECK(rendered.at("x-acemq-id") == FieldValue(envelope.id));
    CHECK(rendered.at("x-acemq-route") == FieldValue("a,b"));
    CHECK(rendered.at("x-acemq-first-seen") ==
          FieldValue(static_cast<std::int64_t>(envelope.first_seen->time_since_epoch().count())));
    // Read back, every reserved header finds its field again and no other header is lost.
    const Envelope read = read_envelope(rendered, "k");
    CHECK(read == envelope);
}

TEST_CASE("a table built in name order refuses a name out of order and keeps what it had") {
    FieldTable table;
    table.emplace_back("a", std::int32_t{1});
    table.emplace_back("b", std::string("text"));
    table.append("c", FieldValue(true));
    CHECK(table == FieldTable{{"a", FieldValue(std::int32_t{1})}, {"b", FieldValue("text")}, {"c", FieldValue(true)}});
    try {
        table.emplace_back("b", std::int32_t{2});
        FAIL("emplace_back accepted a name out of order");
    } catch (const UsageError& refused) {
        CHECK_THAT(refused.what(), Catch::Contains("\"b\" after \"c\""));
    }
    CHECK_THROWS_AS(table.append("c", FieldValue(false)), UsageError);  // a repeat is out of order too
    CHECK(table.size() == 3);
    CHECK(table.at("c") == FieldValue(true));
}

TEST_CASE("envelopes that must not be sent are refused with the reason") {
    Envelope envelope = Envelope::for_new_message("k");
    SECTION("version below 1") {
        envelope.version = 0;
        CHECK_THROWS_WITH(render_headers(envelope), Catch::Contains("version 0 is below 1"));
    }
    SECTION("attempt below 1") {
        envelope.attempt = -3;
        CHECK_THROWS_WITH(render_headers(envelope), Catch::Contains("attempt -3 is below 1"));
    }
    SECTION("empty id") {
        envelope.id.clear();
        CHECK_THROWS_AS(render_headers(envelope), InvalidArgument);
    }
    SECTION("route steps") {
        envelope.route = {"a,b"};
        CHECK_THROWS_WITH(render_headers(envelope), Catch::Contains("\"a,b\""));
        envelope.route = {"  "};
        CHECK_THROWS_AS(render_headers(envelope), InvalidArgument);
        envelope.route = {"a"};
        envelope.route_position = -1;
        CHECK_THROWS_AS(render_headers(envelope), InvalidArgument);
    }
    SECTION("a reserved name among the application headers") {
        envelope.headers.emplace("x-acemq-sneaked-in", FieldValue("x"));
        CHECK_THROWS_AS(render_headers(envelope), ReservedHeaderError);
        CHECK_THROWS_AS(check_sendable(envelope), ReservedHeaderError);
    }
    // check_sendable refuses what render_headers refuses, and passes what it renders.
    bool renders = true;
    try {
        render_headers(envelope);
    } catch (const Error&) {
        renders = false;
    }
    if (renders)
        CHECK_NOTHROW(check_sendable(envelope));
    else
        CHECK_THROWS_AS(check_sendable(envelope), Error);
}

TEST_CASE("added headers are rendered in their place, each replacing an application header of its name") {
    Envelope envelope = Envelope::for_new_message("k", "svc@host");
    set_header(envelope, "aa-first", FieldValue("app"));
    set_header(envelope, "traceparent", FieldValue("the application's"));
    set_header(envelope, "zz-last", FieldValue("app"));
    const Headers added{{"a-added", FieldValue("added")},
                        {"traceparent", FieldValue("the tracer's")},
                        {"tracestate", FieldValue("k=v")},
                        {"zzz-added", FieldValue("added")}};
    const Headers rendered = render_headers(envelope, added);
    CHECK(std::is_sorted(rendered.begin(), rendered.end(),
                         [](const auto& left, const auto& right) { return left.first < right.first; }));
    CHECK(rendered.size() == render_headers(envelope).size() + 3);  // traceparent replaced, not added
    for (const auto& [name, value] : added) CHECK(rendered.at(name) == value);
    CHECK(rendered.at("aa-first") == FieldValue("app"));
    CHECK(rendered.at("zz-last") == FieldValue("app"));
    CHECK(rendered.at("x-acemq-id") == FieldValue(envelope.id));
    // Read back, the added ones are application headers like any other.
    const Envelope read = read_envelope(rendered, "k");
    CHECK(read.headers.size() == 6);
    CHECK(read.id == envelope.id);

    CHECK(render_headers(envelope, Headers{}) == render_headers(envelope));
    CHECK_THROWS_AS(render_headers(envelope, Headers{{"x-acemq-id", FieldValue("mine")}}), ReservedHeaderError);
}

TEST_CASE("reading is tolerant of every representation another client may hand back") {
    SECTION("integers of any width, whole doubles, decimal strings and byte strings") {
        for (const FieldValue& two :
             {FieldValue(std::int32_t{2}), FieldValue(std::int64_t{2}), FieldValue(std::uint64_t{2}), FieldValue(2.0),
              FieldValue("2"), FieldValue(Bytes{std::byte{'2'}})}) {
            Headers headers = minimal_headers();
            headers["x-acemq-attempt"] = two;
            headers["x-acemq-version"] = two;
            Envelope envelope = read_envelope(headers, "k");
            CHECK(envelope.attempt == 2);
            CHECK(envelope.version == 2);
        }
    }
    SECTION("unreadable, zero, negative or oversized counters read as 1") {
        for (const FieldValue& odd :
             {FieldValue("soon"), FieldValue(std::int32_t{0}), FieldValue(std::int64_t{-4}),
              FieldValue(std::int64_t{1} << 40), FieldValue(2.5), FieldValue(true), FieldValue(FieldArray{}),
              FieldValue(std::uint64_t{UINT64_MAX}), FieldValue("")}) {
            Headers headers = minimal_headers();
            headers["x-acemq-attempt"] = odd;
            CHECK(read_envelope(headers, "k").attempt == 1);
        }
    }
    SECTION("strings may arrive as byte arrays") {
        Headers headers = minimal_headers();
        const std::string origin = "billing@host-2";
        Bytes bytes;
        for (char c : origin) bytes.push_back(static_cast<std::byte>(c));
        headers["x-acemq-origin"] = bytes;
        CHECK(read_envelope(headers, "k").origin == origin);
    }
    SECTION("an id falls back to the message-id property, then to a fresh UUID") {
        CHECK(read_envelope({}, "k", "from-property").id == "from-property");
        Envelope fresh = read_envelope({}, "k");
        CHECK(is_uuid_v4(fresh.id));
        CHECK(fresh.correlation == fresh.id);
    }
    SECTION("type falls back to the routing key, correlation to the id") {
        Headers headers{{"x-acemq-id", FieldValue("abc")}, {"x-acemq-type", FieldValue("")}};
        Envelope envelope = read_envelope(headers, "orders.new");
        CHECK(envelope.type == "orders.new");
        CHECK(envelope.correlation == "abc");
    }
    SECTION("first-seen: integer, decimal string, absent and zero") {
        Headers headers = minimal_headers();
        headers["x-acemq-first-seen"] = FieldValue("1767323045678");
        CHECK(read_envelope(headers, "k").first_seen->time_since_epoch().count() == 1767323045678);
        headers["x-acemq-first-seen"] = FieldValue(std::int64_t{0});
        CHECK_FALSE(read_envelope(headers, "k").first_seen.has_value());
        headers.erase("x-acemq-first-seen");
        Envelope unknown = read_envelope(headers, "k");
        CHECK_FALSE(unknown.first_seen.has_value());
        CHECK_FALSE(unknown.age(epoch_millis_now()).has_value());
    }
    SECTION("age is measured from first-seen") {
        Envelope envelope = Envelope::for_new_message("k");
        envelope.first_seen = EpochMillis(std::chrono::milliseconds(1000));
        CHECK(envelope.age(EpochMillis(std::chrono::milliseconds(121000))) == std::chrono::milliseconds(120000));
    }
    SECTION("a first-seen in the future (the sender's clock runs ahead) is an age of zero, not a negative one") {
        Envelope envelope = Envelope::for_new_message("k");
        envelope.first_seen = EpochMillis(std::chrono::milliseconds(1'000'000'000'000));
        CHECK(envelope.age(EpochMillis(std::chrono::milliseconds(684'640'000'805))) == std::chrono::milliseconds(0));
        envelope.first_seen = epoch_millis_now() + std::chrono::hours(24 * 3650);
        CHECK(envelope.age(epoch_millis_now()) == std::chrono::milliseconds(0));
    }
    SECTION("unknown x-acemq-* names are dropped, everything else reaches the handler") {
        Headers headers = minimal_headers();
        headers["x-acemq-from-the-future"] = FieldValue("v9");
        headers["x-death"] = FieldValue(FieldArray{FieldValue(FieldTable{{"count", FieldValue(std::int64_t{1})}})});
        headers["traceparent"] = FieldValue("00-abc-def-01");
        headers["acemq-replayed-from"] = FieldValue("q.dlq");
        Envelope envelope = read_envelope(headers, "k");
        CHECK(envelope.headers.size() == 3);
        CHECK_FALSE(envelope.headers.contains("x-acemq-from-the-future"));
        CHECK(envelope.headers.contains("x-death"));
        CHECK(envelope.traceparent() == "00-abc-def-01");
        CHECK_NOTHROW(render_headers(envelope));
    }
    SECTION("route: split on commas, blanks dropped, position read") {
        Headers headers = minimal_headers();
        headers["x-acemq-route"] = FieldValue(" a , ,b,");
        headers["x-acemq-route-position"] = FieldValue("1");
        Envelope envelope = read_envelope(headers, "k");
        CHECK(envelope.route == std::vector<std::string>{"a", "b"});
        CHECK(envelope.route_position == 1);
    }
}

TEST_CASE("ids are canonical UUID v4 and unique") {
    std::set<std::string> seen;
    for (int i = 0; i < 20000; ++i) {
        std::string id = new_uuid();
        REQUIRE(is_uuid_v4(id));
        REQUIRE(seen.insert(id).second);
    }
    CHECK_FALSE(is_canonical_uuid("F67AFF08-6293-4CE2-AF9E-1B8797FB8451"));
    CHECK_FALSE(is_canonical_uuid("f67aff08629343e2af9e1b8797fb8451"));
    CHECK(is_canonical_uuid("f67aff08-6293-4ce2-af9e-1b8797fb8451"));
}

TEST_CASE("ids drawn on several threads at once are all distinct") {
    std::set<std::string> seen;
    std::mutex seen_lock;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            std::vector<std::string> mine;
            for (int i = 0; i < 5000; ++i) mine.push_back(new_uuid());
            std::lock_guard lock(seen_lock);
            seen.insert(mine.begin(), mine.end());
        });
    }
    for (std::thread& thread : threads) thread.join();
    CHECK(seen.size() == 20000);
}

TEST_CASE("a forked child never repeats the parent's ids") {
    (void)new_uuid();  // the parent's random block is now partly spent
    int pipe_ends[2];
    REQUIRE(pipe(pipe_ends) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        std::string id = new_uuid();
        ssize_t written = write(pipe_ends[1], id.data(), id.size());
        _exit(written == static_cast<ssize_t>(id.size()) ? 0 : 1);
    }
    close(pipe_ends[1]);
    std::string child_id(36, '\0');
    ssize_t got = read(pipe_ends[0], child_id.data(), child_id.size());
    close(pipe_ends[0]);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(got == 36);
    CHECK(child_id != new_uuid());
}

TEST_CASE("a field name reads, copies, moves and orders as the string it was made from") {
    // Every length around the 15 bytes held inline, each with a NUL and a high byte in it.
    std::vector<std::string> texts;
    for (std::size_t length = 0; length <= 40; ++length) {
        std::string text;
        for (std::size_t i = 0; i < length; ++i) text.push_back(static_cast<char>("z\0\xff"[i % 3] + (i / 3) % 7));
        texts.push_back(text);
    }
    std::vector<FieldName> names(texts.begin(), texts.end());
    CHECK(FieldName(std::string_view()).empty());  // a null pointer with no bytes, as a wire reader may give
    for (std::size_t i = 0; i < texts.size(); ++i) {
        CHECK(names[i].view() == texts[i]);
        const FieldName copy = names[i];
        CHECK(copy == texts[i]);
        FieldName moved = FieldName(texts[i]);
        FieldName assigned("something else entirely, longer than fifteen bytes");
        assigned = moved;
        CHECK(assigned == texts[i]);
        FieldName taken = std::move(moved);
        CHECK(taken == texts[i]);
    }
    std::vector<std::string> sorted_texts = texts;
    std::sort(sorted_texts.begin(), sorted_texts.end());
    std::sort(names.begin(), names.end());
    CHECK(std::equal(names.begin(), names.end(), sorted_texts.begin(), sorted_texts.end(),
                     [](const FieldName& name, const std::string& text) { return name == text; }));
}

TEST_CASE("a short name or one of the contract's costs no heap copy; another long name does") {
    const FieldName short_name("x-acemq-id");
    const auto* inside = reinterpret_cast<const char*>(&short_name);
    CHECK((short_name.data() >= inside && short_name.data() < inside + sizeof(FieldName)));
    for (const std::string_view contract :
         {header::correlation, header::first_seen, header::causation, header::route_position, header::route_id,
          header::replay_count, std::string_view("x-first-death-queue"), std::string_view("x-dead-letter-exchange")}) {
        const FieldName name{std::string(contract)};  // from a copy: the name is found, not the pointer kept
        const FieldName copy = name;
        CHECK(name == contract);
        CHECK(copy.data() == name.data());  // both point at the library's constant
    }
    const FieldName own("x-application-specific-header");
    const FieldName copy = own;
    CHECK(copy == own);
    CHECK(copy.data() != own.data());
    CHECK(sizeof(FieldName) == 16);
}

namespace {

// One header of every kind a table holds, nested ones too, with texts equal to the message's
// id at the top and inside.
Headers every_kind_of_header(const std::string& id) {
    return Headers{
        {"a-void", FieldValue()},
        {"bool-false", FieldValue(false)},
        {"bool-true", FieldValue(true)},
        {"bytes", FieldValue(Bytes{std::byte{0}, std::byte{0xff}, std::byte{0x80}})},
        {"bytes-empty", FieldValue(Bytes{})},  // no bytes at all: a null data pointer
        {"double", FieldValue(-0.5)},
        {"empty-text", FieldValue("")},
        {"int32", FieldValue(std::int32_t{-7})},
        {"int64", FieldValue(std::int64_t{1} << 40)},
        {"list", FieldValue(FieldArray{FieldValue(id), FieldValue(std::int32_t{1}),
                                       FieldValue(FieldTable{{"inner", FieldValue(id)}})})},
        {"table", FieldValue(FieldTable{{"deep", FieldValue(FieldTable{{"deeper", FieldValue("x")}})}})},
        {"timestamp", FieldValue(FieldTimestamp(std::chrono::seconds(1'700'000'000)))},
        {"uint64", FieldValue(std::numeric_limits<std::uint64_t>::max())},
        {std::string(300, 'n'), FieldValue(std::string(200, 'v'))},
        {"x-acemq-correlation", FieldValue(id)},
        {"x-acemq-id", FieldValue(id)},
    };
}

InboundMessage delivered_with(Headers headers, std::string id) {
    return InboundMessage(
        InboundParts{.routing_key = "rk", .message_id = std::move(id), .headers = std::move(headers)});
}

}  // namespace

TEST_CASE("a delivered message's packed headers read back as the table they were made from") {
    const std::string id = "0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f";
    const Headers headers = every_kind_of_header(id);
    const InboundMessage message = delivered_with(headers, id);
    const PackedHeaders packed = message.headers();

    CHECK(packed.size() == headers.size());
    CHECK(packed.table() == headers);
    CHECK(packed == headers);
    CHECK(packed == delivered_with(headers, id).headers());
    CHECK_FALSE(packed == delivered_with(Headers{{"a-void", FieldValue()}}, id).headers());
    CHECK(packed.has_nested_values());
    CHECK(std::move(message).parts().headers == headers);

    // In name order, each once.
    std::vector<std::string> names;
    for (const auto& [name, value] : packed) names.push_back(name.str());
    CHECK(std::ranges::is_sorted(names));
    CHECK(names.size() == headers.size());

    // Looked up by name, present or not.
    for (const auto& [name, value] : headers) {
        INFO(name);
        REQUIRE(packed.contains(name));
        CHECK(packed.find(name)->second == value);
        CHECK(packed.at(name) == value);
    }
    for (const std::string_view absent : {"", "a", "bool-maybe", "zzz", "x-acemq-type"}) {
        INFO(absent);
        CHECK_FALSE(packed.contains(absent));
        CHECK(packed.find(absent) == packed.end());
    }
    CHECK_THROWS_WITH(packed.at("x-acemq-type"), Catch::Contains("no header named \"x-acemq-type\""));

    // The integer widths are kept.
    CHECK(packed.at("int32").holds<std::int32_t>());
    CHECK(packed.at("int64").holds<std::int64_t>());
    CHECK(packed.at("uint64").holds<std::uint64_t>());
    CHECK(packed.at("timestamp").holds<FieldTimestamp>());
}

TEST_CASE("packed headers hold a text equal to the message's id once, and nothing for an empty table") {
    const std::string id = "0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f";
    const std::string other = "1c8e0b63-6b4d-4e66-8a5f-7b2d3c4e5f60";
    const Headers same{{"x-acemq-correlation", FieldValue(id)}, {"x-acemq-id", FieldValue(id)}};
    const Headers different{{"x-acemq-correlation", FieldValue(other)}, {"x-acemq-id", FieldValue(id)}};
    const std::size_t with_same = delivered_with(same, id).headers().packed_size();
    const std::size_t with_different = delivered_with(different, id).headers().packed_size();
    CHECK(with_same + 2 * id.size() <= with_different + id.size());
    CHECK(delivered_with(different, id).headers() == different);
    CHECK(delivered_with(same, id).headers() == same);

    // Without an id, an empty text is only an empty text.
    const Headers empty_texts{{"e", FieldValue("")}};
    CHECK(delivered_with(empty_texts, "").headers() == empty_texts);

    const PackedHeaders none = delivered_with({}, id).headers();
    CHECK(none.empty());
    CHECK(none.begin() == none.end());
    CHECK_FALSE(none.has_nested_values());
    CHECK(none.table().empty());
    CHECK(PackedHeaders().empty());
    CHECK(PackedHeaders() == Headers{});

    const Headers flat{{"n", FieldValue(std::int32_t{1})}, {"t", FieldValue("x")}};
    CHECK_FALSE(delivered_with(flat, id).headers().has_nested_values());
}

TEST_CASE("packed integers and timestamps keep every value of their width, in a byte or two when small") {
    const std::string id = "0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f";
    const auto packed_size = [&](FieldValue value) {
        return delivered_with({{"n", std::move(value)}}, id).headers().packed_size();
    };
    const std::size_t overhead = packed_size(FieldValue());  // the count, the name and a tag
    using i32 = std::numeric_limits<std::int32_t>;
    using i64 = std::numeric_limits<std::int64_t>;
    using u64 = std::numeric_limits<std::uint64_t>;
    Headers extremes;
    const std::vector<FieldValue> values{FieldValue(std::int32_t{0}),
                                         FieldValue(std::int32_t{-1}),
                                         FieldValue(std::int32_t{63}),
                                         FieldValue(std::int32_t{64}),
                                         FieldValue(i32::min()),
                                         FieldValue(i32::max()),
                                         FieldValue(std::int64_t{0}),
                                         FieldValue(i64::min()),
                                         FieldValue(i64::max()),
                                         FieldValue(std::int64_t{-1'700'000'000'000}),
                                         FieldValue(std::uint64_t{0}),
                                         FieldValue(u64::max()),
                                         FieldValue(FieldTimestamp(std::chrono::seconds(-1))),
                                         FieldValue(FieldTimestamp(std::chrono::seconds(i64::max()))),
                                         FieldValue(FieldTimestamp(std::chrono::seconds(i64::min())))};
    for (std::size_t index = 0; index < values.size(); ++index) {
        const FieldValue& value = values[index];
        INFO("value " << index);
        const Headers one{{"n", value}};
        const Headers back = delivered_with(one, id).headers().table();
        CHECK(back == one);
        CHECK(back.at("n").get().index() == value.get().index());
        extremes.emplace_back("n" + std::to_string(100 + index), value);
    }
    CHECK(delivered_with(extremes, id).headers() == extremes);
    // Small numbers (zigzagged: 0, -1, 1... within 127) take one byte after the tag.
    CHECK(packed_size(FieldValue(std::int32_t{1})) == overhead + 1);
    CHECK(packed_size(FieldValue(std::int32_t{-64})) == overhead + 1);
    CHECK(packed_size(FieldValue(std::int32_t{64})) == overhead + 2);
    CHECK(packed_size(FieldValue(std::uint64_t{127})) == overhead + 1);
    CHECK(packed_size(FieldValue(u64::max())) == overhead + 10);
    CHECK(packed_size(FieldValue(i64::min())) == overhead + 10);
    // A time in milliseconds since 1970 takes six bytes, in seconds five.
    CHECK(packed_size(FieldValue(std::int64_t{1'800'000'000'000})) == overhead + 6);
    CHECK(packed_size(FieldValue(FieldTimestamp(std::chrono::seconds(1'800'000'000)))) == overhead + 5);
    CHECK(packed_size(FieldValue(2.5)) == overhead + 8);
}

TEST_CASE("packed headers name each of the contract's names in one byte, and only those") {
    const std::string id = "0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f";
    const auto packed_alone = [&](std::string_view name) {
        Headers alone;
        alone.append(FieldName(name), FieldValue(id));
        const InboundMessage message = delivered_with(alone, id);
        CHECK(message.headers().begin().name() == name);
        CHECK(message.headers() == alone);
        return message.headers().packed_size();
    };
    // The name, and a value that is the message's id: a byte each.
    for (const std::string_view contract : {header::id,
                                            header::type,
                                            header::version,
                                            header::correlation,
                                            header::causation,
                                            header::attempt,
                                            header::first_seen,
                                            header::origin,
                                            header::error,
                                            header::claim,
                                            header::route,
                                            header::route_id,
                                            header::route_position,
                                            header::traceparent,
                                            header::tracestate,
                                            header::replayed_from,
                                            header::replay_count,
                                            std::string_view("x-death"),
                                            std::string_view("x-first-death-queue"),
                                            std::string_view("x-last-death-reason"),
                                            std::string_view("count"),
                                            std::string_view("routing-keys")}) {
        INFO(contract);
        CHECK(packed_alone(contract) == 2);
    }
    // Names one byte off a contract's (longer, shorter, another last byte, another case,
    // another byte inside) are written out whole.
    for (const std::string_view near : {"x-acemq-idx", "x-acemq-i", "x-acemq-ie", "X-acemq-id", "x-bcemq-id",
                                        "x-acemq-xd", "counts", "coun", "x-deatH", "x-death-queue", "traceparenT"}) {
        INFO(near);
        CHECK(packed_alone(near) == 1 + near.size() + 1);
    }
    // A table of both reads back entry for entry, and the near names are not reserved ones.
    Headers mixed{{"x-acemq-id", FieldValue(id)},
                  {"x-acemq-idx", FieldValue("near")},
                  {"count", FieldValue(std::int64_t{2})},
                  {"coun", FieldValue(std::int64_t{3})}};
    const InboundMessage message = delivered_with(mixed, id);
    CHECK(message.headers() == mixed);
    const Envelope read = read_envelope(message);
    CHECK(read.id == id);
    CHECK(read.headers == Headers{{"count", FieldValue(std::int64_t{2})}, {"coun", FieldValue(std::int64_t{3})}});
}

TEST_CASE("a message's envelope read off its packed headers is the one read off the table") {
    Envelope sent = Envelope::for_new_message("orders.placed", "svc@host");
    sent.causation = "cause";
    sent.route = {"a", "b"};
    sent.route_position = 1;
    set_header(sent, "tenant", FieldValue("t-1"));
    set_header(sent, "traceparent", FieldValue("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
    const Headers headers = render_headers(sent);
    const InboundMessage message = delivered_with(headers, sent.id);
    const Envelope read = read_envelope(message);
    CHECK(read == read_envelope(headers, "rk", sent.id));
    CHECK(read.id == sent.id);
    CHECK(read.correlation == sent.id);
    CHECK(read.route == sent.route);
    CHECK(read.headers == sent.headers);
}

TEST_CASE("a packed table reads like the table it was made from, and holds the id's texts itself") {
    const std::string id = "0b7d9a52-5a3c-4d55-9f4e-6a1c2b3d4e5f";
    const Headers headers = every_kind_of_header(id);
    const PackedTable packed(headers);
    CHECK(packed.size() == headers.size());
    CHECK(packed == headers);
    CHECK(packed.table() == headers);
    CHECK(packed.view().has_nested_values());
    CHECK(PackedTable(packed) == packed);
    for (const auto& [name, value] : headers) {
        INFO(name);
        REQUIRE(packed.contains(name));
        CHECK(packed.find(name)->second == value);
        CHECK(packed.at(name) == value);
    }
    CHECK_FALSE(packed.contains("x-acemq-type"));
    CHECK_THROWS_WITH(packed.at("x-acemq-type"), Catch::Contains("no header named \"x-acemq-type\""));
    // Packed for no message in particular: the id's texts are there as texts, read back whatever
    // the message's id turns out to be.
    CHECK(packed.message_id().empty());
    CHECK(packed.packed().find(id) != std::string_view::npos);
    // Packed for the message of that id, each of the four is a reference to it (its size
    // byte and 36 bytes not there), the id held once; it reads back the same.
    const PackedTable for_the_id(headers, id);
    CHECK(for_the_id == headers);
    CHECK(for_the_id.message_id() == id);
    CHECK(for_the_id.packed().size() == packed.packed().size() - 4 * (1 + id.size()));

    CHECK(PackedTable().empty());
    CHECK(PackedTable() == Headers{});
    CHECK(PackedTable(Headers{}) == PackedTable());
    const PackedTable listed{{"n", FieldValue(std::int32_t{1})}, {"t", FieldValue("x")}};
    CHECK(listed == Headers{{"n", FieldValue(std::int32_t{1})}, {"t", FieldValue("x")}});
    CHECK_FALSE(listed.view().has_nested_values());
    CHECK_FALSE(listed == packed);
}

TEST_CASE("headers packed straight from an envelope are the rendered table's, byte for byte") {
    Envelope full = Envelope::for_new_message("orders", "svc@host");
    full.causation = "cause-1";
    full.claim = "claim-1";
    full.error = "it broke";
    full.route = {"a", "b"};
    full.route_id = "route-1";
    full.route_position = 1;
    full.attempt = 3;
    full.version = 2;
    for (const char* name : {"zz-last", "x-b-after-reserved", "traceparent", "aa-first", "x-acemq"})
        set_header(full, name, std::string(name) + "-value");
    Envelope untyped = Envelope::for_new_message("k");
    untyped.type.clear();  // written as "", as render_headers writes it
    untyped.first_seen.reset();
    Envelope nested = Envelope::for_new_message("k");
    set_header(nested, "list", FieldValue(FieldArray{FieldValue(nested.id), FieldValue(std::int32_t{1})}));
    set_header(nested, "table", FieldValue(FieldTable{{"inner", FieldValue("x")}}));
    Envelope many = Envelope::for_new_message("k");  // past 63 entries the count takes two bytes
    for (int index = 0; index < 70; ++index)
        set_header(many, "h" + std::to_string(100 + index), FieldValue(std::int64_t{index} << 33));
    const Headers trace{{"a-added", FieldValue("added")},
                        {"traceparent", FieldValue("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
                        {"tracestate", FieldValue("k=v")},
                        {"zzz-added", FieldValue(std::string(300, 'z'))}};

    for (const auto& [what, envelope] :
         std::vector<std::pair<std::string, Envelope>>{{"new", Envelope::for_new_message("k")},
                                                       {"every reserved header and application ones among them", full},
                                                       {"no type, no first-seen", untyped},
                                                       {"nested values", nested},
                                                       {"70 application headers", many}}) {
        for (const Headers& added : {Headers{}, trace}) {
            INFO(what << ", " << added.size() << " added");
            const Headers rendered = render_headers(envelope, added);
            const PackedTable packed = pack_headers(envelope, added);
            CHECK(packed == rendered);
            CHECK(packed.table() == rendered);
            CHECK(packed.message_id() == envelope.id);
            CHECK(packed.packed() == PackedTable(rendered, envelope.id).packed());
            CHECK(packed.view().has_nested_values() == (what == "nested values"));
            CHECK(read_envelope(packed.table(), "k").id == envelope.id);
        }
    }
    // And attempt, correlation, first-seen, id, type and version; no origin.
    CHECK(pack_headers(many).size() == 70 + 6);

    // What render_headers refuses, pack_headers refuses alike.
    Envelope refused = Envelope::for_new_message("k");
    refused.version = 0;
    CHECK_THROWS_WITH(pack_headers(refused), Catch::Contains("version 0 is below 1"));
    refused = Envelope::for_new_message("k");
    refused.headers.emplace("x-acemq-sneaked-in", FieldValue("x"));
    CHECK_THROWS_AS(pack_headers(refused), ReservedHeaderError);
    CHECK_THROWS_AS(pack_headers(Envelope::for_new_message("k"), Headers{{"x-acemq-id", FieldValue("mine")}}),
                    ReservedHeaderError);
}
