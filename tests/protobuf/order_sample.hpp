// The family's protobuf sample as a generated message: order o-1, 4250 cents, tenant acme
// (tests/fixtures/codec-interop-fixtures.json holds its bytes), shared by the codec's tests and
// the conformance suite's protobuf bodies.
#pragma once

#include "order_placed.pb.h"

namespace protobuf_sample {

inline acemq::test::OrderPlaced sample_order() {
    acemq::test::OrderPlaced order;
    order.set_order_id("o-1");
    order.set_total_cents(4250);
    order.set_tenant("acme");
    return order;
}

}  // namespace protobuf_sample
