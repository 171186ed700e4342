// One body through ProtobufCodec as the hostile-input checks read it, shared by the seeded
// loop of test_protobuf_codec.cpp and the libFuzzer target tests/fuzz/fuzz_protobuf.cpp, so
// both check the same thing: a body ends in an OrderPlaced or a DecodeError, and what it
// decodes to publishes and reads back unchanged. Anything else escapes, and is the finding.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>

#include <acemq/protobuf_codec.hpp>

#include "order_placed.pb.h"

namespace fuzz {

inline void protobuf_input(std::span<const std::byte> body) {
    static const acemq::ProtobufCodec codec;
    acemq::test::OrderPlaced order;
    try {
        order = acemq::decode<acemq::test::OrderPlaced>(codec, body, acemq::content_types::protobuf);
    } catch (const acemq::DecodeError&) {  // the one refusal allowed
        return;
    }
    // Unknown fields included: a message read is a message that can be sent on as it came.
    const acemq::Encoded again = acemq::encode(codec, order);
    const auto back = acemq::decode<acemq::test::OrderPlaced>(codec, again.body, again.content_type);
    if (back.SerializeAsString() != order.SerializeAsString())
        throw std::logic_error("a decoded OrderPlaced does not read back as itself once published");
}

}  // namespace fuzz
