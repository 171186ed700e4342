// AvroCodec and RegisteredAvroCodec against the family (docs/avro.md): the Java and Go
// bodies of codec-interop-fixtures.json decoded (not round trips) and written byte for byte,
// the registered framing with id 7, both columns of avro-resolution-fixtures.json, the
// content types, errors that name the field, hostile bodies refused as DecodeErrors, and a
// round trip through an inproc bus with an undecodable body parked.
#include <catch2/catch.hpp>

#include <acemq/avro_codec.hpp>
#include <acemq/bus.hpp>
#include <acemq/codec.hpp>
#include <acemq/error.hpp>
#include <acemq/stores/memory_schema_registry.hpp>
#include <acemq/testing.hpp>
#include <acemq/topology.hpp>
#include <acemq/uuid.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "../support/fixtures.hpp"

namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<std::byte>;

struct OrderPlaced {
    std::string order_id;
    std::int64_t total_cents;
    std::string tenant;
};

Bytes base64(std::string_view text) { return acemq::detail::base64_decode(text).value(); }

Bytes from_hex(std::string_view hex) {
    Bytes out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<std::byte>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    return out;
}

// A fixture's expected object as the Value a decode gives: a record, in the fixture's order.
acemq::Value record_of(const boost::json::object& object) {
    acemq::Value::Record fields;
    for (const auto& [key, value] : object) {
        if (value.is_string())
            fields.emplace_back(std::string(key), acemq::Value(fixtures::text(value)));
        else
            fields.emplace_back(std::string(key), acemq::Value(value.to_number<std::int64_t>()));
    }
    return acemq::Value(std::move(fields));
}

const boost::json::value& interop() {
    static const boost::json::value fixture = fixtures::load("codec-interop-fixtures.json");
    return fixture;
}

std::string order_schema() { return fixtures::text(interop().at("avro_schema")); }

// Ids count from 1 in a fresh registry: fillers under other subjects bring the next to `id`.
std::shared_ptr<acemq::InMemorySchemaRegistry> registry_at(std::int64_t id) {
    auto registry = std::make_shared<acemq::InMemorySchemaRegistry>();
    for (std::int64_t i = 1; i < id; ++i)
        registry->register_schema("filler-" + std::to_string(i), "avro", "\"string\"");
    return registry;
}

}  // namespace

TEST_CASE("the family's Avro bodies decode to what they hold, fixed schema and registered id 7") {
    const acemq::AvroCodec fixed(order_schema());
    const acemq::RegisteredAvroCodec registered(registry_at(7), "org.acemq.test.OrderPlaced", order_schema());
    REQUIRE(registered.schema().id == 7);
    std::size_t read = 0;
    for (const auto& sample : interop().at("samples").as_array()) {
        const std::string format = fixtures::text(sample.at("format"));
        if (format != "avro" && format != "avro-registered") continue;
        INFO(format << " from " << fixtures::text(sample.at("producer")));
        const std::string content_type = fixtures::text(sample.at("content_type"));
        const acemq::Codec& codec = format == "avro" ? static_cast<const acemq::Codec&>(fixed) : registered;
        REQUIRE(codec.can_decode(content_type));
        const Bytes body = base64(fixtures::text(sample.at("body_base64")));
        CHECK(codec.decode(body, content_type) == record_of(sample.at("expected").as_object()));
        const auto order = acemq::decode<OrderPlaced>(codec, body, content_type);
        CHECK(order.order_id == "o-1");
        CHECK(order.total_cents == 4250);
        CHECK(order.tenant == "acme");
        ++read;
    }
    CHECK(read == 4);
}

TEST_CASE("a C++ struct encodes to the family's Avro body byte for byte, and framed with id 7") {
    const acemq::Encoded plain = acemq::encode(acemq::AvroCodec(order_schema()), OrderPlaced{"o-1", 4250, "acme"});
    CHECK(plain.content_type == "avro/binary");
    CHECK(plain.body == base64("Bm8tMbRCCGFjbWU="));
    const acemq::RegisteredAvroCodec registered(registry_at(7), "org.acemq.test.OrderPlaced", order_schema());
    const acemq::Encoded framed = acemq::encode(registered, OrderPlaced{"o-1", 4250, "acme"});
    CHECK(framed.content_type == "application/vnd.acemq.avro");
    CHECK(framed.body == base64("AAAAAAcGby0xtEIIYWNtZQ=="));
}

