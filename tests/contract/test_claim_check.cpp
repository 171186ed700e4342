// ClaimCheckCodec and its stores against the family's framing (docs/wire-contract.md §8.2,
// the family's patterns item 58): framing bytes, the threshold boundary, bodies another member
// wrote, unframed bodies passed through, a missing payload, the filesystem store's atomic
// and path-safe files, and a store that fails: retried through a bus, where a missing payload
// is parked.
#include <catch2/catch.hpp>

#include <acemq/bus.hpp>
#include <acemq/claim_check.hpp>
#include <acemq/codec.hpp>
#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/naming.hpp>
#include <acemq/stream.hpp>
#include <acemq/testing.hpp>
#include <acemq/topology.hpp>
#include <acemq/transport.hpp>
#include <acemq/uuid.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "../support/codec_bodies.hpp"

namespace {

using testing_support::bytes_of;

using Bytes = std::vector<std::byte>;

Bytes framed(std::uint8_t kind, const Bytes& rest) {
    Bytes out(3 + rest.size());
    out[0] = std::byte{0xAC};
    out[1] = std::byte{0x01};
    out[2] = std::byte{kind};
    for (std::size_t i = 0; i < rest.size(); ++i) out[3 + i] = rest[i];
    return out;
}

std::string claim_error(const acemq::Codec& codec, std::span<const std::byte> body) {
    return testing_support::decode_error_of([&] { codec.decode(body, "application/octet-stream"); });
}

struct Shipment {
    std::string shipment_id;
    std::string manifest;
};

struct TempDir {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("acemq-claims-" + acemq::new_uuid());
    ~TempDir() { std::filesystem::remove_all(path); }
};

// An in-memory store whose first `failures` reads fail, as a disk or a database that comes
// back would; `failure` says what it throws.
class FlakyStore final : public acemq::ClaimCheckStore {
public:
    explicit FlakyStore(
        int failures, std::function<void()> failure =
                          [] { throw acemq::StoreUnavailableError("acemq: the claims disk is not mounted"); })
        : failures_(failures), failure_(std::move(failure)) {}
    std::string put(std::span<const std::byte> payload) override { return inner_.put(payload); }
    std::optional<Bytes> get(std::string_view key) const override {
        if (reads_.fetch_add(1) < failures_) failure_();
        return inner_.get(key);
    }
    void remove(std::string_view key) override { inner_.remove(key); }
    int reads() const { return reads_.load(); }

private:
    acemq::InMemoryClaimCheckStore inner_;
    const int failures_;
    const std::function<void()> failure_;
    mutable std::atomic<int> reads_{0};
};

std::string error_header(const acemq::Delivery& delivery) {
    return std::get<std::string>(delivery.message().headers().at(std::string(acemq::header::error)).get());
}

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
    const std::string message = claim_error(codec, framed(0x01, bytes_of(acemq::new_uuid())));
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
    const std::string message = claim_error(codec, framed(0x01, bytes_of("../../etc/passwd")));
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
    CHECK(held->message().body().size() == 3 + 36);
    CHECK(held->message().content_type() == "application/json");

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

TEST_CASE("a store that fails is a StoreUnavailableError, one the codec cannot use a DecodeError") {
    const TempDir dir;
    auto store = std::make_shared<acemq::FilesystemClaimCheckStore>(dir.path);
    const acemq::ClaimCheckCodec codec(std::make_shared<acemq::BytesCodec>(), store, 0);

    // A payload that cannot be read: its name taken by a directory, which opens but never reads.
    const std::string key = acemq::new_uuid();
    std::filesystem::create_directory(dir.path / key);
    CHECK_THROWS_AS(store->get(key), acemq::StoreUnavailableError);
    CHECK_THROWS_WITH(codec.decode(framed(0x01, bytes_of(key)), ""),
                      Catch::Contains("cannot read the claim-check payload") && Catch::Contains(key));
    CHECK_THROWS_AS(store->remove(key), acemq::StoreUnavailableError);
    // Nowhere to write: the directory went away under the store.
    std::filesystem::remove_all(dir.path);
    CHECK_THROWS_AS(codec.encode(acemq::Value(Bytes(10, std::byte{1}))), acemq::StoreUnavailableError);

    // A store of the application's that throws its own exceptions: a failure of the store, but
    // a DecodeError stays one.
    const acemq::ClaimCheckCodec own(std::make_shared<acemq::BytesCodec>(),
                                     std::make_shared<FlakyStore>(1, [] { throw std::runtime_error("S3 said 503"); }));
    CHECK_THROWS_MATCHES(own.decode(framed(0x01, bytes_of("k-1")), ""), acemq::StoreUnavailableError,
                         Catch::Message("acemq: the claim-check store failed to read the payload \"k-1\": "
                                        "std::runtime_error: S3 said 503"));
    const acemq::ClaimCheckCodec refusing(std::make_shared<acemq::BytesCodec>(), std::make_shared<FlakyStore>(1, [] {
                                              throw acemq::DecodeError("acemq: the payload's checksum is wrong");
                                          }));
    CHECK_THROWS_AS(refusing.decode(framed(0x01, bytes_of("k-1")), ""), acemq::DecodeError);
}

TEST_CASE("through a bus, a store that fails is retried as the policy says and a missing payload is parked") {
    using namespace std::chrono_literals;
    acemq::Bus bus = acemq::connect("inproc://claims-" + acemq::new_uuid());
    const acemq::testing::Harness harness{bus};
    const std::string queue = "shipments.flaky";
    bus.declare(acemq::Topology{}.queue(queue, {.dead_letter = true}));
    auto store = std::make_shared<FlakyStore>(2);
    const auto codec = std::make_shared<acemq::ClaimCheckCodec>(std::make_shared<acemq::JsonCodec>(), store, 1024);
    const Shipment big{"s-1", std::string(10'000, 'm')};

    std::atomic<int> handled{0};
    auto consumer = bus.consume<Shipment>(queue,
                                          [&](const acemq::Message<Shipment>& message) {
                                              if (message.payload.manifest == big.manifest) ++handled;
                                              return acemq::accept();
                                          },
                                          {.retry = acemq::fixed_retry(5, 1ms), .codec = codec});
    const acemq::Publisher publisher = bus.publisher_to_queue(queue, {.codec = codec});
    publisher.send(big);
    REQUIRE(harness.wait_settled(queue, acemq::Outcome::acked, 1, 10s));
    CHECK(handled == 1);
    CHECK(store->reads() == 3);
    const auto settled = harness.settled(queue);
    REQUIRE(settled.size() == 3);
    CHECK(settled[0].settlement.outcome == acemq::Outcome::retried);
    CHECK(settled[1].settlement.outcome == acemq::Outcome::retried);
    CHECK(settled[2].envelope.attempt == 3);

    // A key the store does not hold: parked at once, the policy not asked.
    bus.publisher_to_queue(queue, {.codec = std::make_shared<acemq::BytesCodec>()})
        .send_raw(acemq::Encoded{framed(0x01, bytes_of(acemq::new_uuid())), "application/json"});
    REQUIRE(harness.wait_parked(queue, 1, 10s));
    consumer.close();
    std::optional<acemq::Delivery> parked = bus.transport().pull(acemq::parked_queue(queue));
    REQUIRE(parked.has_value());
    CHECK_THAT(error_header(*parked),
               Catch::StartsWith("could not be decoded: acemq::DecodeError: ") && Catch::Contains("not in the store"));
    parked->ack();
    CHECK(handled == 1);
}

TEST_CASE("a store that stays down uses up the policy and dead-letters; on a stream it parks, as a retry there does") {
    using namespace std::chrono_literals;
    acemq::Bus bus = acemq::connect("inproc://claims-" + acemq::new_uuid());
    const acemq::testing::Harness harness{bus};
    const std::string queue = "shipments.down";
    bus.declare(acemq::Topology{}.queue(queue, {.dead_letter = true}));
    auto store = std::make_shared<FlakyStore>(1'000'000);
    const auto codec = std::make_shared<acemq::ClaimCheckCodec>(std::make_shared<acemq::JsonCodec>(), store, 0);
    const Shipment small{"s-2", "m"};
    int handled = 0;
    const auto count = [&](const acemq::Message<Shipment>&) {
        ++handled;
        return acemq::accept();
    };

    auto consumer = bus.consume<Shipment>(queue, count, {.codec = codec});  // the bus's policy: no retry
    bus.publisher_to_queue(queue, {.codec = codec}).send(small);
    REQUIRE(harness.wait_dead_lettered(queue, 1, 10s));
    consumer.close();
    std::optional<acemq::Delivery> dead = bus.transport().pull(acemq::dead_letter_queue(queue));
    REQUIRE(dead.has_value());
    CHECK(error_header(*dead) ==
          "exhausted 1 attempt: acemq::StoreUnavailableError: acemq: the claims disk is not mounted");
    dead->ack();

    const std::string stream = "shipments.log";
    acemq::declare_stream(bus, stream);
    bus.publisher_to_queue(stream, {.codec = codec}).send(small);
    auto reader = acemq::read_stream(bus, stream, count, {.offset = acemq::StreamOffset::first(), .codec = codec});
    REQUIRE(harness.wait_parked(stream, 1, 10s));
    reader.close();
    std::optional<acemq::Delivery> parked = bus.transport().pull(acemq::parked_queue(stream));
    REQUIRE(parked.has_value());
    CHECK_THAT(error_header(*parked), Catch::StartsWith("the handler parked it: acemq::StreamRetryError: ") &&
                                          Catch::Contains("the claims disk is not mounted"));
    parked->ack();
    CHECK(handled == 0);
}
