// The family's tutorial 2, all together: a handler that fails is retried on a ladder,
// dead-lettered with the reason once its attempts run out, and replayed home when the
// trouble is over. Runs on the embedded broker; give --url amqp://... for RabbitMQ.
// --leave-dead-letters stops before the replay, for an operator to look at them with the
// `acemq` command (README, "Operating it").
//
//   build/examples/surviving_failure [--url URL] [--leave-dead-letters]
#include <acemq/acemq.hpp>

#include "command_line.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

using namespace std::chrono_literals;

namespace {

struct OrderPlaced {
    std::string order_id;
    std::int64_t total_cents;
};

}  // namespace

// Named, not anonymous: the reason written on a dead letter names the exception's type.
namespace warehouse {
struct Unavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
};
}  // namespace warehouse

namespace {

int run(const std::string& url, bool leave_dead_letters) {
    acemq::Bus bus = acemq::connect(url, {.origin = "shipping@tutorial"});
    bus.declare(acemq::Topology{}.queue("orders.new", {.dead_letter = true}));
    acemq::testing::Harness harness{bus};

    // Three attempts, 100 ms apart, then the dead-letter queue with the reason written on it.
    {
        acemq::Consumer shipping = bus.consume<OrderPlaced>(
            "orders.new",
            [](const acemq::Message<OrderPlaced>& message) -> acemq::Ack {
                std::printf("attempt %d for %s\n", message.envelope.attempt, message.payload.order_id.c_str());
                throw warehouse::Unavailable("the warehouse is not answering");
            },
            {.retry = acemq::fixed_retry(3, 100ms)});
        bus.publisher_to_queue("orders.new").send(OrderPlaced{"o-1", 4250});
        if (!harness.wait_dead_lettered("orders.new", 1, 10s)) {
            std::fprintf(stderr, "o-1 was not dead-lettered within 10 s\n");
            return 1;
        }
    }

    // Look at what is in the dead-letter queue, and leave it there.
    std::optional<acemq::Delivery> dead = bus.transport().pull(acemq::dead_letter_queue("orders.new"));
    if (!dead) {
        std::fprintf(stderr, "orders.new.dlq is empty\n");
        return 1;
    }
    const acemq::InboundMessage& copy = dead->message();
    const acemq::Envelope envelope = acemq::read_envelope(copy);
    const auto order = acemq::decode<OrderPlaced>(*acemq::default_codec(), copy.body(), copy.content_type());
    std::printf("dead: %s after %d attempts — %s\n", order.order_id.c_str(), envelope.attempt, envelope.error.c_str());
    dead->requeue();
    if (leave_dead_letters) return 0;

    // The warehouse is back: replay the dead letters and let a healthy consumer take them.
    acemq::Consumer shipping = bus.consume<OrderPlaced>("orders.new", [](const acemq::Message<OrderPlaced>& message) {
        std::printf("attempt %d for %s: shipped\n", message.envelope.attempt, message.payload.order_id.c_str());
        return acemq::accept();
    });
    const acemq::ReplayResult replayed = acemq::replay(bus, acemq::dead_letter_queue("orders.new"));
    if (!harness.wait_settled("orders.new", acemq::Outcome::acked, 1, 10s)) {
        std::fprintf(stderr, "the replayed order was not handled within 10 s\n");
        return 1;
    }
    shipping.close();
    std::printf("replay: %s\n", replayed.to_string().c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string url = example::option(argc, argv, "--url").value_or("inproc://surviving-failure");
    const bool leave_dead_letters = std::any_of(argv + 1, argv + argc, [](const char* argument) {
        return std::string_view(argument) == "--leave-dead-letters";
    });
    return example::run("surviving_failure", [&] { return run(url, leave_dead_letters); });
}