TEST_CASE("a registered codec registers its schema once under its subject") {
    const auto registry = registry_at(1);
    const acemq::RegisteredAvroCodec first(registry, "orders.OrderPlaced", order_schema());
    const acemq::RegisteredAvroCodec second(registry, "orders.OrderPlaced", order_schema());
    CHECK(first.schema().id == second.schema().id);
    CHECK(registry->versions("orders.OrderPlaced").size() == 1);
    CHECK(registry->by_id(first.schema().id).format == "avro");
}

TEST_CASE(
    "a registry that fails while a body is read is a StoreUnavailableError (retried), an unknown id a DecodeError") {
    // Answers registration; then, while `down`, every lookup fails as a database would.
    struct FlakyRegistry final : acemq::SchemaRegistry {
        acemq::InMemorySchemaRegistry inner;
        bool down = false;
        acemq::SchemaDefinition register_schema(std::string_view subject, std::string_view format,
                                                std::string_view definition) override {
            return inner.register_schema(subject, format, definition);
        }
        acemq::SchemaDefinition by_id(std::int64_t id) override {
            if (down) throw std::runtime_error("could not connect to server: Connection refused");
            return inner.by_id(id);
        }
        acemq::SchemaDefinition latest(std::string_view subject) override { return inner.latest(subject); }
        std::vector<acemq::SchemaDefinition> versions(std::string_view subject) override {
            return inner.versions(subject);
        }
    };
    const auto registry = std::make_shared<FlakyRegistry>();
    registry->inner.register_schema("filler-1", "avro", "\"string\"");
    registry->inner.register_schema("filler-2", "avro", "\"string\"");
    const acemq::RegisteredAvroCodec writer(registry, "orders.OrderPlaced", order_schema());
    REQUIRE(writer.schema().id == 3);
    const acemq::Encoded body = acemq::encode(writer, OrderPlaced{"o-1", 4250, "acme"});
    // A registry without id 3: the body can never be read there.
    const acemq::RegisteredAvroCodec elsewhere(std::make_shared<acemq::InMemorySchemaRegistry>(), "orders.OrderPlaced",
                                               order_schema());
    CHECK_THROWS_AS(elsewhere.decode(body.body, body.content_type), acemq::DecodeError);
    // A reader under another subject (id 4) has only its own schema cached: id 3 is looked up.
    const acemq::RegisteredAvroCodec sharing(registry, "orders.OrderPlaced.reader", order_schema());
    registry->down = true;
    CHECK_THROWS_MATCHES(acemq::decode<OrderPlaced>(sharing, body.body, body.content_type),
                         acemq::StoreUnavailableError,
                         Catch::Matchers::Message(
                             "acemq: the schema registry could not be asked for Avro schema id 3: could not "
                             "connect to server: Connection refused; the message will be read again when it answers"));
    registry->down = false;
    CHECK(acemq::decode<OrderPlaced>(sharing, body.body, body.content_type).total_cents == 4250);
}

TEST_CASE("the Avro codecs read the content types the family lists for them and refuse each other's") {
    const acemq::AvroCodec fixed(order_schema());
    const acemq::RegisteredAvroCodec registered(registry_at(1), "orders", order_schema());
    for (const char* type : {"avro/binary", "AVRO/BINARY", "application/avro", "application/vnd.acme.order+avro"})
        CHECK(fixed.can_decode(type));
    for (const char* type : {"application/vnd.acemq.avro", "", "application/json", "application/octet-stream"})
        CHECK_FALSE(fixed.can_decode(type));
    for (const char* type : {"application/vnd.acemq.avro", "application/avro", "application/vnd.acme.order+avro"})
        CHECK(registered.can_decode(type));
    for (const char* type : {"avro/binary", "", "application/json"}) CHECK_FALSE(registered.can_decode(type));
}

