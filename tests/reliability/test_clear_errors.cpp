// Suite `reliability` (issue 9, "clear errors instead of misleading ones"): what the library
// says when it is handed something it cannot use. Each error names what was wrong without
// leaking a secret: a URL's password never appears, a thrown value that is not a
// std::exception is named by its type and place, a table name that cannot work is refused
// before it reaches a statement.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include <acemq/amqp.hpp>
#include <acemq/stores/postgres.hpp>
#include <acemq/stores/sql_idempotency_store.hpp>
#include <acemq/stores/sql_outbox_store.hpp>
#include <acemq/stores/sqlite.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace {

using namespace std::chrono_literals;

constexpr const char* secret = "Sup3rSecretPa55";

// The text of the InvalidArgument that connect() throws for `url`.
std::string refusal_of_connect(const std::string& url) {
    try {
        acemq::connect(url);
        FAIL("connect accepted \"" << url << "\"");
    } catch (const acemq::InvalidArgument& error) {
        return error.what();
    }
    return {};
}

// Runs `action`, which must throw an acemq::Error that is also each of Classes; fails the
// test when it throws nothing, something from outside the library's hierarchy
// (std::out_of_range, std::logic_error), or an acemq::Error of another class.
template <class... Classes>
void check_throws_library_error(const std::function<void()>& action) {
    try {
        action();
        FAIL("nothing was thrown");
    } catch (const acemq::Error& error) {
        INFO(acemq::describe(acemq::Failure::of(std::current_exception())));
        CHECK((... && (dynamic_cast<const Classes*>(&error) != nullptr)));
    } catch (const std::exception&) {
        FAIL("not an acemq::Error: " << acemq::describe(acemq::Failure::of(std::current_exception())));
    }
}

}  // namespace

TEST_CASE("an unknown URL scheme is refused without echoing the password") {
    for (const std::string& url :
         {"AMQP://guest:" + std::string(secret) + "@localhost:5672/",
          "ampq://guest:" + std::string(secret) + "@localhost", " amqp://guest:" + std::string(secret) + "@localhost",
          "guest:" + std::string(secret) + "@localhost:5672"}) {
        const std::string text = refusal_of_connect(url);
        INFO(text);
        CHECK_THAT(text, Catch::StartsWith("acemq: no transport for \"") && Catch::Contains("***@localhost") &&
                             Catch::Contains("the URL must start with one of"));
        CHECK_THAT(text, !Catch::Contains(secret) && !Catch::Contains("Sup3r"));
    }
}

TEST_CASE("redacted_url hides everything before the last '@' of the authority") {
    using acemq::redacted_url;
    CHECK(redacted_url("amqp://guest:" + std::string(secret) + "@rabbit:5672/orders") ==
          "amqp://***@rabbit:5672/orders");
    // An '@' inside the password: the last one ends the userinfo.
    CHECK(redacted_url("amqp://guest:p@ss@" + std::string(secret) + "@rabbit/") == "amqp://***@rabbit/");
    // Percent-encoded, the password is still hidden whole.
    CHECK(redacted_url("amqps://guest:" + std::string(secret) + "%40%2f@rabbit") == "amqps://***@rabbit");
    // Uppercase or misspelt schemes and a leading space keep their scheme, so the reader
    // sees what is wrong with it.
    CHECK(redacted_url("AMQP://u:" + std::string(secret) + "@h") == "AMQP://***@h");
    CHECK(redacted_url(" amqp://u:" + std::string(secret) + "@h") == " amqp://***@h");
    // No scheme at all: everything before the '@' goes.
    CHECK(redacted_url("guest:" + std::string(secret) + "@rabbit") == "***@rabbit");
    // A "scheme" that cannot be one (it holds a ':') is part of the userinfo, not a scheme.
    CHECK(redacted_url("guest:" + std::string(secret) + "://x@rabbit") == "***@rabbit");
    // A query may hold a password as well.
    CHECK(redacted_url("postgresql://db/app?user=u&password=" + std::string(secret)) == "postgresql://db/app?***");
    CHECK(redacted_url("amqp://u:pa?ss@rabbit/?x=" + std::string(secret)) == "amqp://***@rabbit/?***");
    // Nothing to hide: unchanged.
    CHECK(redacted_url("amqp://rabbit:5672/") == "amqp://rabbit:5672/");
    CHECK(redacted_url("inproc://orders") == "inproc://orders");
    CHECK(redacted_url("") == "");
}

