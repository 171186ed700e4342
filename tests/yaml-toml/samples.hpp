// The family's YAML and TOML samples (tests/fixtures/codec-interop-fixtures.json, read at test
// time: bodies Java and Go wrote) and the order they carry, for the YamlCodec and TomlCodec tests.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <acemq/json_codec.hpp>
#include <acemq/value.hpp>

#include "../support/fixtures.hpp"

namespace samples {

struct OrderPlaced {
    std::string order_id;
    std::string customer;
    std::int64_t total_cents = 0;
    std::string currency;
    std::vector<std::string> items;

    bool operator==(const OrderPlaced&) const = default;
};

inline OrderPlaced expected_order() { return {"o-1", "Ana Söderström", 4250, "EUR", {"widget", "gasket"}}; }

struct Sample {
    std::string producer;
    std::string content_type;
    std::vector<std::byte> body;
    acemq::Value expected;  // as JsonCodec reads the fixture's `expected`
};

// Every sample of `format` ("yaml", "toml") in the fixture file.
inline std::vector<Sample> of_format(std::string_view format) {
    std::vector<Sample> found;
    const boost::json::value file = fixtures::load("codec-interop-fixtures.json");
    for (const auto& sample : file.at("samples").as_array()) {
        if (sample.at("format").as_string() != format) continue;
        const auto body = acemq::detail::base64_decode(fixtures::text(sample.at("body_base64")));
        REQUIRE(body);
        const std::string expected = boost::json::serialize(sample.at("expected"));
        found.push_back(Sample{
            fixtures::text(sample.at("producer")), fixtures::text(sample.at("content_type")), *body,
            acemq::JsonCodec().decode(std::as_bytes(std::span(expected.data(), expected.size())), "application/json")});
    }
    return found;
}

// `decoded` holds what `expected` does, key by key (TOML's tables come back sorted by key),
// each value of the same kind: 4250 an integer, the items strings.
inline void check_same(const acemq::Value& decoded, const acemq::Value& expected) {
    REQUIRE(decoded.kind() == acemq::Value::Kind::map);
    CHECK(decoded.as_map().size() == expected.as_map().size());
    for (const auto& [key, value] : expected.as_map()) {
        INFO("key " << key.as_string());
        const acemq::Value* found = decoded.find(key.as_string());
        REQUIRE(found != nullptr);
        CHECK(found->kind() == value.kind());
        CHECK(*found == value);
    }
}

inline std::string text(std::span<const std::byte> body) {
    return std::string(reinterpret_cast<const char*>(body.data()), body.size());
}

inline std::vector<std::byte> bytes(std::string_view text) {
    const auto* first = reinterpret_cast<const std::byte*>(text.data());
    return std::vector<std::byte>(first, first + text.size());
}

}  // namespace samples
