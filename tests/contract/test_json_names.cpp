// JsonCodec's field naming (field_keys.hpp): the camelCase rules at their edges, round
// trips under each policy at every depth, the per-struct rename, the refusal of two fields
// sharing a key, and the bodies the Java member writes (the envelope fixtures) read into a
// C++ struct.
#include <catch2/catch.hpp>

#include <acemq/codec.hpp>
#include <acemq/error.hpp>
#include <acemq/field_keys.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/msgpack_codec.hpp>
#include <acemq/reflect.hpp>
#include <acemq/value.hpp>

#include <boost/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../support/codec_bodies.hpp"
#include "../support/fixtures.hpp"

namespace {

using acemq::FieldNames;
using acemq::Value;
using testing_support::bytes_of;
using testing_support::decode_error_of;
using testing_support::encode_error_of;

struct LineItem {
    std::string sku_code;
    std::uint32_t unit_count;
    bool operator==(const LineItem&) const = default;
};

struct Address {
    std::string street_name;
    std::optional<std::string> post_code;
    bool operator==(const Address&) const = default;
};

struct Order {
    std::string order_id;
    std::int64_t total_cents;
    std::vector<LineItem> line_items;
    std::optional<Address> ship_to;
    std::map<std::string, LineItem> by_sku;  // map keys are data: never renamed
    std::string id;
    bool operator==(const Order&) const = default;
};

const Order order{"A-1", 4250, {{"x", 2}, {"y", 1}}, Address{"Main St", std::nullopt}, {{"sku_x", {"x", 2}}}, "i-1"};

// The sku is "SKU" on the wire and class_ is named after a C++ keyword.
struct Legacy {
    std::string sku;
    std::string class_;
    std::string order_id;
    bool operator==(const Legacy&) const = default;
};

// Both fields are "orderId" in camelCase.
struct Twins {
    std::string order_id;
    std::string orderId;
};

// A rename onto another field's key, which clashes under every policy.
struct Crowded {
    std::string a;
    std::string b;
};

// A rename onto the C++ name of another field, which that field reads when its camelCase
// key is absent: the rename wins that key.
struct Shadowed {
    std::string legacy;
    std::string order_id;
    bool operator==(const Shadowed&) const = default;
};

struct FixtureOrder {
    std::string id;
};

const acemq::JsonCodec camel;  // the default
const acemq::JsonCodec as_is{{.names = FieldNames::as_is}};

std::string text_of(const std::vector<std::byte>& bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

template <class T>
std::string json_of(const acemq::Codec& codec, const T& value) {
    return text_of(acemq::encode(codec, value).body);
}

template <class T>
T read(const acemq::Codec& codec, std::string_view json) {
    return acemq::decode<T>(codec, bytes_of(json), "application/json");
}

}  // namespace

template <>
struct acemq::field_keys<Legacy> {
    static constexpr acemq::FieldKey renamed[] = {{"sku", "SKU"}};
};

template <>
struct acemq::field_keys<Crowded> {
    static constexpr acemq::FieldKey renamed[] = {{"a", "b"}};
};

template <>
struct acemq::field_keys<Shadowed> {
    static constexpr acemq::FieldKey renamed[] = {{"legacy", "order_id"}};
};

TEST_CASE("camelCase keys from C++ names, at the edges of the rules") {
    const std::map<std::string, std::string> cases{
        {"order_id", "orderId"},
        {"total_cents", "totalCents"},
        {"id", "id"},
        {"orderId", "orderId"},  // already camelCase
        {"URL", "URL"},          // capitals stay
        {"http_URL", "httpURL"},
        {"order_Id", "orderId"},
        {"sha256", "sha256"},        // digits stay
        {"line_2_sku", "line2Sku"},  // a digit after an underscore is not capitalised
        {"item_2", "item2"},
        {"x_1y", "x1y"},
        {"a__b", "aB"},  // a run of underscores is one separator
        {"a___b_c", "aBC"},
        {"_id", "_id"},  // leading underscores stay
        {"__private_key", "__privateKey"},
        {"class_", "class"},  // trailing underscores go
        {"default__", "default"},
        {"_lead_and_trail_", "_leadAndTrail"},
        {"_", "_"},  // underscores only: as it is
        {"__", "__"},
        {"", ""},
        {"a_\xC3\xA9t\xC3\xA9", "a\xC3\xA9t\xC3\xA9"},  // only ASCII letters change case
    };
    for (const auto& [name, key] : cases) {
        INFO("name \"" << name << "\"");
        CHECK(acemq::camel_case(name) == key);
    }
    // The compiler's table of a struct is the same conversion.
    static_assert(acemq::detail::camel_case_keys<Order>.key[0] == "orderId");
    static_assert(acemq::detail::camel_case_keys<Order>.key[2] == "lineItems");
    static_assert(acemq::detail::camel_case_keys<Order>.fallback[2] == "line_items");
    static_assert(acemq::detail::camel_case_keys<Order>.fallback[5].empty());  // id is id
    static_assert(acemq::detail::as_is_keys<Order>.key[2] == "line_items");
}

TEST_CASE("camelCase is the default and applies at every depth; as_is writes C++ names") {
    const std::string camel_json =
        R"({"orderId":"A-1","totalCents":4250,"lineItems":[{"skuCode":"x","unitCount":2},)"
        R"({"skuCode":"y","unitCount":1}],"shipTo":{"streetName":"Main St","postCode":null},)"
        R"("bySku":{"sku_x":{"skuCode":"x","unitCount":2}},"id":"i-1"})";
    const std::string as_is_json =
        R"({"order_id":"A-1","total_cents":4250,"line_items":[{"sku_code":"x","unit_count":2},)"
        R"({"sku_code":"y","unit_count":1}],"ship_to":{"street_name":"Main St","post_code":null},)"
        R"("by_sku":{"sku_x":{"sku_code":"x","unit_count":2}},"id":"i-1"})";
    CHECK(json_of(camel, order) == camel_json);
    CHECK(json_of(acemq::JsonCodec{{.names = FieldNames::camel_case}}, order) == camel_json);
    CHECK(json_of(acemq::JsonCodec(100), order) == camel_json);  // max_values alone keeps the default
    CHECK(json_of(as_is, order) == as_is_json);
    CHECK(read<Order>(camel, camel_json) == order);
    CHECK(read<Order>(as_is, as_is_json) == order);
    // What default_codec() reads as JSON is camelCase; msgpack stays positional.
    CHECK(read<Order>(*acemq::default_codec(), camel_json) == order);
    const acemq::MsgpackCodec msgpack;
    CHECK(acemq::decode<Order>(msgpack, acemq::encode(msgpack, order).body, "application/msgpack") == order);
    // A Value record keeps the keys it holds: it has no C++ fields to name.
    CHECK(text_of(camel.encode(Value(Value::Record{{"order_id", Value(1)}}))) == R"({"order_id":1})");
    CHECK(acemq::to_value(LineItem{"x", 2}) ==
          Value(Value::Record{{"sku_code", Value("x")}, {"unit_count", Value(2)}}));
}

TEST_CASE("reading under camelCase: C++ names as a fallback, unknown keys ignored") {
    SECTION("a document written with C++ names still reads") {
        CHECK(read<LineItem>(camel, R"({"sku_code":"x","unit_count":2})") == LineItem{"x", 2});
        CHECK(read<LineItem>(camel, R"({"sku_code":"x","unitCount":2})") == LineItem{"x", 2});
    }
    SECTION("the camelCase key wins when both are there, in either order") {
        CHECK(read<LineItem>(camel, R"({"sku_code":"old","skuCode":"new","unitCount":2})").sku_code == "new");
        CHECK(read<LineItem>(camel, R"({"skuCode":"new","sku_code":"old","unitCount":2})").sku_code == "new");
    }
    SECTION("keys that match no field are ignored under both policies") {
        CHECK(read<LineItem>(camel, R"({"skuCode":"x","extra":[1],"unitCount":2,"SkuCode":"no"})") == LineItem{"x", 2});
        CHECK(read<LineItem>(as_is, R"({"sku_code":"x","unit_count":2,"skuCode":"no"})") == LineItem{"x", 2});
    }
    SECTION("a missing field names its key and its C++ name") {
        CHECK(decode_error_of([] { (void)read<LineItem>(camel, R"({"skuCode":"x"})"); }) ==
              "acemq: cannot decode a LineItem from application/json: the LineItem has no field "
              "\"unitCount\" (unit_count in C++; send it, or declare the field std::optional)");
        CHECK(decode_error_of([] { (void)read<FixtureOrder>(camel, R"({})"); }) ==
              "acemq: cannot decode a FixtureOrder from application/json: the FixtureOrder has no "
              "field \"id\" (send it, or declare the field std::optional)");
    }
    SECTION("an absent optional field is nullopt, under either spelling") {
        CHECK(read<Address>(camel, R"({"streetName":"Main St"})") == Address{"Main St", std::nullopt});
        CHECK(read<Address>(camel, R"({"streetName":"s","post_code":"9"})").post_code == "9");
    }
    SECTION("as_is reads only the C++ names") {
        CHECK(decode_error_of([] { (void)read<LineItem>(as_is, R"({"skuCode":"x","unitCount":2})"); }) ==
              "acemq: cannot decode a LineItem from application/json: the LineItem has no field "
              "\"sku_code\" (send it, or declare the field std::optional)");
    }
    SECTION("errors still give the C++ path") {
        CHECK(decode_error_of([] {
                  (void)read<Order>(camel, R"({"orderId":"A","totalCents":1,"lineItems":[{"skuCode":"x",)"
                                           R"("unitCount":-1}],"bySku":{},"id":"i"})");
              }) ==
              "acemq: cannot decode an Order from application/json: Order.line_items[0].unit_count: "
              "-1 does not fit in uint32_t (0..4294967295)");
    }
}

TEST_CASE("a renamed field has its key under every policy") {
    const Legacy legacy{"s-1", "c", "o-1"};
    CHECK(json_of(camel, legacy) == R"({"SKU":"s-1","class":"c","orderId":"o-1"})");
    CHECK(json_of(as_is, legacy) == R"({"SKU":"s-1","class_":"c","order_id":"o-1"})");
    CHECK(read<Legacy>(camel, R"({"SKU":"s-1","class":"c","orderId":"o-1"})") == legacy);
    CHECK(read<Legacy>(as_is, R"({"SKU":"s-1","class_":"c","order_id":"o-1"})") == legacy);
    CHECK(acemq::to_value(legacy).find("SKU") != nullptr);
    // The rename is the one key: the C++ name is not read in its place.
    CHECK(decode_error_of([] { (void)read<Legacy>(camel, R"({"sku":"s","class":"c","orderId":"o"})"); }) ==
          "acemq: cannot decode a Legacy from application/json: the Legacy has no field \"SKU\" "
          "(sku in C++; send it, or declare the field std::optional)");
    SECTION("a rename taking another field's C++ name leaves that field its camelCase key only") {
        CHECK(read<Shadowed>(camel, R"({"order_id":"l","orderId":"o"})") == Shadowed{"l", "o"});
        CHECK(decode_error_of([] {
                  (void)read<Shadowed>(camel, R"({"order_id":"l"})");
              }).find("has no field \"orderId\"") != std::string::npos);
    }
}

TEST_CASE("two fields with one key are refused, naming both, under the policy that joins them") {
    const Twins twins{"a", "b"};
    CHECK(encode_error_of([&] { (void)acemq::encode(camel, twins); }) ==
          "acemq: cannot encode a Twins with JsonCodec: the Twins fields order_id and orderId both have "
          "the key \"orderId\" under FieldNames::camel_case; give one another key with "
          "acemq::field_keys<Twins>, or rename it");
    CHECK(decode_error_of([] { (void)read<Twins>(camel, R"({"orderId":"a"})"); }) ==
          "acemq: cannot decode a Twins from application/json: the Twins fields order_id and orderId "
          "both have the key \"orderId\" under FieldNames::camel_case; give one another key with "
          "acemq::field_keys<Twins>, or rename it");
    // As is, they are two keys.
    CHECK(json_of(as_is, twins) == R"({"order_id":"a","orderId":"b"})");
    CHECK(read<Twins>(as_is, R"({"order_id":"a","orderId":"b"})").orderId == "b");
    // A rename that clashes does so under both.
    for (const acemq::JsonCodec* codec : {&camel, &as_is}) {
        CHECK_THAT(encode_error_of([&] {
                       (void)acemq::encode(*codec, Crowded{"1", "2"});
                   }),
                   Catch::Contains("the Crowded fields a and b both have the key \"b\""));
        CHECK_THAT(decode_error_of([&] { (void)read<Crowded>(*codec, R"({"b":"2"})"); }),
                   Catch::Contains("the Crowded fields a and b both have the key \"b\""));
    }
    // Nested, the clash is found as deep as it is.
    struct Holder {
        std::vector<Twins> twins;
    };
    CHECK_THAT(encode_error_of([&] { (void)acemq::encode(camel, Holder{{twins}}); }),
               Catch::Contains("the Twins fields order_id and orderId"));
}

TEST_CASE("the Java member's fixture bodies read into a C++ struct") {
    // Each body is a JSON string whose text is itself a JSON document: the Java member
    // published a String payload holding {"id":"o-1"}.
    const auto document = fixtures::load("envelope-fixtures.json");
    const auto& cases = document.at("cases").as_array();
    REQUIRE(cases.size() >= 3);
    for (const auto& fixture_case : cases) {
        const std::string name = fixtures::text(fixture_case.at("case"));
        INFO("case " << name);
        const std::string body = fixtures::text(fixture_case.at("body"));
        const std::string content_type = fixtures::text(fixture_case.at("contentType"));
        const std::string expected_id =
            fixtures::text(boost::json::parse(boost::json::parse(body).as_string()).at("id"));
        for (const acemq::Codec* codec : {static_cast<const acemq::Codec*>(&camel),
                                          static_cast<const acemq::Codec*>(&as_is), acemq::default_codec().get()}) {
            const auto inner = acemq::decode<std::string>(*codec, bytes_of(body), content_type);
            CHECK(acemq::decode<FixtureOrder>(*codec, bytes_of(inner), content_type).id == expected_id);
        }
    }
}
