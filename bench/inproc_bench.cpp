// The embedded broker's publish path, in ns/op. Every figure includes building the
// OutboundMessage (a small body and routing key); the first line measures that alone, so
// the broker's share is the difference. The broker's publish + deliver + ack round trip is
// in engine_bench, beside the engine's, so that the two come from one run.
#include <memory>
#include <string>

#include <acemq/inproc.hpp>
#include <acemq/transport.hpp>
#include "inproc/inproc_transport.hpp"
#include "measure.hpp"

using namespace acemq;

namespace {

OutboundMessage small_message(const char* exchange, const char* routing_key) {
    OutboundMessage message;
    message.exchange = exchange;
    message.routing_key = routing_key;
    message.body = Bytes(64, std::byte{'x'});
    message.content_type = "application/msgpack";
    return message;
}

// A queue nobody consumes grows without end; every `every` publishes it is deleted and
// declared again (amortised into the figure, as the messages' release is real work).
class Drain {
public:
    Drain(Transport& transport, std::string queue, Topology topology, std::size_t every = 4096)
        : transport_(transport), queue_(std::move(queue)), topology_(std::move(topology)), every_(every) {
        transport_.declare(topology_);
    }
    void tick() {
        if (++count_ % every_ != 0) return;
        transport_.delete_queue(queue_);
        transport_.declare(topology_);
    }

private:
    Transport& transport_;
    std::string queue_;
    Topology topology_;
    std::size_t every_;
    std::size_t count_ = 0;
};

}  // namespace

int main() {
    std::printf("inproc broker\n");
    auto transport = open_transport("inproc://bench");

    bench::report("build the OutboundMessage only (baseline)", bench::ns_per_op([] {
                      OutboundMessage message = small_message("", "orders");
                      bench::keep(message);
                  }));

    double direct = 0;
    {
        Drain drain(*transport, "orders", Topology{}.queue("orders", {.type = QueueType::classic}));
        direct = bench::ns_per_op([&] {
            bench::keep(transport->publish(small_message("", "orders")));
            drain.tick();
        });
        bench::report("publish, default exchange, no consumer", direct);
    }
    {
        Topology topology;
        topology.exchange("events", ExchangeKind::topic).queue("events.orders", {.type = QueueType::classic});
        topology.bind("events.orders", "events", "orders.*.created");
        for (const char* other : {"payments.#", "*.refunded", "orders.*.cancelled", "audit.#", "orders.eu.*.x",
                                  "shipping.*", "#.failed", "users.*.*", "orders.us.created.late"})
            topology.queue(std::string("other.") + other, {.type = QueueType::classic})
                .bind(std::string("other.") + other, "events", other);
        Drain drain(*transport, "events.orders", topology);
        const double topic = bench::ns_per_op([&] {
            bench::keep(transport->publish(small_message("events", "orders.eu.created")));
            drain.tick();
        });
        bench::report("publish, topic exchange (10 bindings), no consumer", topic);
        bench::record({.name = "inproc broker publish, topic exchange (10 bindings)",
                       .ours = topic,
                       .against = "publish to the default exchange",
                       .underneath = direct,
                       .unit = "ns/op"});
    }
    transport->close();
}
