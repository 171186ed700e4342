// ClaimCheckCodec and its stores against the family's framing (docs/wire-contract.md §8.2,
// the family's patterns item 58): framing bytes, the threshold boundary, bodies another member
// wrote, unframed bodies passed through, a missing payload, and the filesystem store's atomic
// and path-safe files.
#include <catch2/catch.hpp>

#include <acemq/bus.hpp>
#include <acemq/claim_check.hpp>
#include <acemq/codec.hpp>
#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/testing.hpp>
#include <acemq/topology.hpp>
#include <acemq/transport.hpp>
#include <acemq/uuid.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<std::byte>;

Bytes bytes_of(std::string_view text) {
    Bytes out;
    for (char c : text) out.push_back(static_cast<std::byte>(c));
    return out;
}

Bytes framed(std::uint8_t kind, const Bytes& rest) {
    Bytes out(3 + rest.size());
    out[0] = std::byte{0xAC};
    out[1] = std::byte{0x01};
    out[2] = std::byte{kind};
    for (std::size_t i = 0; i < rest.size(); ++i) out[3 + i] = rest[i];
    return out;
}

std::string decode_error(const acemq::Codec& codec, std::span<const std::byte> body) {
    try {
        codec.decode(body, "application/octet-stream");
    } catch (const acemq::DecodeError& e) {
        return e.what();
    }
    FAIL("decoded a body it should have refused");
    return {};
}

struct Shipment {
    std::string shipment_id;
    std::string manifest;
};

