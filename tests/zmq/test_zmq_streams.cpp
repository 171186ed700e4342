// Suite zmq-offline: stream queues read over the ZeroMQ protocol (docs/zmq-protocol.md §3,
// §9): the consume carries the consumer's arguments, so a read starts where x-stream-offset
// asks and each delivery carries its offset; a bad offset comes back as the broker's
// InvalidArgument; and a broker older than consumer arguments (its welcome has four fields)
// is never sent a stream read it would start in the wrong place.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <zmq.hpp>

#include <acemq/acemq.hpp>
#include <acemq/inproc.hpp>
#include <acemq/zmq.hpp>

#include "broker_process.hpp"
#include "fake_broker.hpp"
#include "zmq/protocol.hpp"

using namespace std::chrono_literals;
namespace wire = acemq::zmq::wire;

namespace {

// Deliveries as a worker queue would hold them; the DeliverFn only queues.
class Received {
public:
    acemq::DeliverFn deliver() {
        return [this](acemq::Delivery delivery) {
            std::lock_guard lock(mutex_);
            deliveries_.push_back(std::move(delivery));
            arrived_.notify_all();
        };
    }
    // Waits (bounded) for `count` deliveries; their bodies and offsets, acked.
    std::vector<std::pair<std::string, std::int64_t>> take(std::size_t count) {
        std::unique_lock lock(mutex_);
        REQUIRE(arrived_.wait_for(lock, 10s, [&] { return deliveries_.size() >= count; }));
        std::vector<std::pair<std::string, std::int64_t>> taken;
        while (!deliveries_.empty()) {
            acemq::Delivery delivery = std::move(deliveries_.front());
            deliveries_.pop_front();
            const acemq::InboundMessage& message = delivery.message();
            const acemq::FieldValue& offset = message.headers().at("x-stream-offset");
            REQUIRE(offset.holds<std::int64_t>());
            taken.emplace_back(std::string(reinterpret_cast<const char*>(message.body().data()), message.body().size()),
                               std::get<std::int64_t>(offset.get()));
            delivery.ack();
        }
        return taken;
    }

private:
    std::mutex mutex_;
    std::condition_variable arrived_;
    std::deque<acemq::Delivery> deliveries_;
};

acemq::ConsumeSpec reading_from(acemq::FieldValue offset) {
    acemq::ConsumeSpec spec;
    spec.prefetch = 10;
    spec.arguments.emplace("x-stream-offset", std::move(offset));
    return spec;
}

acemq::OutboundMessage to(const std::string& queue, std::string_view body) {
    const auto* data = reinterpret_cast<const std::byte*>(body.data());
    return acemq::OutboundMessage{.routing_key = queue, .body = acemq::Bytes(data, data + body.size())};
}

}  // namespace

TEST_CASE("a consume carries its arguments as a fifth field only when it has any; a welcome says they are read") {
    const auto parse = [](const msgpack::sbuffer& buffer) {
        return std::vector<std::byte>(reinterpret_cast<const std::byte*>(buffer.data()),
                                      reinterpret_cast<const std::byte*>(buffer.data()) + buffer.size());
    };
    const std::vector<std::byte> plain = parse(wire::encode_consume(7, "events", 10, "tag"));
    CHECK(wire::Frame::parse(plain).size() == 4);  // byte for byte what an older broker reads
    CHECK(wire::read_consume(wire::Frame::parse(plain)).arguments.empty());
    acemq::FieldTable arguments;
    arguments.emplace("x-stream-offset", acemq::FieldValue(std::int64_t{-3}));
    const std::vector<std::byte> with = parse(wire::encode_consume(7, "events", 10, "tag", arguments));
    CHECK(wire::Frame::parse(with).size() == 5);
    CHECK(wire::read_consume(wire::Frame::parse(with)).arguments == arguments);
    const std::vector<std::byte> welcome = parse(wire::encode_welcome(1, "b", 1000, 1 << 20));
    CHECK(wire::read_welcome(wire::Frame::parse(welcome)).consumer_arguments);
}

