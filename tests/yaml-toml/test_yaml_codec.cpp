// YamlCodec: the Java and Go members' samples read as a Value and as a struct, our own bodies
// read back (integers as integers, strings as strings), the content types, and hostile
// bodies refused as DecodeErrors (aliases, nesting, size, UTF-8).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <acemq/yaml_codec.hpp>

#include "samples.hpp"

using acemq::Value;
using samples::OrderPlaced;

namespace {

const acemq::YamlCodec yaml;

Value decode_yaml(std::string_view text) { return yaml.decode(samples::bytes(text), acemq::content_types::yaml); }

template <class T>
T decode_as(std::string_view text) {
    return acemq::decode<T>(yaml, samples::bytes(text), acemq::content_types::yaml);
}

// A "billion laughs": each level an alias repeated ten times, 10^levels strings in all.
std::string billion_laughs(int levels) {
    std::string text = "a0: &a0 lol\n";
    for (int level = 1; level <= levels; ++level) {
        text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
        for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(level - 1);
        text += "]\n";
    }
    return text;
}

}  // namespace

TEST_CASE("the Java and Go YAML samples decode to the fixture's expected value, as a Value and into a struct") {
    const auto all = samples::of_format("yaml");
    REQUIRE(all.size() == 2);  // java: list items at column 0; go: indented four spaces
    for (const auto& sample : all) {
        INFO(sample.producer);
        CHECK(yaml.can_decode(sample.content_type));
        samples::check_same(yaml.decode(sample.body, sample.content_type), sample.expected);
        CHECK(acemq::decode<OrderPlaced>(yaml, sample.body, sample.content_type) == samples::expected_order());
    }
}

TEST_CASE("YamlCodec writes application/yaml, camelCase keys, and reads its own body back") {
    const acemq::Encoded encoded = acemq::encode(yaml, samples::expected_order());
    CHECK(encoded.content_type == "application/yaml");
    CHECK(samples::text(encoded.body) ==
          "orderId: o-1\ncustomer: Ana Söderström\ntotalCents: 4250\ncurrency: EUR\nitems:\n  - widget\n  - gasket\n");
    CHECK(acemq::decode<OrderPlaced>(yaml, encoded.body, encoded.content_type) == samples::expected_order());
    const Value tree = yaml.decode(encoded.body, encoded.content_type);
    CHECK(tree.find("totalCents")->kind() == Value::Kind::int64);
    CHECK(tree.find("orderId")->kind() == Value::Kind::string);
}

TEST_CASE("YAML strings that look like booleans, nulls or numbers are written quoted and read back as strings") {
    struct Words {
        std::vector<std::string> words;
    };
    const Words given{{"no", "on",  "yes",  "off",        "y",    "true",  "False",      "null", "~",
                       "",   "1.0", "4250", "0x1f",       "0o17", "1_000", "1e3",        ".inf", "-.5",
                       "+1", "-",   "o-1",  "plain text", "a: b", "#hash", "line\nbreak"}};
    const acemq::Encoded encoded = acemq::encode(yaml, given);
    const std::string text = samples::text(encoded.body);
    for (const char* quoted : {"\"no\"", "\"on\"", "\"true\"", "\"1.0\"", "\"4250\"", "\"~\"", "\"\""}) {
        INFO(quoted);
        CHECK(text.find(quoted) != std::string::npos);
    }
    CHECK(acemq::decode<Words>(yaml, encoded.body, encoded.content_type).words == given.words);
}

TEST_CASE("unquoted YAML scalars follow YAML 1.2's core schema") {
    const Value tree = decode_yaml(
        "int: 4250\nneg: -7\nhex: 0x1f\noct: 0o17\nbig: 18446744073709551615\nfloat: 1.0\nexp: 1e3\ninf: -.inf\n"
        "t: true\nnull1: ~\nnull2:\nno: no\non: on\nquoted: '4250'\ndq: \"true\"\n");
    CHECK(tree.find("int")->as_int64() == 4250);
    CHECK(tree.find("int")->kind() == Value::Kind::int64);
    CHECK(tree.find("neg")->as_int64() == -7);
    CHECK(tree.find("hex")->as_int64() == 31);
    CHECK(tree.find("oct")->as_int64() == 15);
    CHECK(tree.find("big")->kind() == Value::Kind::uint64);
    CHECK(tree.find("float")->kind() == Value::Kind::float64);
    CHECK(tree.find("exp")->as_double() == 1000.0);
    CHECK(tree.find("inf")->as_double() == -std::numeric_limits<double>::infinity());
    CHECK(tree.find("t")->as_bool());
    CHECK(tree.find("null1")->is_null());
    CHECK(tree.find("null2")->is_null());
    // YAML 1.1's booleans are strings in 1.2 (and in Go's yaml.v3).
    CHECK(tree.find("no")->as_string() == "no");
    CHECK(tree.find("on")->as_string() == "on");
    CHECK(tree.find("quoted")->as_string() == "4250");
    CHECK(tree.find("dq")->as_string() == "true");
}

TEST_CASE("an unquoted number or boolean is not read into a string field, naming the field") {
    struct Labelled {
        std::string label;
    };
    CHECK(decode_as<Labelled>("label: no\n").label == "no");
    CHECK_THROWS_WITH(decode_as<Labelled>("label: 1.0\n"),
                      Catch::Matchers::Contains("Labelled") && Catch::Matchers::Contains("label"));
    CHECK_THROWS_AS(decode_as<Labelled>("label: true\n"), acemq::DecodeError);
}

