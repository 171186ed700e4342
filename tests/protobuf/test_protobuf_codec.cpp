// ProtobufCodec: the family's sample body both ways (read from tests/fixtures/
// codec-interop-fixtures.json, as the Go member wrote it), the content types it reads, another
// codec refusing a generated message as a body, hostile bodies refused as DecodeErrors, and a
// generated message through a bus on inproc.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <acemq/acemq.hpp>
#include <acemq/detail/value.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/msgpack_codec.hpp>
#include <acemq/protobuf_codec.hpp>
#include <acemq/testing.hpp>

#include "../support/fixtures.hpp"
#include "../support/fuzz_loop.hpp"
#include "order_placed.pb.h"
#include "order_sample.hpp"
#include "protobuf_input.hpp"
#include "with_required.pb.h"

using namespace std::chrono_literals;
using acemq::test::OrderPlaced;

namespace {

std::vector<std::byte> from_hex(std::string_view hex) {
    std::vector<std::byte> bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        bytes.push_back(static_cast<std::byte>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    return bytes;
}

// The family's protobuf sample: its body and the fields it holds, written by the Go member
// (docs/protobuf.md §2).
const boost::json::object& go_sample() {
    static const boost::json::value fixtures = fixtures::load("codec-interop-fixtures.json");
    for (const auto& sample : fixtures.at("samples").as_array())
        if (sample.at("format") == "protobuf" && sample.at("producer") == "go") return sample.as_object();
    throw std::runtime_error("codec-interop-fixtures.json has no protobuf sample from go");
}

const std::vector<std::byte> family_sample = [] {
    auto body = acemq::detail::base64_decode(fixtures::text(go_sample().at("body_base64")));
    if (!body) throw std::runtime_error("the protobuf sample's body_base64 is not base64");
    return *std::move(body);
}();

using protobuf_sample::sample_order;

const acemq::ProtobufCodec codec;

OrderPlaced decode_order(const std::vector<std::byte>& body) {
    return acemq::decode<OrderPlaced>(codec, body, acemq::content_types::protobuf);
}

}  // namespace

TEST_CASE("the family's protobuf sample decodes to the fixture's expected fields") {
    const boost::json::object& sample = go_sample();
    // the hex docs/protobuf.md §2 gives, so the fixture cannot drift from it unnoticed
    REQUIRE(family_sample == from_hex("0a036f2d31109a211a0461636d65"));
    REQUIRE(codec.can_decode(fixtures::text(sample.at("content_type"))));
    const OrderPlaced order =
        acemq::decode<OrderPlaced>(codec, family_sample, fixtures::text(sample.at("content_type")));
    const boost::json::object& expected = sample.at("expected").as_object();
    CHECK(expected.size() == 3);
    CHECK(order.order_id() == fixtures::text(expected.at("order_id")));
    CHECK(order.total_cents() == expected.at("total_cents").to_number<std::int64_t>());
    CHECK(order.tenant() == fixtures::text(expected.at("tenant")));
}

TEST_CASE("a generated message encodes to the family's sample byte for byte, as application/x-protobuf") {
    const acemq::Encoded encoded = acemq::encode(codec, sample_order());
    CHECK(encoded.content_type == "application/x-protobuf");
    CHECK(encoded.body == family_sample);
}

TEST_CASE("ProtobufCodec reads every protobuf content type the family reads and no other") {
    for (const char* type :
         {"application/x-protobuf", "application/protobuf", "application/vnd.google.protobuf",
          "application/vnd.acme.order+protobuf", "APPLICATION/X-PROTOBUF; proto=acemq.test.OrderPlaced"})
        CHECK(codec.can_decode(type));
    for (const char* type :
         {"", "application/json", "application/msgpack", "application/octet-stream", "avro/binary", "text/plain"})
        CHECK_FALSE(codec.can_decode(type));
}

TEST_CASE("a composite with ProtobufCodec reads protobuf beside JSON by content type") {
    const acemq::CompositeCodec both({std::make_shared<acemq::JsonCodec>(), std::make_shared<acemq::ProtobufCodec>()});
    CHECK(acemq::decode<OrderPlaced>(both, family_sample, "application/protobuf").tenant() == "acme");
}

TEST_CASE("ProtobufCodec refuses to write what is not a generated message") {
    struct Plain {
        std::string order_id;
    };
    CHECK_THROWS_WITH(acemq::encode(codec, Plain{"o-1"}),
                      Catch::Matchers::Contains("ProtobufCodec writes only messages protoc generated") &&
                          Catch::Matchers::Contains("not record values"));
}

TEST_CASE("hostile protobuf bodies are DecodeErrors and nothing else", "[hostile]") {
    SECTION("truncated") {
        std::vector<std::byte> body = family_sample;
        body.pop_back();
        CHECK_THROWS_AS(decode_order(body), acemq::DecodeError);
    }
    SECTION("a length of 2^62 for order_id") {
        // tag 0x0a (field 1, length-delimited), then 2^62 as a varint: nothing may be set aside for it.
        CHECK_THROWS_AS(decode_order(from_hex("0a80808080808080804041")), acemq::DecodeError);
    }
    SECTION("groups nested deeper than protobuf's recursion limit") {
        // Start-group tags of field 15 (0x7b), each closed by an end-group tag (0x7c).
        const auto nested = [](std::size_t depth) {
            std::vector<std::byte> body(depth, std::byte{0x7b});
            body.insert(body.end(), depth, std::byte{0x7c});
            return body;
        };
        CHECK_NOTHROW(decode_order(nested(50)));  // unknown fields protobuf keeps: not refused as such
        CHECK_THROWS_AS(decode_order(nested(100'000)), acemq::DecodeError);
    }
    SECTION("a wire type that does not exist") { CHECK_THROWS_AS(decode_order(from_hex("0f")), acemq::DecodeError); }
}

TEST_CASE("a refused protobuf body names the message type and what to check") {
    try {
        decode_order(from_hex("0a05"));
        FAIL("decoded a truncated body");
    } catch (const acemq::DecodeError& error) {
        CHECK(std::string(error.what()) ==
              "acemq: cannot decode an acemq::test::OrderPlaced from application/x-protobuf: the "
              "2-byte body is not a valid acemq.test.OrderPlaced (truncated, malformed or nested too deeply); "
              "check the sender's .proto and content type");
    }
}

TEST_CASE("a proto2 required field is needed both ways") {
    CHECK_THROWS_WITH(acemq::encode(codec, acemq::test::WithRequired{}),
                      Catch::Matchers::Contains("the acemq.test.WithRequired lacks required fields (id)"));
    CHECK_THROWS_WITH(acemq::decode<acemq::test::WithRequired>(codec, {}, acemq::content_types::protobuf),
                      Catch::Matchers::Contains("the acemq.test.WithRequired lacks required fields (id)"));
    acemq::test::WithRequired given;
    given.set_id("w-1");
    const acemq::Encoded encoded = acemq::encode(codec, given);
    CHECK(acemq::decode<acemq::test::WithRequired>(codec, encoded.body, encoded.content_type).id() == "w-1");
}

TEST_CASE("another codec refuses a generated message as a whole body, naming ProtobufCodec") {
    const auto protobuf = std::make_shared<acemq::ProtobufCodec>();
    const std::vector<std::shared_ptr<const acemq::Codec>> others{
        std::make_shared<acemq::JsonCodec>(), std::make_shared<acemq::MsgpackCodec>(), acemq::default_codec(),
        acemq::default_codec_reading({protobuf})};
    for (const auto& other : others) {
        CAPTURE(other->name(), other->content_type());
        try {
            acemq::encode(*other, sample_order());
            FAIL("encoded an OrderPlaced with " << other->name());
        } catch (const acemq::EncodeError& error) {
            CHECK(std::string(error.what()) ==
                  "acemq: cannot encode an acemq::test::OrderPlaced with " + std::string(other->name()) +
                      ": it is a message body only as application/x-protobuf, which " + std::string(other->name()) +
                      " does not write (it writes " + std::string(other->content_type()) +
                      "); publish it with .codec = a ProtobufCodec, or as a field of a struct to carry its bytes");
        }
    }
    // A composite that writes protobuf writes it.
    const acemq::CompositeCodec protobuf_first({protobuf, acemq::default_codec()});
    CHECK(acemq::encode(protobuf_first, sample_order()).body == family_sample);

    // Through a bus on defaults: send throws, nothing reaches the queue.
    acemq::Bus bus = acemq::connect("inproc://protobuf-" + acemq::new_uuid());
    bus.declare(acemq::Topology{}.queue("orders.placed"));
    CHECK_THROWS_AS(bus.publisher_to_queue("orders.placed").send(sample_order()), acemq::EncodeError);
    CHECK(bus.transport().queue_depth("orders.placed") == 0);
}

TEST_CASE("a generated message inside a struct travels as bytes through msgpack and JSON") {
    struct Shipment {
        std::string carrier;
        OrderPlaced order;
    };
    for (const auto& other : std::vector<std::shared_ptr<const acemq::Codec>>{std::make_shared<acemq::MsgpackCodec>(),
                                                                              std::make_shared<acemq::JsonCodec>()}) {
        const acemq::Encoded encoded = acemq::encode(*other, Shipment{"dhl", sample_order()});
        const auto back = acemq::decode<Shipment>(*other, encoded.body, encoded.content_type);
        CHECK(back.carrier == "dhl");
        CHECK(back.order.SerializeAsString() == sample_order().SerializeAsString());
    }
}

TEST_CASE("a generated message goes through a bus on inproc and a bad body is parked") {
    acemq::Bus bus = acemq::connect("inproc://protobuf-" + acemq::new_uuid());
    const acemq::testing::Harness harness{bus};
    bus.declare(acemq::Topology{}.queue("orders.placed", {.dead_letter = true}));
    const auto protobuf = std::make_shared<acemq::ProtobufCodec>();
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
                                             {.codec = protobuf});
    const acemq::Publisher publisher = bus.publisher_to_queue("orders.placed", {.codec = protobuf});
    publisher.send(sample_order());
    publisher.send_raw(acemq::Encoded{family_sample, "application/vnd.google.protobuf"});
    publisher.send_raw(acemq::Encoded{from_hex("0a80808080808080804041"), "application/x-protobuf"});
    REQUIRE(harness.wait_parked("orders.placed", 1, 10s));
    REQUIRE(harness.wait_consumed("orders.placed", 3, 10s));
    consumer.close();
    const std::lock_guard guard(lock);
    REQUIRE(seen.size() == 2);
    for (const OrderPlaced& order : seen) {
        CHECK(order.order_id() == "o-1");
        CHECK(order.total_cents() == 4250);
        CHECK(order.tenant() == "acme");
    }
    CHECK(content_types == std::vector<std::string>{"application/x-protobuf", "application/vnd.google.protobuf"});
}

TEST_CASE("fuzz: the protobuf reader ends every body in a message or a DecodeError", "[hostile]") {
    testing_support::Loop loop("protobuf");
    std::vector<std::vector<std::byte>> valid{family_sample};
    for (int i = 0; i < 16; ++i) {
        OrderPlaced order;
        order.set_order_id(std::string(loop.below(40), 'o'));
        order.set_total_cents(static_cast<std::int64_t>(loop.rng()()));
        order.set_tenant(std::string(loop.below(300), 't'));
        valid.push_back(acemq::encode(codec, order).body);
    }
    // Valid bodies decode: the check has teeth, it is not refusing everything.
    for (const auto& body : valid) REQUIRE_NOTHROW(decode_order(body));
    std::size_t turn = 0;
    loop.run(
        [&] {
            const auto& body = valid[loop.below(valid.size())];
            switch (turn++ % 4) {
            case 0: return loop.random_bytes(64);
            case 1:
                return std::vector<std::byte>(body.begin(),
                                              body.begin() + static_cast<std::ptrdiff_t>(loop.below(body.size())));
            case 2: {  // unknown groups, nested to a random depth, left open or closed
                const std::size_t depth = loop.below(400);
                std::vector<std::byte> nested(depth, std::byte{0x7b});
                nested.insert(nested.end(), loop.below(depth + 1), std::byte{0x7c});
                return nested;
            }
            default: return loop.mutated(body);
            }
        },
        [&](const std::vector<std::byte>& input) { fuzz::protobuf_input(input); });
}
