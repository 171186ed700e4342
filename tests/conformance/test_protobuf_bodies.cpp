// A protoc-generated message (tests/protobuf/order_placed.proto) on every transport: published
// through ProtobufCodec, it is read by consume<T> with ProtobufCodec and by a consumer on the
// default codec reading protobuf by content type; a body protobuf cannot parse is parked.
#include "conformance.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include <acemq/protobuf_codec.hpp>

#include "../protobuf/order_sample.hpp"
#include "order_placed.pb.h"

namespace conformance {

namespace {

using acemq::test::OrderPlaced;

using protobuf_sample::sample_order;

// What a consumer of OrderPlaced saw: each payload's bytes again, and its content type.
struct Seen {
    std::mutex lock;
    std::vector<std::string> payloads;
    std::vector<std::string> content_types;

    acemq::Handler<OrderPlaced> handler() {
        return [this](const acemq::Message<OrderPlaced>& message) {
            const std::lock_guard guard(lock);
            payloads.push_back(message.payload.SerializeAsString());
            content_types.push_back(message.content_type);
            return acemq::accept();
        };
    }
};

}  // namespace

TEST_CASE(
    "a generated message sent through ProtobufCodec is read by ProtobufCodec and by the default codec reading "
    "protobuf") {
    Fixture f;
    const auto protobuf = std::make_shared<acemq::ProtobufCodec>();
    const std::string typed = f.source_queue("protobuf.typed");
    const std::string by_content_type = f.source_queue("protobuf.by.content.type");
    Seen with_protobuf;
    Seen with_default;
    acemq::Consumer first = f.bus().consume<OrderPlaced>(typed, with_protobuf.handler(), {.codec = protobuf});
    acemq::Consumer second = f.bus().consume<OrderPlaced>(by_content_type, with_default.handler(),
                                                          {.codec = acemq::default_codec_reading({protobuf})});
    for (const std::string& queue : {typed, by_content_type})
        CHECK(f.bus().publisher_to_queue(queue, {.codec = protobuf}).send(sample_order()).confirmed);
    REQUIRE(f.harness().wait_consumed(typed, 1, 10s));
    REQUIRE(f.harness().wait_consumed(by_content_type, 1, 10s));
    first.close();
    second.close();
    for (Seen* seen : {&with_protobuf, &with_default}) {
        const std::lock_guard guard(seen->lock);
        CHECK(seen->payloads == std::vector<std::string>{sample_order().SerializeAsString()});
        CHECK(seen->content_types == std::vector<std::string>{"application/x-protobuf"});
    }
}

TEST_CASE("a protobuf body that does not parse is parked as it came, its handler not run") {
    Fixture f;
    const auto protobuf = std::make_shared<acemq::ProtobufCodec>();
    const std::string queue = f.source_queue("protobuf.hostile");
    Seen seen;
    acemq::Consumer consumer = f.bus().consume<OrderPlaced>(queue, seen.handler(), {.codec = protobuf});
    // order_id (field 1) claiming 2^62 bytes: refused before anything is set aside for it.
    const acemq::Bytes hostile{std::byte{0x0a}, std::byte{0x80}, std::byte{0x80}, std::byte{0x80},
                               std::byte{0x80}, std::byte{0x80}, std::byte{0x80}, std::byte{0x80},
                               std::byte{0x80}, std::byte{0x40}, std::byte{0x41}};
    f.bus().publisher_to_queue(queue).send_raw(acemq::Encoded{hostile, "application/x-protobuf"});
    REQUIRE(f.harness().wait_parked(queue, 1, 10s));
    consumer.close();
    const std::optional<acemq::Delivery> parked = f.pull(acemq::parked_queue(queue));
    REQUIRE(parked);
    CHECK(std::ranges::equal(parked->message().body(), hostile));
    CHECK(parked->message().content_type() == "application/x-protobuf");
    const std::lock_guard guard(seen.lock);
    CHECK(seen.payloads.empty());
}

}  // namespace conformance