TEST_CASE("an inproc URL that cannot be used is refused without echoing a password") {
    // The inproc transport is registered by name, so these reach its own refusals: one for
    // each way an inproc URL can be wrong, each with a password in it.
    const std::string password = secret;
    const std::pair<std::string, std::string> refused[] = {
        {"inproc://?user=guest&password=" + password, "it names no broker; write inproc://NAME"},
        {"inproc://orders?password=" + password, "the only parameter it takes is data=FILE"},
        {"inproc://guest:" + password + "@orders?x=1", "the only parameter it takes is data=FILE"},
    };
    for (const auto& [url, why] : refused) {
        const std::string text = refusal_of_connect(url);
        INFO(text);
        CHECK_THAT(text, Catch::StartsWith("acemq: cannot open \"inproc://") && Catch::Contains(why));
        CHECK_THAT(text, !Catch::Contains(secret) && !Catch::Contains("Sup3r"));
    }
}

TEST_CASE("a thrown value that is not a std::exception is named by its type") {
    const acemq::Failure failure = acemq::Failure::of(std::make_exception_ptr(42));
    CHECK(failure.type_name == "int");
    CHECK(failure.message ==
          "a non-standard exception of type int was thrown (it does not derive from std::exception)");
    CHECK_FALSE(failure.fatal);
    struct Oops {};
    CHECK_THAT(acemq::describe(acemq::Failure::of(std::make_exception_ptr(Oops{}))),
               Catch::Contains("a non-standard exception of type") && Catch::Contains("Oops"));
    // Where it happened, when the caller says.
    CHECK(acemq::Failure::of(std::make_exception_ptr(42), "in the handler of queue orders (message m-1)").message ==
          "a non-standard exception of type int was thrown in the handler of queue orders (message m-1) (it does not "
          "derive from std::exception)");
    // A std::exception keeps the family's words, with or without a place.
    CHECK(acemq::Failure::of(std::make_exception_ptr(std::runtime_error("down")), "in the handler of queue q") ==
          acemq::Failure{"std::runtime_error", "down", false});
}

TEST_CASE("a handler that throws 42 dead-letters the message with the type and the place in the reason") {
    acemq::Bus bus = acemq::connect("inproc://errors-" + acemq::new_uuid().substr(0, 8));
    acemq::testing::Harness harness{bus};
    bus.declare(acemq::Topology{}.queue("payments", {.dead_letter = true}));
    auto consumer =
        bus.consume<std::string>("payments", [](const acemq::Message<std::string>&) -> acemq::Ack { throw 42; });
    const acemq::SendResult sent = bus.publisher_to_queue("payments").send(std::string("charge"));
    REQUIRE(harness.wait_dead_lettered("payments", 1, 10s));
    consumer.close();
    const auto settled = harness.settled("payments");
    REQUIRE(settled.size() == 1);
    CHECK_THAT(settled[0].settlement.reason,
               Catch::Contains("int: a non-standard exception of type int was thrown in the handler of queue payments "
                               "(message " +
                               sent.message_id + ")") &&
                   !Catch::Contains("unknown exception"));
}