struct TempDir {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("acemq-claims-" + acemq::new_uuid());
    ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("claim check frames inline below the threshold and claims at it") {
    auto store = std::make_shared<acemq::InMemoryClaimCheckStore>();
    const acemq::ClaimCheckCodec codec(std::make_shared<acemq::BytesCodec>(), store, 64);
    CHECK(acemq::ClaimCheckCodec::default_threshold == 65536);
    CHECK(acemq::ClaimCheckCodec(std::make_shared<acemq::BytesCodec>(), store).threshold() == 65536);
    CHECK(codec.content_type() == "application/octet-stream");

    const Bytes small(63, std::byte{'s'});
    const Bytes body = codec.encode(acemq::Value(small));
    CHECK(body == framed(0x00, small));
    CHECK(store->size() == 0);
    CHECK(acemq::is_claim_check(body));
    CHECK_FALSE(acemq::claim_key_of(body).has_value());

    const Bytes large(64, std::byte{'L'});
    const Bytes claimed = codec.encode(acemq::Value(large));
    REQUIRE(claimed.size() == 3 + 36);
    CHECK(Bytes(claimed.begin(), claimed.begin() + 3) == framed(0x01, {}));
    const std::optional<std::string> key = acemq::claim_key_of(claimed);
    REQUIRE(key.has_value());
    CHECK(acemq::is_canonical_uuid(*key));
    CHECK(store->get(*key) == large);
    CHECK(codec.decode(claimed, "") == acemq::Value(large));
    CHECK(codec.decode(body, "") == acemq::Value(small));

    const acemq::ClaimCheckCodec everything(std::make_shared<acemq::BytesCodec>(), store, 0);
    CHECK(acemq::claim_key_of(everything.encode(acemq::Value(Bytes{}))).has_value());
}

TEST_CASE("claim check reads what another member wrote and passes unframed bodies to the delegate") {
    auto store = std::make_shared<acemq::InMemoryClaimCheckStore>();
    const acemq::ClaimCheckCodec codec(std::make_shared<acemq::JsonCodec>(), store);
    const acemq::Value expected(
        acemq::Value::Map{{acemq::Value(std::string("orderId")), acemq::Value(std::string("o-1"))}});

    // As Java writes them: inline JSON, and a key of its store.
    CHECK(codec.decode(framed(0x00, bytes_of(R"({"orderId":"o-1"})")), "application/json") == expected);
    const std::string key = store->put(bytes_of(R"({"orderId":"o-1"})"));
    CHECK(codec.decode(framed(0x01, bytes_of(key)), "application/json") == expected);

    // No header, another version, another kind: the delegate's, untouched.
    CHECK(codec.decode(bytes_of(R"({"orderId":"o-1"})"), "application/json") == expected);
    const acemq::ClaimCheckCodec bytes(std::make_shared<acemq::BytesCodec>(), store);
    for (const Bytes& body :
         {Bytes{std::byte{0xAC}, std::byte{0x02}, std::byte{0x00}, std::byte{'x'}},
          Bytes{std::byte{0xAC}, std::byte{0x01}, std::byte{0x02}}, Bytes{std::byte{0xAC}, std::byte{0x01}}, Bytes{}}) {
        CHECK_FALSE(acemq::is_claim_check(body));
        CHECK(bytes.decode(body, "application/octet-stream") == acemq::Value(body));
    }
}

TEST_CASE("a claimed payload missing from the store is a DecodeError naming the store and its retention") {
    const acemq::ClaimCheckCodec codec(std::make_shared<acemq::BytesCodec>(),
                                       std::make_shared<acemq::InMemoryClaimCheckStore>());
    const std::string message = decode_error(codec, framed(0x01, bytes_of(acemq::new_uuid())));
    CHECK_THAT(message, Catch::Contains("not in the store"));
    CHECK_THAT(message, Catch::Contains("retention"));
}

TEST_CASE(
    "the filesystem store writes whole files under fresh keys and refuses keys that are no file name of its own") {
    // Deep enough that every hostile key below resolves inside this directory, to canaries
    // planted there, never to a file of the system: a store whose key check broke must not
    // delete /etc/passwd while its test is finding out.
    const TempDir dir;
    auto store = std::make_shared<acemq::FilesystemClaimCheckStore>(dir.path / "a" / "b" / "nested");
    const std::filesystem::path absolute_canary = dir.path / "canary";
    const std::filesystem::path relative_canary = dir.path / "a" / "etc" / "passwd";
    std::filesystem::create_directories(relative_canary.parent_path());
    std::ofstream(absolute_canary) << "keep me";
    std::ofstream(relative_canary) << "keep me";
    const Bytes payload(100'000, std::byte{0x5A});
    const std::string key = store->put(payload);
    CHECK(acemq::is_canonical_uuid(key));
    CHECK(store->get(key) == payload);
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(store->directory()))
        files.push_back(entry.path().filename().string());
    CHECK(files == std::vector<std::string>{key});  // no .partial left behind
    store->remove(key);
    store->remove(key);
    CHECK_FALSE(store->get(key).has_value());
    CHECK_FALSE(store->get("Abc.1_2-3").has_value());

    for (const std::string& bad : std::vector<std::string>{"../../etc/passwd", absolute_canary.string(), "", ".hidden",
                                                           "a/b", std::string(129, 'a')}) {
        CAPTURE(bad);
        CHECK_THROWS_WITH(store->get(bad), Catch::Contains("is not a key this claim-check store issued"));
        CHECK_THROWS_AS(store->remove(bad), acemq::InvalidArgument);
    }
    CHECK(std::filesystem::exists(absolute_canary));
    CHECK(std::filesystem::exists(relative_canary));

    const acemq::ClaimCheckCodec codec(std::make_shared<acemq::BytesCodec>(), store, 10);
    const std::string message = decode_error(codec, framed(0x01, bytes_of("../../etc/passwd")));
    CHECK_THAT(message, Catch::Contains("\"../../etc/passwd\" is not a key this claim-check store issued"));
    const Bytes body = codec.encode(acemq::Value(payload));
    CHECK(codec.decode(body, "") == acemq::Value(payload));
}

TEST_CASE("through a bus, a large payload travels as its key and is read back whole") {
    using namespace std::chrono_literals;
    acemq::Bus bus = acemq::connect("inproc://claims-" + acemq::new_uuid());
    const acemq::testing::Harness harness{bus};
    const std::string queue = "shipments.claimed";
    bus.declare(acemq::Topology{}.queue(queue, {.dead_letter = true}).queue(queue + ".wire"));
    auto store = std::make_shared<acemq::InMemoryClaimCheckStore>();
    const auto codec = std::make_shared<acemq::ClaimCheckCodec>(std::make_shared<acemq::JsonCodec>(), store, 1024);
    const Shipment big{"s-1", std::string(100'000, 'm')};

    bus.publisher_to_queue(queue + ".wire", {.codec = codec}).send(big);
    const std::optional<acemq::Delivery> held = bus.transport().pull(queue + ".wire");
    REQUIRE(held.has_value());
    CHECK(held->message().body.size() == 3 + 36);
    CHECK(held->message().content_type == "application/json");

    std::string manifest;
    auto consumer = bus.consume<Shipment>(queue,
                                          [&](const acemq::Message<Shipment>& message) {
                                              manifest = message.payload.manifest;
                                              return acemq::accept();
                                          },
                                          {.codec = codec});
    bus.publisher_to_queue(queue, {.codec = codec}).send(big);
    REQUIRE(harness.wait_settled(queue, acemq::Outcome::acked, 1, 10s));
    consumer.close();
    CHECK(manifest == big.manifest);
    CHECK(store->size() == 2);
}
