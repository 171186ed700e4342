// Suite `amqp-offline`: which basic.ack / basic.nack frames a consumer channel's waiting
// settlements become, without a broker. A run of one outcome at the bottom of the open tags
// is one frame with `multiple`; nothing covers a delivery still unsettled; a tag that is not
// open is never written. (test_settlements.cpp checks the same against RabbitMQ.)
#include <catch2/catch.hpp>

#include "amqp/open_deliveries.hpp"

#include <ostream>
#include <vector>

namespace acemq::amqp {

std::ostream& operator<<(std::ostream& out, const SettlementFrame& frame) {
    static const char* const names[] = {"ack", "requeue", "reject"};
    return out << names[static_cast<int>(frame.outcome)] << " " << frame.broker_tag
               << (frame.multiple ? " multiple" : "");
}

bool operator==(const SettlementFrame& a, const SettlementFrame& b) {
    return a.outcome == b.outcome && a.broker_tag == b.broker_tag && a.multiple == b.multiple;
}

}  // namespace acemq::amqp

namespace {

using acemq::amqp::OpenDeliveries;
using acemq::amqp::Outcome;
using acemq::amqp::Settlement;
using acemq::amqp::SettlementFrame;
using Frames = std::vector<SettlementFrame>;

OpenDeliveries delivered_through(std::uint64_t last) {
    OpenDeliveries open;
    for (std::uint64_t tag = 1; tag <= last; ++tag) open.delivered(tag);
    return open;
}

SettlementFrame one(Outcome outcome, std::uint64_t tag) { return {.outcome = outcome, .broker_tag = tag}; }
SettlementFrame up_to(Outcome outcome, std::uint64_t tag) {
    return {.outcome = outcome, .broker_tag = tag, .multiple = true};
}

}  // namespace

TEST_CASE("acks waiting at the bottom of the open tags are one ack with multiple, whatever their order") {
    OpenDeliveries open = delivered_through(5);
    CHECK(open.settle({{3, Outcome::ack}, {1, Outcome::ack}, {2, Outcome::ack}}) == Frames{up_to(Outcome::ack, 3)});
    CHECK(open.size() == 2);
    CHECK(open.settle({{4, Outcome::ack}}) == Frames{one(Outcome::ack, 4)});
    CHECK(open.size() == 1);
}

TEST_CASE("settlements above an unsettled delivery go one by one, and the prefix follows once it is settled") {
    OpenDeliveries open = delivered_through(4);
    CHECK(open.settle({{2, Outcome::ack}, {3, Outcome::ack}}) == Frames{one(Outcome::ack, 2), one(Outcome::ack, 3)});
    CHECK(open.size() == 2);
    // 1 settled at last: 2 and 3 are gone from the wire's view already, so the run is 1 alone.
    CHECK(open.settle({{1, Outcome::ack}}) == Frames{one(Outcome::ack, 1)});
    CHECK(open.settle({{4, Outcome::ack}}) == Frames{one(Outcome::ack, 4)});
    CHECK(open.size() == 0);
}

TEST_CASE("a run crosses tags settled earlier: its frame names the highest tag still open") {
    OpenDeliveries open = delivered_through(6);
    CHECK(open.settle({{3, Outcome::ack}}) == Frames{one(Outcome::ack, 3)});
    CHECK(open.settle({{1, Outcome::ack}, {2, Outcome::ack}, {4, Outcome::ack}}) == Frames{up_to(Outcome::ack, 4)});
    CHECK(open.size() == 2);
}

TEST_CASE("requeues and rejects break the runs of acks and keep their place among them") {
    OpenDeliveries open = delivered_through(8);
    CHECK(open.settle({{1, Outcome::ack},
                       {2, Outcome::ack},
                       {3, Outcome::requeue},
                       {4, Outcome::requeue},
                       {5, Outcome::reject},
                       {6, Outcome::ack},
                       {8, Outcome::reject}}) == Frames{up_to(Outcome::ack, 2), up_to(Outcome::requeue, 4),
                                                        one(Outcome::reject, 5), one(Outcome::ack, 6),
                                                        one(Outcome::reject, 8)});
    CHECK(open.size() == 1);
}

TEST_CASE("a tag that is not open is never written: settled twice, or from before the channel's life") {
    OpenDeliveries open;
    open.delivered(5);
    open.delivered(6);
    CHECK(open.settle({{2, Outcome::ack}, {5, Outcome::ack}, {5, Outcome::reject}, {9, Outcome::ack}}) ==
          Frames{one(Outcome::ack, 5)});
    CHECK(open.settle({{5, Outcome::ack}}).empty());
    CHECK(open.size() == 1);
}