TEST_CASE("table names that are SQL keywords are refused up front, in any case") {
    for (const char* keyword : {"order", "select", "ORDER", "Select", "user", "table", "group", "where", "transaction",
                                "index", "left", "values", "analyze"}) {
        INFO(keyword);
        CHECK_THROWS_WITH(acemq::sql::check_identifier(keyword), Catch::Contains("reserved word") &&
                                                                     Catch::Contains(keyword) &&
                                                                     Catch::Contains("choose another name"));
        CHECK_THROWS_AS(acemq::schema_ddl(acemq::sql::Dialect::sqlite, {.idempotency = keyword}),
                        acemq::InvalidArgument);
    }
    CHECK_THROWS_WITH(acemq::sql::check_identifier("sqlite_orders"), Catch::Contains("sqlite_"));
    // Words that merely contain a keyword, and keywords that both databases accept as names.
    for (const char* fine : {"orders", "order_lines", "selected", "acemq_outbox", "name", "key", "data"})
        CHECK_NOTHROW(acemq::sql::check_identifier(fine));
}

TEST_CASE("identifiers are at most 63 bytes, and the stores refuse what schema_ddl refuses") {
    CHECK_NOTHROW(acemq::sql::check_identifier(std::string(63, 'a')));
    CHECK_THROWS_WITH(acemq::sql::check_identifier(std::string(64, 'a')), Catch::Contains("63 bytes"));

    acemq::sqlite::Database database(":memory:");
    // 60 characters: a valid identifier, but its index {t}_expiry / {t}_pending would pass 63.
    const std::string long_name(60, 't');
    CHECK_THROWS_AS(acemq::schema_ddl(acemq::sql::Dialect::sqlite, {.idempotency = long_name}), acemq::InvalidArgument);
    CHECK_THROWS_WITH(acemq::SqlIdempotencyStore(database, {.table = long_name}),
                      Catch::Contains("too long") && Catch::Contains(long_name));
    CHECK_THROWS_WITH(acemq::SqlOutboxStore(database, {.table = long_name}),
                      Catch::Contains("too long") && Catch::Contains(long_name));
    CHECK_THROWS_WITH(acemq::SqlIdempotencyStore(database, {.table = "order"}), Catch::Contains("reserved word"));
    CHECK_THROWS_WITH(acemq::SqlOutboxStore(database, {.table = "select"}), Catch::Contains("reserved word"));
    // The longest names schema_ddl accepts are accepted by the stores too.
    CHECK_NOTHROW(acemq::SqlIdempotencyStore(database, {.table = std::string(56, 'i')}));
    CHECK_NOTHROW(acemq::SqlOutboxStore(database, {.table = std::string(55, 'o')}));
    CHECK_NOTHROW(acemq::schema_ddl(acemq::sql::Dialect::postgres,
                                    {.idempotency = std::string(56, 'i'), .outbox = std::string(55, 'o')}));
}

TEST_CASE("a timestamp header is a kind of its own: no integer, and read as an instant in seconds") {
    const acemq::FieldValue stamp(acemq::FieldTimestamp(std::chrono::seconds(1577836800)));
    CHECK_FALSE(stamp.as_integer().has_value());
    CHECK_FALSE(stamp.as_text().has_value());
    CHECK(stamp.to_string() == "timestamp 1577836800 s");
    const acemq::Envelope envelope = acemq::read_envelope(
        {{std::string(acemq::header::attempt), stamp}, {std::string(acemq::header::first_seen), stamp}}, "orders");
    CHECK(envelope.attempt == 1);
    REQUIRE(envelope.first_seen.has_value());
    CHECK(envelope.first_seen->time_since_epoch() == std::chrono::seconds(1577836800));
    // Not after the epoch: the age is unknown, as for a missing first-seen.
    const acemq::Envelope before_epoch = acemq::read_envelope(
        {{std::string(acemq::header::first_seen), acemq::FieldValue(acemq::FieldTimestamp(std::chrono::seconds(-5)))}},
        "orders");
    CHECK_FALSE(before_epoch.first_seen.has_value());
}