TEST_CASE("the family's resolution cases decode to both columns: resolved by default, writer_shape on request") {
    const boost::json::value fixture = fixtures::load("avro-resolution-fixtures.json");
    std::size_t cases = 0;
    for (const auto& each : fixture.at("cases").as_array()) {
        INFO(fixtures::text(each.at("case")));
        // howToAssert: register writerSchema under schemaId, decode body, compare with the column.
        const auto registry = registry_at(each.at("schemaId").as_int64());
        const auto writer =
            registry->register_schema("ResolutionOrder", "avro", fixtures::text(each.at("writerSchema")));
        REQUIRE(writer.id == each.at("schemaId").as_int64());
        const std::string reader_schema = fixtures::text(each.at("readerSchema"));
        const Bytes body = base64(fixtures::text(each.at("bodyBase64")));

        const acemq::RegisteredAvroCodec resolving(registry, "ResolutionOrder.reader", reader_schema);
        CHECK(resolving.decode(body, acemq::content_types::avro_registered) ==
              record_of(each.at("resolved").as_object()));
        const acemq::RegisteredAvroCodec as_written(registry, "ResolutionOrder.reader", reader_schema,
                                                    {.reading = acemq::AvroReading::writer_shape});
        CHECK(as_written.decode(body, acemq::content_types::avro_registered) ==
              record_of(each.at("writerShape").as_object()));
        ++cases;
    }
    CHECK(cases == 2);
}

TEST_CASE("a reader default fills a C++ struct's field the writer never had") {
    const boost::json::value fixture = fixtures::load("avro-resolution-fixtures.json");
    const auto& removed = fixture.at("cases").as_array().at(0);
    const auto registry = registry_at(101);
    registry->register_schema("ResolutionOrder", "avro", fixtures::text(removed.at("writerSchema")));
    const acemq::RegisteredAvroCodec codec(registry, "ResolutionOrder", fixtures::text(removed.at("readerSchema")));
    struct ResolutionOrder {
        std::string order_id;
        std::int32_t total;
        std::string currency;
    };
    const auto order = acemq::decode<ResolutionOrder>(codec, base64(fixtures::text(removed.at("bodyBase64"))),
                                                      "application/vnd.acemq.avro");
    CHECK(order.order_id == "o-1");
    CHECK(order.total == 1250);
    CHECK(order.currency == "GBP");
}

TEST_CASE("a writer's schema that does not resolve onto the reader's is a DecodeError naming the field") {
    const auto registry = registry_at(1);
    const acemq::RegisteredAvroCodec writer(
        registry, "w", R"({"type":"record","name":"R","fields":[{"name":"total","type":"string"}]})");
    const acemq::RegisteredAvroCodec reader(
        registry, "r",
        R"({"type":"record","name":"R","fields":[{"name":"total","type":"long"},{"name":"note","type":"string"}]})");
    struct R {
        std::string total;
    };
    const Bytes body = acemq::encode(writer, R{"12"}).body;
    CHECK_THROWS_WITH(reader.decode(body, "application/vnd.acemq.avro"),
                      "acemq: the writer's Avro schema does not resolve onto the reader's: R.total: the writer "
                      "wrote a string where the reader's schema has a long");
}

TEST_CASE("every Avro type goes through, defaults fill what a value lacks") {
    const acemq::AvroCodec codec(R"({"type":"record","name":"All","namespace":"t","fields":[
        {"name":"b","type":"boolean"},{"name":"i","type":"int"},{"name":"l","type":"long"},
        {"name":"f","type":"float"},{"name":"d","type":"double"},{"name":"by","type":"bytes"},
        {"name":"e","type":{"type":"enum","name":"Colour","symbols":["RED","GREEN"]}},
        {"name":"fx","type":{"type":"fixed","name":"Four","size":4}},
        {"name":"a","type":{"type":"array","items":"long"}},
        {"name":"m","type":{"type":"map","values":"string"}},
        {"name":"u","type":["null","string"]},
        {"name":"again","type":"Four"},
        {"name":"next","type":["null","All"],"default":null},
        {"name":"note","type":"string","default":"none"}]})");
    struct All {
        bool b;
        std::int32_t i;
        std::int64_t l;
        float f;
        double d;
        Bytes by;
        std::string e;
        Bytes fx;
        std::vector<std::int64_t> a;
        std::map<std::string, std::string> m;
        std::optional<std::string> u;
        Bytes again;
    };
    const All all{true,         -7,
                  1LL << 40,    1.5f,
                  -2.25,        from_hex("00ff"),
                  "GREEN",      from_hex("01020304"),
                  {1, -2, 3},   {{"k", "v"}},
                  std::nullopt, from_hex("05060708")};
    const acemq::Encoded encoded = acemq::encode(codec, all);
    const acemq::Value value = codec.decode(encoded.body, encoded.content_type);
    CHECK(value.find("note")->as_string() == "none");
    CHECK(value.find("next")->is_null());
    CHECK(value.find("e")->as_string() == "GREEN");
    const All back = acemq::decode<All>(codec, encoded.body, encoded.content_type);
    CHECK(back.i == -7);
    CHECK(back.l == (1LL << 40));
    CHECK(back.f == 1.5f);
    CHECK(back.by == all.by);
    CHECK(back.fx == all.fx);
    CHECK(back.a == all.a);
    CHECK(back.m == all.m);
    CHECK_FALSE(back.u.has_value());
}