TEST_CASE("a stream read over zmq starts where x-stream-offset asks, each delivery carrying its offset") {
    auto broker = acemq::inproc::broker("zmq-streams-" + acemq::new_uuid().substr(0, 8));
    auto server = acemq::zmq::serve(broker, {zmq_test::fresh_ipc_endpoint("streams")});
    auto client = acemq::zmq::open("zmq+" + server->endpoints().front());
    client->declare(acemq::Topology{}.stream("events"));
    for (const char* body : {"a", "b", "c", "d", "e"}) REQUIRE(client->publish(to("events", body)).confirmed);

    Received from_three, from_first;
    auto a = client->consume("events", reading_from(acemq::FieldValue(std::int64_t{3})), from_three.deliver());
    CHECK(from_three.take(2) == std::vector<std::pair<std::string, std::int64_t>>{{"d", 3}, {"e", 4}});
    auto b = client->consume("events", reading_from(acemq::FieldValue("first")), from_first.deliver());
    CHECK(from_first.take(5).size() == 5);
    REQUIRE(client->publish(to("events", "f")).confirmed);
    CHECK(from_three.take(1) == std::vector<std::pair<std::string, std::int64_t>>{{"f", 5}});
    CHECK(client->queue_depth("events") == 6);  // the reads took nothing

    try {
        Received never;
        client->consume("events", reading_from(acemq::FieldValue("banana")), never.deliver());
        FAIL("an x-stream-offset of \"banana\" was taken");
    } catch (const acemq::InvalidArgument& error) {
        CHECK_THAT(error.what(), Catch::Contains("x-stream-offset") && Catch::Contains("banana"));
    }
    client->close();
}

TEST_CASE("a broker older than consumer arguments is never sent a stream read: the consume is refused here") {
    // What such a broker answers: a four-field welcome, a consumer id to any consume, nil to
    // a cancel or release.
    std::atomic<int> consumes_with_arguments{0}, consumes{0};
    zmq_test::FakeBroker old_broker(
        "oldbroker", [&](std::span<const std::byte> frame) -> std::optional<msgpack::sbuffer> {
            const wire::Frame parsed = wire::Frame::parse(frame);
            if (parsed.command() == wire::Command::hello) {
                msgpack::sbuffer answer;
                msgpack::packer<msgpack::sbuffer> out(answer);
                out.pack_array(6);
                out.pack(1).pack(static_cast<int>(wire::Command::welcome)).pack(parsed.unsigned_at(0, "request"));
                out.pack(std::string("old")).pack(1000).pack(1 << 20);
                return answer;
            }
            if (parsed.command() == wire::Command::consume) {
                ++consumes;
                if (parsed.size() > 4) ++consumes_with_arguments;
                return wire::encode_reply_unsigned(parsed.unsigned_at(0, "request"), 1);
            }
            if (parsed.command() == wire::Command::cancel || parsed.command() == wire::Command::release)
                return wire::encode_reply_nil(parsed.unsigned_at(0, "request"));
            return std::nullopt;
        });
    {
        auto client = acemq::zmq::open(old_broker.url(), {.session = {.connect_timeout = 5s}});
        Received never;
        try {
            client->consume("events", reading_from(acemq::FieldValue("first")), never.deliver());
            FAIL("a stream read was sent to a broker that would ignore where it starts");
        } catch (const acemq::UsageError& error) {
            CHECK_THAT(error.what(), Catch::Contains("x-stream-offset") && Catch::Contains("upgrade the broker"));
        }
        // A consume without arguments is what that broker always served.
        acemq::ConsumeSpec plain;
        auto subscription = client->consume("orders", plain, never.deliver());
        CHECK(consumes.load() == 1);
        CHECK(consumes_with_arguments.load() == 0);
        subscription.reset();
        client.reset();
    }
}
