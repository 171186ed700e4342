// EncryptedCodec against the family's framing (docs/wire-contract.md §10.2): the shared test
// vector byte for byte, rotation, the refusals (not this framing, truncated, unknown key, wrong
// key and tampering alike), keys kept out of every text, and a round trip through a bus.
#include <catch2/catch.hpp>

#include <acemq/bus.hpp>
#include <acemq/codec.hpp>
#include <acemq/encrypted_codec.hpp>
#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/testing.hpp>
#include <acemq/topology.hpp>
#include <acemq/transport.hpp>
#include <acemq/uuid.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "encryption_framing.hpp"

#include "../support/codec_bodies.hpp"

namespace {

using testing_support::bytes_of;

using namespace std::chrono_literals;
using Bytes = std::vector<std::byte>;

Bytes ascending(std::size_t count) {
    Bytes out(count);
    for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<std::byte>(i);
    return out;
}

Bytes from_hex(std::string_view hex) {
    Bytes out;
    for (std::size_t i = 0; i < hex.size(); i += 2)
        out.push_back(static_cast<std::byte>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    return out;
}

// The family's vector: key 00..1f as "2026-01", nonce 00..0b, plaintext "hello".
const Bytes family_vector = from_hex(
    "ae0107323032362d3031"
    "000102030405060708090a0b"
    "2f67ba77aa632797b83b1f88ef1394bb9ff6e85641");

acemq::EncryptionKey family_key() { return acemq::EncryptionKey("2026-01", ascending(32)); }

std::shared_ptr<acemq::Keyring> ring(acemq::EncryptionKey key) {
    return std::make_shared<acemq::Keyring>(std::move(key));
}

acemq::EncryptedCodec text_codec(std::shared_ptr<const acemq::Keyring> keys) {
    return acemq::EncryptedCodec(std::make_shared<acemq::TextCodec>(), std::move(keys));
}

std::string decrypt_error(const acemq::Codec& codec, std::span<const std::byte> body) {
    return testing_support::decode_error_of([&] { codec.decode(body, acemq::content_types::encrypted); });
}

struct Order {
    std::string order_id;
    std::int64_t total_cents;
};

}  // namespace

TEST_CASE("the family's test vector is written and read byte for byte") {
    const std::array<std::byte, 12> nonce = [] {
        std::array<std::byte, 12> out{};
        const Bytes bytes = ascending(12);
        std::copy(bytes.begin(), bytes.end(), out.begin());
        return out;
    }();
    CHECK(acemq::detail::seal_body(family_key(), nonce, bytes_of("hello")) == family_vector);

    const acemq::EncryptedCodec codec = text_codec(ring(family_key()));
    CHECK(codec.decode(family_vector, acemq::content_types::encrypted) == acemq::Value(std::string("hello")));
    CHECK(acemq::encryption_key_id_of(family_vector) == std::optional<std::string>("2026-01"));
}

TEST_CASE("an encrypted body is framed as the family's: magic, version, key id, fresh nonce, ciphertext and tag") {
    const acemq::EncryptedCodec codec = text_codec(ring(family_key()));
    CHECK(codec.content_type() == "application/vnd.acemq.encrypted");
    const Bytes first = codec.encode(acemq::Value(std::string("hello")));
    const Bytes second = codec.encode(acemq::Value(std::string("hello")));
    const Bytes header = from_hex("ae0107323032362d3031");
    REQUIRE(first.size() == header.size() + 12 + 5 + 16);
    CHECK(std::equal(header.begin(), header.end(), first.begin()));
    CHECK(first != second);  // a nonce of its own each
    CHECK(codec.decode(first, "application/vnd.acemq.encrypted") == acemq::Value(std::string("hello")));

    CHECK(codec.can_decode("application/vnd.acemq.encrypted"));
    CHECK(codec.can_decode("Application/VND.acemq.Encrypted; v=1"));
    CHECK_FALSE(codec.can_decode(""));
    CHECK_FALSE(codec.can_decode("application/json"));
    CHECK_FALSE(codec.can_decode("application/vnd.acemq.avro"));
}

TEST_CASE("an empty plaintext seals to a 0-byte ciphertext and its tag, and reads back") {
    const acemq::EncryptedCodec codec(std::make_shared<acemq::BytesCodec>(), ring(family_key()));
    const Bytes body = codec.encode(acemq::Value(Bytes{}));
    CHECK(body.size() == 10 + 12 + 16);
    CHECK(codec.decode(body, acemq::content_types::encrypted) == acemq::Value(Bytes{}));
}

TEST_CASE("rotation: writes with the current key, reads with any key on the ring") {
    auto keys = std::make_shared<acemq::Keyring>(acemq::EncryptionKey("2025-12", ascending(16)));
    const acemq::EncryptedCodec codec = text_codec(keys);
    const Bytes old_body = codec.encode(acemq::Value(std::string("old")));

    keys->add(family_key());
    CHECK(acemq::encryption_key_id_of(codec.encode(acemq::Value(std::string("x")))) == "2025-12");
    keys->use("2026-01");
    const Bytes new_body = codec.encode(acemq::Value(std::string("new")));
    CHECK(acemq::encryption_key_id_of(new_body) == "2026-01");
    CHECK(keys->ids() == std::vector<std::string>{"2025-12", "2026-01"});

    CHECK(codec.decode(old_body, "") == acemq::Value(std::string("old")));
    CHECK(codec.decode(new_body, "") == acemq::Value(std::string("new")));
    CHECK_THROWS_AS(keys->use("2027-01"), acemq::InvalidArgument);

    // A reader that has retired the old key names it and what it holds.
    const acemq::EncryptedCodec reader = text_codec(ring(family_key()));
    CHECK(decrypt_error(reader, old_body) ==
          "acemq: this message was encrypted with key \"2025-12\", which is not on this keyring (it holds "
          "\"2026-01\"); add that key to the keyring: retrying without it cannot help");
}

TEST_CASE("a wrong key and an altered body fail alike, and unlike a body that is not this framing") {
    const acemq::EncryptedCodec codec = text_codec(ring(family_key()));
    const std::string tampered_message = [&] {
        Bytes body = family_vector;
        body[25] ^= std::byte{0x01};  // a ciphertext byte
        return decrypt_error(codec, body);
    }();
    Bytes other = ascending(32);
    other[0] = std::byte{0xFF};
    const std::string wrong_key_message =
        decrypt_error(text_codec(ring(acemq::EncryptionKey("2026-01", other))), family_vector);
    CHECK(tampered_message == wrong_key_message);
    CHECK(tampered_message ==
          "acemq: this message did not decrypt with key \"2026-01\": either that is not the key it was written "
          "with, or the body was altered after it was written");

    for (std::size_t at : {std::size_t{0} + 3, std::size_t{12}, family_vector.size() - 1}) {
        Bytes body = family_vector;  // the key id, the nonce, the tag
        body[at] ^= std::byte{0x01};
        const std::string message = decrypt_error(codec, body);
        if (at == 3)
            CHECK_THAT(message, Catch::Contains("not on this keyring"));
        else
            CHECK(message == tampered_message);
    }
    // The key id is authenticated: renamed to another key on the ring, it still fails to open.
    auto two = std::make_shared<acemq::Keyring>(family_key());
    two->add(acemq::EncryptionKey("2026-02", ascending(32)));
    Bytes renamed = family_vector;
    renamed[9] = std::byte{'2'};
    CHECK_THAT(decrypt_error(text_codec(two), renamed), Catch::StartsWith("acemq: this message did not decrypt"));

    const std::string not_framing = decrypt_error(codec, bytes_of(R"({"orderId":"o-1"})"));
    CHECK_THAT(not_framing, Catch::StartsWith("acemq: this body is not the encryption framing"));
    CHECK(decrypt_error(codec, {}) == not_framing);
    CHECK(not_framing != tampered_message);
    CHECK_FALSE(acemq::encryption_key_id_of(bytes_of("{}")).has_value());
}

TEST_CASE("truncated and malformed frames are DecodeErrors that say so") {
    const acemq::EncryptedCodec codec = text_codec(ring(family_key()));
    const auto first = [](std::size_t count) { return Bytes(family_vector.begin(), family_vector.begin() + count); };
    CHECK_THAT(decrypt_error(codec, first(2)), Catch::Contains("truncated"));
    CHECK_THAT(decrypt_error(codec, first(9)), Catch::Contains("truncated"));
    CHECK_THAT(decrypt_error(codec, first(10 + 12)), Catch::Contains("truncated"));
    CHECK_THAT(decrypt_error(codec, first(10 + 12 + 15)), Catch::Contains("truncated"));
    CHECK_FALSE(acemq::encryption_key_id_of(first(9)).has_value());

    Bytes version_2 = family_vector;
    version_2[1] = std::byte{0x02};
    CHECK(decrypt_error(codec, version_2) ==
          "acemq: this body is encryption framing version 2 and this library reads version 1");
    Bytes no_id = from_hex("ae0100");
    no_id.resize(3 + 12 + 16);
    CHECK_THAT(decrypt_error(codec, no_id), Catch::Contains("names no key"));
}

TEST_CASE("keys are refused by length and never shown, in errors or printed") {
    const std::string material = "k3y-material-that-must-not-show!";  // 32 bytes
    const acemq::EncryptionKey key("2026-01", bytes_of(material));
    CHECK(acemq::to_string(key) == "EncryptionKey(2026-01)");

    try {
        acemq::EncryptionKey("short", bytes_of(material.substr(0, 20)));
        FAIL("a 20-byte key was taken");
    } catch (const acemq::InvalidArgument& e) {
        CHECK_THAT(e.what(), Catch::Contains("is 20 bytes and an AES key is 16, 24 or 32"));
        CHECK_THAT(e.what(), !Catch::Contains(material.substr(0, 20)));
    }
    CHECK_THROWS_AS(acemq::EncryptionKey("", ascending(32)), acemq::InvalidArgument);
    CHECK_THROWS_AS(acemq::EncryptionKey(std::string(256, 'k'), ascending(32)), acemq::InvalidArgument);
    CHECK_NOTHROW(acemq::EncryptionKey(std::string(255, 'k'), ascending(32)));
    CHECK_THROWS_AS(acemq::Keyring(std::vector<acemq::EncryptionKey>{}), acemq::InvalidArgument);

    const acemq::EncryptedCodec codec = text_codec(ring(key));
    Bytes body = codec.encode(acemq::Value(std::string("secret plaintext")));
    body.back() ^= std::byte{0x01};
    const std::string message = decrypt_error(codec, body);
    CHECK_THAT(message, !Catch::Contains(material));
    CHECK_THAT(message, !Catch::Contains("secret plaintext"));

    const acemq::EncryptionKey generated = acemq::EncryptionKey::generate("fresh");
    CHECK(generated.secret().size() == 32);
    CHECK(generated.secret().size() == acemq::EncryptionKey::generated_size);
}

TEST_CASE("a bus with EncryptedCodec carries ciphertext, keeps headers clear and parks what it cannot open") {
    acemq::Bus bus = acemq::connect("inproc://encrypted-" + acemq::new_uuid());
    const acemq::testing::Harness harness{bus};
    const std::string queue = "orders.encrypted";
    bus.declare(acemq::Topology{}.queue(queue, {.dead_letter = true}));
    const auto codec =
        std::make_shared<acemq::EncryptedCodec>(std::make_shared<acemq::JsonCodec>(), ring(family_key()));

    std::atomic<int> handled{0};
    std::string read_order;
    std::string read_type;
    auto consumer = bus.consume<Order>(queue,
                                       [&](const acemq::Message<Order>& message) {
                                           read_order = message.payload.order_id + "/" +
                                                        std::to_string(message.payload.total_cents);
                                           read_type = message.content_type;
                                           ++handled;
                                           return acemq::accept();
                                       },
                                       {.codec = codec});
    auto publisher = bus.publisher_to_queue(queue, {.codec = codec});
    publisher.send(Order{"o-1", 4250});
    REQUIRE(harness.wait_settled(queue, acemq::Outcome::acked, 1, 10s));
    CHECK(read_order == "o-1/4250");
    CHECK(read_type == "application/vnd.acemq.encrypted");

    // What the broker holds: ciphertext, under headers in the clear.
    const std::string wire_queue = queue + ".wire";
    bus.declare(acemq::Topology{}.queue(wire_queue));
    bus.publisher_to_queue(wire_queue, {.codec = codec}).send(Order{"o-secret", 4250});
    const std::optional<acemq::Delivery> held = bus.transport().pull(wire_queue);
    REQUIRE(held.has_value());
    const acemq::InboundMessage& wire = held->message();
    CHECK(wire.content_type() == "application/vnd.acemq.encrypted");
    REQUIRE_FALSE(wire.body().empty());
    CHECK(wire.body()[0] == std::byte{0xAE});
    const std::string wire_text(reinterpret_cast<const char*>(wire.body().data()), wire.body().size());
    CHECK(wire_text.find("o-secret") == std::string::npos);
    CHECK(wire.headers().contains("x-acemq-id"));
    CHECK(wire.headers().contains("x-acemq-type"));

    // Sealed with a key this consumer does not hold: parked, not retried.
    const acemq::EncryptedCodec stranger(std::make_shared<acemq::JsonCodec>(),
                                         ring(acemq::EncryptionKey("2099-01", ascending(32))));
    publisher.send_raw(acemq::encode(stranger, Order{"o-2", 1}));
    REQUIRE(harness.wait_parked(queue, 1, 10s));
    consumer.close();
    CHECK(handled == 1);
}
