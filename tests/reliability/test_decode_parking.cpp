// Whatever a decoder throws, the message is parked with the reason and the consumer goes on
// (issue 9, item 3): a std::bad_alloc or a codec of the application's that throws something
// that is not even a std::exception used to escape the worker and end the process.
#include "../conformance/conformance.hpp"

#include <algorithm>
#include <atomic>
#include <new>

using namespace conformance;
using acemq::Message;

namespace {

struct Sentinel {
    int code;
};

// Reads every message, and fails as told on a body that says "oom" or "odd"; any other
// body is a msgpack Order.
class ThrowingCodec final : public acemq::Codec {
public:
    std::string_view name() const noexcept override { return "ThrowingCodec"; }
    std::string_view content_type() const noexcept override { return acemq::content_types::msgpack; }
    bool can_decode(std::string_view) const noexcept override { return true; }
    std::vector<std::byte> encode(const acemq::Value& value) const override { return inner_.encode(value); }
    acemq::Value decode(std::span<const std::byte> body, std::string_view content_type) const override {
        const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
        if (text == "oom") throw std::bad_alloc();
        if (text == "odd") throw Sentinel{42};
        return inner_.decode(body, content_type);
    }

private:
    acemq::MsgpackCodec inner_;
};

acemq::Encoded raw(std::string_view text) {
    acemq::Bytes body;
    for (char c : text) body.push_back(static_cast<std::byte>(c));
    return acemq::Encoded{body, "application/msgpack"};
}

}  // namespace

TEST_CASE("any exception from decoding parks the message and the consumer keeps going") {
    Fixture f;
    const std::string queue = f.source_queue("throwing-codec");
    std::atomic<int> handled{0};
    acemq::ConsumerOptions options;
    options.codec = std::make_shared<ThrowingCodec>();
    auto consumer = f.bus().consume<Order>(
        queue,
        [&](const Message<Order>&) {
            ++handled;
            return acemq::accept();
        },
        options);
    auto publisher = f.bus().publisher_to_queue(queue, {.codec = std::make_shared<acemq::MsgpackCodec>()});
    publisher.send_raw(raw("oom"));
    publisher.send_raw(raw("odd"));
    publisher.send(Order{"o-1", 100});

    REQUIRE(f.harness().wait_parked(queue, 2, 10s));
    REQUIRE(f.harness().wait_settled(queue, acemq::Outcome::acked, 1, 10s));
    consumer.close();
    CHECK(handled == 1);

    std::vector<std::string> reasons;
    for (int i = 0; i < 2; ++i) {
        auto copy = f.pull(acemq::parked_queue(queue));
        REQUIRE(copy.has_value());
        reasons.push_back(envelope_of(*copy).error);
    }
    const auto bad_alloc =
        std::find(reasons.begin(), reasons.end(), "could not be decoded: std::bad_alloc: std::bad_alloc");
    REQUIRE(bad_alloc != reasons.end());
    const std::string& other = reasons[bad_alloc == reasons.begin() ? 1 : 0];
    CHECK_THAT(other, Catch::StartsWith("could not be decoded: "));
    CHECK(other.size() > std::string_view("could not be decoded: ").size());
}