TEST_CASE("the SQL outbox refuses a timestamp header instead of storing it as a number") {
    acemq::sqlite::Database database(":memory:");
    acemq::SqlOutboxStore store(database);
    acemq::OutboxRecord record;
    record.id = "o-1";
    record.routing_key = "orders";
    record.headers.insert_or_assign("sent-at", acemq::FieldValue(acemq::FieldTimestamp(std::chrono::seconds(1))));
    acemq::sql::Transaction transaction = database.begin();
    CHECK_THROWS_WITH(store.add(record, transaction),
                      Catch::Contains("\"sent-at\" holds an AMQP timestamp") &&
                          Catch::Contains("send it as an integer of epoch milliseconds"));
}

// Issue 10: one catch of acemq::Error gets whatever the library throws, and the class says
// what kind of failure it was without reading the text.
TEST_CASE("every kind of error is an acemq::Error of its precise class") {
    SECTION("a FieldTable lookup of a missing field is an InvalidArgument naming it") {
        const acemq::FieldTable table{{"x-tenant", "shop"}};
        check_throws_library_error<acemq::InvalidArgument>([&] { (void)table.at("x-region"); });
        CHECK_THROWS_WITH(table.at("x-region"), Catch::Contains("\"x-region\""));
        acemq::FieldTable built;
        built.append("b", 1);
        check_throws_library_error<acemq::UsageError>([&] { built.append("a", 2); });
    }
    SECTION("a delivery settled twice is a UsageError") {
        auto transport = acemq::open_transport("inproc://errors-" + acemq::new_uuid().substr(0, 8));
        transport->declare(acemq::Topology{}.queue("payments"));
        REQUIRE(transport->publish(acemq::OutboundMessage{.routing_key = "payments", .message_id = "m-1"}).confirmed);
        std::optional<acemq::Delivery> delivery = transport->pull("payments");
        REQUIRE(delivery.has_value());
        delivery->ack();
        check_throws_library_error<acemq::UsageError>([&] { delivery->ack(); });
        check_throws_library_error<acemq::UsageError>([&] { delivery->requeue(); });
    }
    SECTION("a bus, a transaction or an outbox used when it can no longer be is a UsageError") {
        acemq::Bus bus = acemq::connect("inproc://errors-" + acemq::new_uuid().substr(0, 8));
        bus.close();
        // Without declaring, so that the bus answers rather than its closed transport.
        check_throws_library_error<acemq::UsageError>([&] {
            (void)bus.consume_raw("payments", [](const acemq::Message<acemq::Bytes>&) { return acemq::accept(); },
                                  {.declare = false});
        });

        acemq::sqlite::Database database(":memory:");
        acemq::sql::Transaction transaction = database.begin();
        transaction.commit();
        check_throws_library_error<acemq::UsageError>([&] { transaction.commit(); });
        check_throws_library_error<acemq::UsageError>([&] { transaction.rollback(); });

        acemq::SqlOutboxStore outbox(database);
        auto connection = database.connect();
        acemq::OutboxRecord record;
        record.id = "o-1";
        record.routing_key = "payments";
        check_throws_library_error<acemq::UsageError>([&] { outbox.add(record, *connection); });
    }
    SECTION("a database or a broker that cannot be reached is an acemq::ConnectionError") {
        // One catch of acemq::ConnectionError handles all three; the SQL drivers' subclass says which.
        check_throws_library_error<acemq::ConnectionError, acemq::sql::ConnectionError>(
            [] { (void)acemq::sqlite::Database("/nonexistent-acemq-dir/sub/test.db").connect(); });
        check_throws_library_error<acemq::ConnectionError, acemq::sql::ConnectionError>([] {
            (void)acemq::postgres::Database("postgresql://acemq@127.0.0.1:1/acemq?connect_timeout=5").connect();
        });
        check_throws_library_error<acemq::ConnectionError>([] { (void)acemq::connect("amqp://127.0.0.1:1/"); });
    }
}