TEST_CASE("every kind of value YamlCodec writes comes back as it went") {
    struct Line {
        std::string sku;
        std::int32_t quantity = 0;
        bool operator==(const Line&) const = default;
    };
    struct Everything {
        std::optional<std::string> note;
        std::optional<std::int64_t> absent;
        double ratio = 0;
        double whole = 0;
        std::uint64_t big = 0;
        std::int64_t smallest = 0;
        bool flag = false;
        std::vector<std::byte> blob;
        std::vector<Line> lines;
        std::map<std::string, std::int64_t> counts;
        std::map<std::int64_t, std::string> by_number;
        std::vector<std::vector<std::string>> nested;
        bool operator==(const Everything&) const = default;
    };
    const Everything given{"a note",
                           std::nullopt,
                           0.1,
                           2.0,
                           std::numeric_limits<std::uint64_t>::max(),
                           std::numeric_limits<std::int64_t>::min(),
                           true,
                           {std::byte{0}, std::byte{0xff}, std::byte{'\n'}},
                           {{"w-1", 2}, {"g-7", 1}},
                           {{"on", 1}, {"1.5", 2}},
                           {{7, "seven"}, {-1, "minus one"}},
                           {{}, {"x"}}};
    const acemq::Encoded encoded = acemq::encode(yaml, given);
    INFO(samples::text(encoded.body));
    CHECK(acemq::decode<Everything>(yaml, encoded.body, encoded.content_type) == given);
    CHECK(yaml.decode(encoded.body, encoded.content_type).find("whole")->kind() == Value::Kind::float64);
    const Value nan = yaml.decode(yaml.encode(Value(std::numeric_limits<double>::quiet_NaN())), "application/yaml");
    CHECK(std::isnan(nan.as_double()));
}

TEST_CASE("YamlCodec reads every YAML content type and no other, never an untyped message") {
    for (const char* type : {"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml",
                             "application/vnd.acme.order+yaml", "APPLICATION/YAML; charset=utf-8"})
        CHECK(yaml.can_decode(type));
    for (const char* type : {"", "application/json", "text/plain", "application/toml", "application/octet-stream"})
        CHECK_FALSE(yaml.can_decode(type));
}

TEST_CASE("hostile YAML bodies are DecodeErrors that say what was wrong") {
    using Catch::Matchers::Contains;
    SECTION("a billion laughs: aliases are refused, nothing is expanded") {
        CHECK_THROWS_WITH(decode_yaml(billion_laughs(9)), Contains("alias") && Contains("line 2"));
        CHECK_THROWS_AS(decode_yaml("a: &x 1\nb: *x\n"), acemq::DecodeError);
        CHECK(decode_yaml("a: &x 1\n").find("a")->as_int64() == 1);  // an anchor alone is harmless
    }
    SECTION("nesting past max_depth, in flow and block style, however deep") {
        const auto flow = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
        CHECK_NOTHROW(decode_yaml(flow(acemq::YamlCodec::max_depth)));
        CHECK_THROWS_WITH(decode_yaml(flow(acemq::YamlCodec::max_depth + 1)), Contains("deeper than 64 levels"));
        CHECK_THROWS_AS(decode_yaml(std::string(1'000'000, '[')), acemq::DecodeError);
        std::string compact;  // "- - - x": a sequence in a sequence, ...
        for (std::size_t i = 0; i < 100'000; ++i) compact += "- ";
        CHECK_THROWS_WITH(decode_yaml(compact + "x"), Contains("deeper than 64 levels"));
        std::string block;
        for (std::size_t i = 0; i < 200; ++i) block += std::string(i, ' ') + "k:\n";
        CHECK_THROWS_WITH(decode_yaml(block), Contains("deeper than 64 levels"));
    }
    SECTION("more values than max_values") {
        const acemq::YamlCodec small(10);
        CHECK_NOTHROW(small.decode(samples::bytes("[1, 2, 3, 4, 5, 6, 7, 8, 9]"), "application/yaml"));
        CHECK_THROWS_WITH(small.decode(samples::bytes("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"), "application/yaml"),
                          Contains("more than 10 values"));
    }
    SECTION("a body that is not UTF-8") {
        CHECK_THROWS_WITH(decode_yaml("name: \xff\xfe\n"), Contains("not valid UTF-8 (bad byte at offset 6)"));
        CHECK_THROWS_AS(decode_yaml(std::string("\xff\xfe"
                                                "a\0:\0 \0b\0",
                                                10)),
                        acemq::DecodeError);  // UTF-16
    }
    SECTION("more than one document, none, and what is not YAML") {
        CHECK_THROWS_WITH(decode_yaml("a: 1\n---\nb: 2\n"), Contains("more than one document"));
        CHECK_THROWS_WITH(decode_yaml(""), Contains("no document"));
        CHECK_THROWS_WITH(decode_yaml("a: [1, 2\n"), Contains("not valid YAML"));
        CHECK_THROWS_WITH(decode_yaml("a: !custom 1\n"), Contains("tag !custom"));
        CHECK_THROWS_WITH(decode_yaml("a: !!int x\n"), Contains("tagged !!int"));
        CHECK_THROWS_WITH(decode_yaml("a: !!binary '%%%'\n"), Contains("not base64"));
        CHECK_THROWS_WITH(decode_yaml("a: 1e999\n"), Contains("out of a double's range"));
    }
}

TEST_CASE("YamlCodec refuses to write what it would not read back") {
    using Catch::Matchers::Contains;
    CHECK_THROWS_WITH(acemq::encode(yaml, std::string("\xff")), Contains("not valid UTF-8"));
    Value deep = Value(Value::Array{});
    for (std::size_t i = 0; i < acemq::YamlCodec::max_depth; ++i) deep = Value(Value::Array{deep});
    CHECK_THROWS_WITH(acemq::encode(yaml, deep), Contains("deeper than 64 levels"));
    CHECK_THROWS_AS(acemq::YamlCodec(0), acemq::InvalidArgument);
}