TEST_CASE("a value that does not fit the schema is an EncodeError naming the field") {
    const acemq::AvroCodec codec(order_schema());
    struct Wrong {
        std::string order_id;
        std::string total_cents;
        std::string tenant;
    };
    struct Extra {
        std::string order_id;
        std::int64_t total_cents;
        std::string tenant;
        std::string channel;
    };
    struct Short {
        std::string order_id;
    };
    CHECK_THROWS_WITH(acemq::encode(codec, Wrong{"o-1", "4250", "acme"}),
                      Catch::Matchers::EndsWith("OrderPlaced.totalCents: expected a long, found a string"));
    CHECK_THROWS_WITH(acemq::encode(codec, Extra{"o-1", 1, "acme", "web"}),
                      Catch::Matchers::Contains("the schema of OrderPlaced has no field 'channel'"));
    CHECK_THROWS_WITH(acemq::encode(codec, Short{"o-1"}),
                      Catch::Matchers::Contains("OrderPlaced.totalCents: missing, and the schema gives it no default"));
    CHECK_THROWS_AS(acemq::AvroCodec(R"({"type":"record","name":"X","fields":[{"name":"a"}]})"),
                    acemq::InvalidArgument);
    CHECK_THROWS_WITH(acemq::AvroCodec(R"({"type":"record","name":"X","fields":[{"name":"a","type":"strin"}]})"),
                      Catch::Matchers::Contains("X.a: unknown type 'strin'"));
}

TEST_CASE("a struct read from Avro of the wrong shape names the field") {
    struct Mistyped {
        std::string order_id;
        std::string total_cents;
    };
    CHECK_THROWS_WITH(
        acemq::decode<Mistyped>(acemq::AvroCodec(order_schema()), base64("Bm8tMbRCCGFjbWU="), "avro/binary"),
        Catch::Matchers::Contains("Mistyped.total_cents: expected a string (std::string), found an int64"));
}

