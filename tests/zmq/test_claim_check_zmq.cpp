// Suite zmq-offline: what claim check is for (issue 31, docs/wire-contract.md §8.2): a payload
// far past the zmq broker's frame limit travels as its key, a few dozen bytes on the wire,
// while the payload waits in a filesystem store the publisher and the consumer share.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/acemq.hpp>
#include <acemq/inproc.hpp>
#include <acemq/zmq.hpp>

#include "../support/temp_dir.hpp"
#include "broker_process.hpp"

using namespace std::chrono_literals;

namespace {

using Bytes = std::vector<std::byte>;

// `size` bytes that no run-length or page trick could pass for a copy: a xorshift stream.
Bytes noise(std::size_t size) {
    Bytes out(size);
    std::uint64_t state = 0x9E3779B97F4A7C15;
    for (std::size_t i = 0; i + 8 <= size; i += 8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        std::memcpy(out.data() + i, &state, 8);
    }
    return out;
}

std::size_t hash_of(const Bytes& bytes) {
    return std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace

TEST_CASE("a 100 MB payload crosses zmq as its key, a few dozen bytes, and is read back whole") {
    const testing_support::TempDir dir{"claims-zmq"};
    auto broker = acemq::inproc::broker("claims-zmq-" + acemq::new_uuid().substr(0, 8));
    auto server = acemq::zmq::serve(broker, {zmq_test::fresh_ipc_endpoint("claims")});
    acemq::Bus bus = acemq::connect("zmq+" + server->endpoints().front());
    const acemq::testing::Harness harness{bus};
    const std::string queue = "scans.raw";
    bus.declare(acemq::Topology{}.queue(queue, {.dead_letter = true}));
    auto store = std::make_shared<acemq::FilesystemClaimCheckStore>(dir.path() / "claims");
    const auto codec = std::make_shared<acemq::ClaimCheckCodec>(std::make_shared<acemq::BytesCodec>(), store);

    const Bytes payload = noise(100 * 1000 * 1000);
    const std::size_t sent_hash = hash_of(payload);
    // Past the broker's 64 MiB frame: it cannot go as it is.
    CHECK_THROWS_AS(bus.publisher_to_queue(queue, {.codec = std::make_shared<acemq::BytesCodec>()}).send(payload),
                    acemq::PublishError);
    bus.publisher_to_queue(queue, {.codec = codec}).send(payload);

    // What the broker holds and the wire carried: the framing and the key.
    std::optional<acemq::Delivery> held = bus.transport().pull(queue);
    REQUIRE(held.has_value());
    const acemq::InboundMessage& wire = held->message();
    CHECK(wire.body().size() == 3 + 36);
    CHECK(wire.content_type() == "application/octet-stream");
    const std::optional<std::string> key = acemq::claim_key_of(wire.body());
    REQUIRE(key.has_value());
    CHECK(std::filesystem::file_size(store->directory() / *key) == payload.size());
    held->requeue();

    std::optional<std::size_t> read_hash;
    std::size_t read_size = 0;
    auto consumer = bus.consume<Bytes>(queue,
                                       [&](const acemq::Message<Bytes>& message) {
                                           read_size = message.payload.size();
                                           read_hash = hash_of(message.payload);
                                           return acemq::accept();
                                       },
                                       {.codec = codec});
    REQUIRE(harness.wait_settled(queue, acemq::Outcome::acked, 1, 60s));
    consumer.close();
    CHECK(read_size == payload.size());
    CHECK(read_hash == sent_hash);
    bus.close();
}
