// Health on the zmq transport: down when the acemq-broker process is killed, up once it is
// back on the same endpoint; describe(). Every wait is bounded.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>
#include <acemq/zmq.hpp>
#include "../support/wait.hpp"
#include "../zmq/broker_process.hpp"

using namespace std::chrono_literals;
using acemq::Health;

namespace {

using testing_support::eventually;

}  // namespace

TEST_CASE("zmq: down when the broker process is killed, up after it restarts") {
    zmq_test::BrokerProcess broker(ACEMQ_BROKER_PROGRAM,
                                   {"--listen", zmq_test::fresh_ipc_endpoint("health"), "--heartbeat-ms", "200"});
    auto transport = acemq::zmq::open(broker.url(), {.heartbeat = 200ms});
    const Health up = transport->check_health(1s);
    CHECK(up.status == Health::Status::up);
    CHECK(up.round_trip > 0us);
    const acemq::TransportInfo info = transport->describe();
    CHECK(info.name == "zmq");
    CHECK(info.messaging_system == "acemq");
    CHECK(info.address == broker.endpoint());
    CHECK(info.capabilities == std::vector<std::string>{"confirms", "dead-letters", "ttl"});

    broker.stop(SIGKILL);
    const Health down = transport->check_health(1s);
    CHECK(down.status == Health::Status::down);
    CHECK_FALSE(down.detail.empty());

    broker.start();
    CHECK(eventually([&] { return transport->check_health(1s).status == Health::Status::up; }));
    transport->close();
    const Health closed = transport->check_health(1s);
    CHECK(closed.status == Health::Status::down);
    CHECK_THAT(closed.detail, Catch::Contains("is closed"));
}