TEST_CASE("hostile Avro bodies are DecodeErrors, with nothing allocated for what they claim") {
    const acemq::AvroCodec order(order_schema());
    const auto refused = [](const acemq::Codec& codec, const Bytes& body, std::string_view why) {
        INFO(why);
        CHECK_THROWS_WITH(codec.decode(body, "avro/binary"), Catch::Matchers::Contains(std::string(why)));
    };
    SECTION("a string length of 2^62") {  // zig-zag 2^63 in 10 bytes: refused before any allocation
        refused(order, from_hex("80808080808080808001"),
                "a length of 4611686018427387904 for a string, but only 0 bytes");
    }
    SECTION("a negative length") { refused(order, from_hex("01"), "a negative length (-1) of a string at byte 0"); }
    SECTION("every truncation of the family's body") {
        const Bytes whole = base64("Bm8tMbRCCGFjbWU=");
        for (std::size_t n = 0; n < whole.size(); ++n)
            CHECK_THROWS_AS(
                order.decode(Bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n)), "avro/binary"),
                acemq::DecodeError);
    }
    SECTION("bytes left over") { refused(order, from_hex("066f2d31b4420861636d6500"), "1 bytes left over"); }
    SECTION("a varint of 11 bytes") { refused(order, from_hex("ffffffffffffffffffff01"), "overflows 64 bits"); }
    SECTION("nesting past the depth limit through a recursive schema") {
        const acemq::AvroCodec list(
            R"({"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]})");
        Bytes shallow(10, std::byte{0x02});
        shallow.push_back(std::byte{0});
        CHECK_NOTHROW(list.decode(shallow, "avro/binary"));
        Bytes deep(100'000, std::byte{0x02});
        deep.push_back(std::byte{0});
        refused(list, deep, "nested deeper than 64");
    }
    SECTION("an array count of 2^62 of nulls, which claim no bytes") {
        refused(acemq::AvroCodec(R"({"type":"array","items":"null"})"), from_hex("80808080808080808001"),
                "an array block of 4611686018427387904 items, more than the 1000000 values left");
    }
    SECTION("a huge array count of longs, and a negative block count's size past the body") {
        refused(acemq::AvroCodec(R"({"type":"array","items":"long"})"), from_hex("c0843d02"),
                "the body ends inside a long");
        refused(acemq::AvroCodec(R"({"type":"array","items":"long"})"), from_hex("01fe01"),
                "a length of 127 for a block size");
    }
    SECTION("a union or enum index out of range") {
        refused(acemq::AvroCodec(R"(["null","string"])"), from_hex("04"), "the union index 2");
        refused(acemq::AvroCodec(R"({"type":"enum","name":"E","symbols":["A"]})"), from_hex("02"), "the enum index 1");
    }
    SECTION("a string that is not UTF-8") { refused(order, from_hex("02ff"), "not valid UTF-8"); }
    SECTION("a registered body without its framing, or naming an id nobody registered") {
        const acemq::RegisteredAvroCodec registered(registry_at(1), "orders", order_schema());
        CHECK_THROWS_WITH(registered.decode(base64("Bm8tMbRCCGFjbWU="), "application/avro"),
                          Catch::Matchers::Contains("does not start with 0x00"));
        CHECK_THROWS_WITH(registered.decode(from_hex("0000000063066f2d31"), "application/vnd.acemq.avro"),
                          Catch::Matchers::Contains("schema id 99, which the registry does not have"));
        CHECK_THROWS_AS(registered.decode(from_hex("000000"), "application/vnd.acemq.avro"), acemq::DecodeError);
    }
}

TEST_CASE("Avro through a bus on inproc: both codecs read by content type on the default codec, a bad body parked") {
    acemq::Bus bus = acemq::connect("inproc://avro-" + acemq::new_uuid());
    const acemq::testing::Harness harness{bus};
    bus.declare(acemq::Topology{}.queue("orders.placed", {.dead_letter = true}));
    const auto fixed = std::make_shared<acemq::AvroCodec>(order_schema());
    const auto registered =
        std::make_shared<acemq::RegisteredAvroCodec>(registry_at(7), "org.acemq.test.OrderPlaced", order_schema());
    std::mutex lock;
    std::vector<std::string> content_types;
    std::vector<std::string> tenants;
    auto consumer = bus.consume<OrderPlaced>("orders.placed",
                                             [&](const acemq::Message<OrderPlaced>& message) {
                                                 const std::lock_guard guard(lock);
                                                 content_types.push_back(message.content_type);
                                                 tenants.push_back(message.payload.tenant);
                                                 return acemq::accept();
                                             },
                                             {.codec = acemq::default_codec_reading({registered, fixed})});
    bus.publisher_to_queue("orders.placed", {.codec = registered}).send(OrderPlaced{"o-1", 4250, "acme"});
    const acemq::Publisher raw = bus.publisher_to_queue("orders.placed");
    raw.send_raw(acemq::Encoded{base64("Bm8tMbRCCGFjbWU="), "avro/binary"});
    raw.send(OrderPlaced{"o-2", 1, "json"});  // the default still writes and reads JSON
    raw.send_raw(acemq::Encoded{from_hex("80808080808080808001"), "avro/binary"});
    REQUIRE(harness.wait_parked("orders.placed", 1, 10s));
    REQUIRE(harness.wait_consumed("orders.placed", 4, 10s));
    consumer.close();
    const std::lock_guard guard(lock);
    CHECK(content_types == std::vector<std::string>{"application/vnd.acemq.avro", "avro/binary", "application/json"});
    CHECK(tenants == std::vector<std::string>{"acme", "acme", "json"});
}
