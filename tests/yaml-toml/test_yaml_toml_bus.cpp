// YAML and TOML through a bus on inproc: a consumer on default_codec_reading({yaml, toml})
// reads both (and JSON) by content type, and parks a hostile body of each.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <acemq/acemq.hpp>
#include <acemq/testing.hpp>
#include <acemq/toml_codec.hpp>
#include <acemq/yaml_codec.hpp>

#include "samples.hpp"

using namespace std::chrono_literals;
using samples::OrderPlaced;

TEST_CASE(
    "a consumer on default_codec_reading({yaml, toml}) reads YAML, TOML and JSON by content type and parks "
    "hostile bodies") {
    acemq::Bus bus = acemq::connect("inproc://yaml-toml-" + acemq::new_uuid());
    const acemq::testing::Harness harness{bus};
    bus.declare(acemq::Topology{}.queue("orders.placed", {.dead_letter = true}));
    const auto yaml = std::make_shared<acemq::YamlCodec>();
    const auto toml = std::make_shared<acemq::TomlCodec>();
    std::mutex lock;
    std::vector<OrderPlaced> seen;
    std::vector<std::string> content_types;
    auto consumer = bus.consume<OrderPlaced>("orders.placed",
                                             [&](const acemq::Message<OrderPlaced>& message) {
                                                 const std::lock_guard guard(lock);
                                                 seen.push_back(message.payload);
                                                 content_types.push_back(message.content_type);
                                                 return acemq::accept();
                                             },
                                             {.codec = acemq::default_codec_reading({yaml, toml})});
    const acemq::Publisher json = bus.publisher_to_queue("orders.placed");
    json.send(samples::expected_order());
    bus.publisher_to_queue("orders.placed", {.codec = yaml}).send(samples::expected_order());
    bus.publisher_to_queue("orders.placed", {.codec = toml}).send(samples::expected_order());
    // The family's bodies, under each content type a reader accepts for them (text/* included:
    // TextCodec, which claims every other text/ type, comes after the codecs given).
    const auto yaml_samples = samples::of_format("yaml");
    const auto toml_samples = samples::of_format("toml");
    REQUIRE(yaml_samples.size() == 2);
    REQUIRE(toml_samples.size() == 2);
    json.send_raw(acemq::Encoded{yaml_samples[0].body, "application/yaml"});
    json.send_raw(acemq::Encoded{yaml_samples[1].body, "text/yaml"});
    json.send_raw(acemq::Encoded{toml_samples[0].body, "application/toml"});
    json.send_raw(acemq::Encoded{toml_samples[1].body, "text/toml"});
    // A billion laughs and a key nested 100000 deep: each parked, the consumer carrying on.
    json.send_raw(acemq::Encoded{samples::bytes("a: &a [x, x]\nb: [*a, *a]\n"), "application/x-yaml"});
    std::string dotted = "a";
    for (int i = 0; i < 100'000; ++i) dotted += ".a";
    json.send_raw(acemq::Encoded{samples::bytes("[" + dotted + "]\n"), "application/toml"});
    REQUIRE(harness.wait_parked("orders.placed", 2, 10s));
    REQUIRE(harness.wait_consumed("orders.placed", 9, 10s));
    consumer.close();
    const std::lock_guard guard(lock);
    REQUIRE(seen.size() == 7);
    for (const OrderPlaced& order : seen) CHECK(order == samples::expected_order());
    CHECK(content_types == std::vector<std::string>{"application/json", "application/yaml", "application/toml",
                                                    "application/yaml", "text/yaml", "application/toml", "text/toml"});
}
