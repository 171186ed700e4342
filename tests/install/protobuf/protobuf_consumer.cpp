// A user's program with a message of their own .proto (tests/protobuf/order_placed.proto,
// compiled by the user's protoc), built against the installed files only, as acemq-protobuf.pc
// and CMake's component `protobuf` say: it writes the family's protobuf sample, and publishes
// and consumes one generated message in-process through ProtobufCodec.
#include <acemq/acemq.hpp>
#include <acemq/protobuf_codec.hpp>

#include <chrono>
#include <iostream>
#include <memory>

#include "order_placed.pb.h"

int main() {
    using namespace std::chrono_literals;
    acemq::test::OrderPlaced order;
    order.set_order_id("o-1");
    order.set_total_cents(4250);
    order.set_tenant("acme");
    const auto protobuf = std::make_shared<acemq::ProtobufCodec>();
    std::cout << "protobuf body ";
    for (const std::byte b : acemq::encode(*protobuf, order).body)
        std::cout << "0123456789abcdef"[std::to_integer<int>(b) >> 4]
                  << "0123456789abcdef"[std::to_integer<int>(b) & 15];
    std::cout << '\n';

    acemq::Bus bus = acemq::connect("inproc://install-protobuf");
    bus.declare(acemq::Topology{}.queue("orders.placed", {.dead_letter = true}));
    const acemq::testing::Harness harness{bus};
    acemq::Consumer consumer = bus.consume<acemq::test::OrderPlaced>(
        "orders.placed",
        [](const acemq::Message<acemq::test::OrderPlaced>& m) {
            std::cout << "consumed protobuf " << m.payload.order_id() << ' ' << m.payload.total_cents() << ' '
                      << m.payload.tenant() << " as " << m.content_type << '\n';
            return acemq::accept();
        },
        {.codec = protobuf});
    bus.publisher_to_queue("orders.placed", {.codec = protobuf}).send(order);
    if (!harness.wait_settled("orders.placed", acemq::Outcome::acked, 1, 5s)) {
        std::cerr << "install check: the protobuf message was not consumed within 5 s\n";
        return 1;
    }
    return 0;
}
