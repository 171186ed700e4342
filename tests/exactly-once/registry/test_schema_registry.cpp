// The schema registry's contract (patterns §5.9, §8 item 45) on every implementation: the
// pinned fingerprint and text, ids global from 1, versions per subject from 1, idempotent
// registration, refusals and "not found". registry_targets.hpp says what each target is.
#include "registry_targets.hpp"

#include <catch2/catch.hpp>

#include <acemq/schema_registry.hpp>

#include <string>

using acemq::SchemaDefinition;
using acemq::SchemaNotFoundError;
using registry_targets::MemoryTarget;

namespace {

const std::string order_v1 = R"({"type":"record","name":"OrderPlaced","fields":[{"name":"id","type":"string"}]})";
const std::string order_v2 =
    R"({"type":"record","name":"OrderPlaced","fields":[{"name":"id","type":"string"},{"name":"total","type":"long"}]})";

}  // namespace

TEST_CASE("fingerprint is the lowercase hex SHA-256 of the exact bytes (pinned)", "[registry]") {
    CHECK(acemq::fingerprint("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(acemq::fingerprint("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // No normalisation: a reformatted schema is another fingerprint.
    CHECK(acemq::fingerprint(R"({"type":"string"})") != acemq::fingerprint(R"({"type": "string"})"));
    CHECK(acemq::fingerprint(std::string("a\0b", 3)) != acemq::fingerprint("a"));
}

TEST_CASE("a schema reads as \"<subject> v<version> (<format>, id <id>)\" (pinned)", "[registry]") {
    const SchemaDefinition schema{.id = 7,
                                  .subject = "orders.OrderPlaced",
                                  .version = 2,
                                  .format = "avro",
                                  .definition = order_v2,
                                  .fingerprint = acemq::fingerprint(order_v2),
                                  .registered_at_ms = 1'700'000'000'000};
    CHECK(acemq::to_string(schema) == "orders.OrderPlaced v2 (avro, id 7)");
}

TEMPLATE_TEST_CASE("registering the same definition twice answers the same id, version 1", "[registry]", MemoryTarget) {
    TestType target;
    acemq::SchemaRegistry& registry = target.registry();
    const SchemaDefinition first = registry.register_schema("orders.OrderPlaced", "avro", order_v1);
    CHECK(first.id == 1);
    CHECK(first.version == 1);
    CHECK(first.subject == "orders.OrderPlaced");
    CHECK(first.format == "avro");
    CHECK(first.definition == order_v1);
    CHECK(first.fingerprint == acemq::fingerprint(order_v1));
    CHECK(first.registered_at_ms > 1'700'000'000'000);  // epoch milliseconds, not a steady clock's
    CHECK(registry.register_schema("orders.OrderPlaced", "avro", order_v1) == first);
    CHECK(registry.versions("orders.OrderPlaced") == std::vector{first});
}

TEMPLATE_TEST_CASE("ids are global from 1, versions count per subject from 1", "[registry]", MemoryTarget) {
    TestType target;
    acemq::SchemaRegistry& registry = target.registry();
    const SchemaDefinition order1 = registry.register_schema("orders.OrderPlaced", "avro", order_v1);
    const SchemaDefinition order2 = registry.register_schema("orders.OrderPlaced", "avro", order_v2);
    // The same definition under another subject is a new id, version 1.
    const SchemaDefinition shipped = registry.register_schema("orders.OrderShipped", "avro", order_v1);
    CHECK(acemq::to_string(order1) == "orders.OrderPlaced v1 (avro, id 1)");
    CHECK(acemq::to_string(order2) == "orders.OrderPlaced v2 (avro, id 2)");
    CHECK(acemq::to_string(shipped) == "orders.OrderShipped v1 (avro, id 3)");
    CHECK(registry.register_schema("orders.OrderPlaced", "avro", order_v1) == order1);  // an old version too

    CHECK(registry.by_id(1) == order1);
    CHECK(registry.by_id(2) == order2);
    CHECK(registry.by_id(3) == shipped);
    CHECK(registry.latest("orders.OrderPlaced") == order2);
    CHECK(registry.latest("orders.OrderShipped") == shipped);
    CHECK(registry.versions("orders.OrderPlaced") == std::vector{order1, order2});
    CHECK(registry.versions("orders.OrderShipped") == std::vector{shipped});
}

TEMPLATE_TEST_CASE("an unknown id or subject is SchemaNotFoundError; versions of none is empty", "[registry]",
                   MemoryTarget) {
    TestType target;
    acemq::SchemaRegistry& registry = target.registry();
    CHECK_THROWS_MATCHES(registry.by_id(1), SchemaNotFoundError,
                         Catch::Matchers::Message("acemq: no schema has the id 1 in this registry; was the message "
                                                  "written against another registry?"));
    CHECK_THROWS_MATCHES(
        registry.latest("orders.OrderPlaced"), SchemaNotFoundError,
        Catch::Matchers::Message("acemq: no schema is registered under the subject \"orders.OrderPlaced\""));
    CHECK(registry.versions("orders.OrderPlaced").empty());
    const SchemaDefinition order = registry.register_schema("orders.OrderPlaced", "avro", order_v1);
    CHECK_THROWS_AS(registry.by_id(order.id + 1), SchemaNotFoundError);
    CHECK_THROWS_AS(registry.by_id(0), SchemaNotFoundError);
    CHECK_THROWS_AS(registry.by_id(-1), SchemaNotFoundError);
    CHECK_THROWS_AS(registry.latest("orders.orderplaced"), SchemaNotFoundError);  // subjects are exact
    CHECK(registry.versions("orders.OrderShipped").empty());
}

TEMPLATE_TEST_CASE("an empty subject or definition, or an overlong subject or format, is refused", "[registry]",
                   MemoryTarget) {
    TestType target;
    acemq::SchemaRegistry& registry = target.registry();
    const auto needs_both = Catch::Matchers::Message("acemq: a schema needs a subject and a definition");
    CHECK_THROWS_MATCHES(registry.register_schema("", "avro", order_v1), acemq::InvalidArgument, needs_both);
    CHECK_THROWS_MATCHES(registry.register_schema("orders.OrderPlaced", "avro", ""), acemq::InvalidArgument,
                         needs_both);
    // The columns' limits (schema_ddl), in characters: 255 é fit, 256 do not.
    std::string subject;
    for (int i = 0; i < 255; ++i) subject += "é";
    CHECK(registry.register_schema(subject, "avro", order_v1).version == 1);
    CHECK_THROWS_WITH(registry.register_schema(subject + "x", "avro", order_v1),
                      Catch::Matchers::Contains("is longer than 255 characters"));
    CHECK_THROWS_WITH(
        registry.register_schema("orders.OrderPlaced", std::string(33, 'f'), order_v1),
        Catch::Matchers::Contains("the schema format \"" + std::string(33, 'f') + "\" is longer than 32 characters"));
    CHECK(registry.versions("orders.OrderPlaced").empty());  // nothing refused was kept
}
