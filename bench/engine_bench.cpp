// The engine on the embedded broker, side by side with the broker underneath it:
//   - a confirmed Publisher::send of a small struct against the transport's own publish
//     of the same bytes and headers, prepared once (what the engine adds: envelope,
//     encoding, interceptors, confirm check);
//   - send_all of 1,000 messages;
//   - publish -> handle -> ack through a consumer, per message, against the broker's own
//     publish + deliver + ack of the same prepared message (prefetch 1, one at a time),
//     both in this one run.
//
//   build/bench/engine_bench     (ACEMQ_BENCH_QUICK=1: shorter runs, 50,000 through the consumer)
//   build/bench/engine_bench --profile-consumer N | --profile-send N
//       only the consumer row's loop, or only Publisher::send's, N messages, for a profiler
//       to count per message:
//       valgrind --tool=callgrind build-bench/bench/engine_bench --profile-consumer 20000
#include <acemq/acemq.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "measure.hpp"

using namespace std::chrono_literals;

namespace {

struct Order {
    std::string order_id;
    std::int64_t total_cents;
};

// Sends `messages` (a multiple of 1,000) in send_all batches into a queue one Consumer
// accepts from; the time per message, publish to the last one handled.
double through_a_consumer(acemq::Bus& bus, std::uint64_t messages, const Order& order) {
    bus.declare(acemq::Topology{}.queue("bench.flow", {.type = acemq::QueueType::classic}));
    std::atomic<std::uint64_t> handled{0};
    acemq::Consumer consumer = bus.consume<Order>("bench.flow",
                                                  [&](const acemq::Message<Order>&) {
                                                      handled.fetch_add(1, std::memory_order_relaxed);
                                                      return acemq::accept();
                                                  },
                                                  {.prefetch = 200});
    acemq::Publisher flow = bus.publisher_to_queue("bench.flow");
    const auto start = std::chrono::steady_clock::now();
    std::vector<Order> chunk(1000, order);
    for (std::uint64_t i = 0; i < messages / 1000; ++i) flow.send_all(chunk);
    while (handled.load() < messages) std::this_thread::sleep_for(1ms);
    const double per_message =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
        static_cast<double>(messages);
    consumer.close();
    return per_message;
}

// Keeps the send rows' queue from growing without bound while measuring (the same for both
// sides): empties it by deleting and declaring it again.
void drain(acemq::Bus& bus) {
    bus.transport().delete_queue("bench.send");
    bus.declare(acemq::Topology{}.queue("bench.send", {.type = acemq::QueueType::classic}));
}

// Sends `messages` one confirmed send at a time into a queue nobody reads, emptied every
// 4,096 so that it does not grow; the time per send.
double one_send_at_a_time(acemq::Bus& bus, std::uint64_t messages, const Order& order) {
    acemq::Publisher publisher = bus.publisher_to_queue("bench.send");
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t i = 1; i <= messages; ++i) {
        bench::keep(publisher.send(order));
        if (i % 4096 == 0) drain(bus);
    }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
           static_cast<double>(messages);
}

// Which row --profile-consumer N or --profile-send N asks for alone, and N; exits with the
// usage for anything else.
struct Profiled {
    bool consumer;
    std::uint64_t messages;
};
std::optional<Profiled> profiled_row(int argc, char** argv) {
    if (argc == 1) return std::nullopt;
    if (argc == 3) {
        const std::string_view row = argv[1];
        const std::uint64_t count = std::strtoull(argv[2], nullptr, 10);
        if ((row == "--profile-consumer" || row == "--profile-send") && count >= 1000 && count % 1000 == 0)
            return Profiled{row == "--profile-consumer", count};
    }
    std::fprintf(stderr,
                 "usage: %s [--profile-consumer N | --profile-send N]   (N a multiple of 1000; ACEMQ_BENCH_QUICK=1)\n",
                 argv[0]);
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    const std::optional<Profiled> profiled = profiled_row(argc, argv);
    acemq::Bus bus = acemq::connect("inproc://engine-bench", {.origin = "bench@local"});
    bus.declare(acemq::Topology{}.queue("bench.send", {.type = acemq::QueueType::classic}));
    const Order order{"o-1", 4250};
    if (profiled && profiled->consumer) {
        std::printf("%llu messages through one consumer: %.1f ns/msg\n",
                    static_cast<unsigned long long>(profiled->messages),
                    through_a_consumer(bus, profiled->messages, order));
        return 0;
    }
    if (profiled) {
        std::printf("%llu confirmed sends: %.1f ns/send\n", static_cast<unsigned long long>(profiled->messages),
                    one_send_at_a_time(bus, profiled->messages, order));
        return 0;
    }
    acemq::Publisher publisher = bus.publisher_to_queue("bench.send");

    std::puts("publish, one confirmed message at a time (no consumer):");
    std::size_t sent = 0;
    const double engine = bench::ns_per_op([&] {
        bench::keep(publisher.send(order));
        if (++sent % 4096 == 0) drain(bus);
    });
    drain(bus);
    const acemq::Encoded encoded = acemq::encode(*acemq::default_codec(), order);
    // Packed once, for the message's id, as the Publisher hands them over.
    const acemq::Envelope envelope = acemq::Envelope::for_new_message("bench.send", "bench@local");
    const acemq::PackedTable headers = acemq::pack_headers(envelope);
    const double raw = bench::ns_per_op([&] {
        acemq::OutboundMessage message{"", "bench.send", encoded.body, encoded.content_type, envelope.id, headers,
                                       {}, true,         false};
        bench::keep(bus.transport().publish(std::move(message)));
        if (++sent % 4096 == 0) drain(bus);
    });
    drain(bus);
    bench::report("Publisher::send<Order>", engine);
    bench::report("Transport::publish of prepared bytes", raw);
    bench::report_ratio("send", engine, raw);
    bench::record({.name = "inproc Publisher::send, confirmed",
                   .ours = engine,
                   .against = "Transport::publish of the prepared message",
                   .underneath = raw,
                   .unit = "ns/op",
                   .aim = 1.3});

    std::puts("send_all, 1,000 messages:");
    std::vector<Order> batch(1000, order);
    const double per_batch = bench::ns_per_op(
        [&] {
            bench::keep(publisher.send_all(batch));
            drain(bus);
        },
        5, 300ms);
    bench::report("send_all(1000), per message", per_batch / 1000.0);
    bench::record({.name = "inproc Publisher::send_all(1000), per message",
                   .ours = per_batch / 1000.0,
                   .against = "Publisher::send, one at a time",
                   .underneath = engine,
                   .unit = "ns/op"});

    std::puts("the broker underneath: publish + deliver + ack, one at a time:");
    bus.declare(acemq::Topology{}.queue("bench.broker", {.type = acemq::QueueType::classic}));
    std::optional<acemq::Delivery> held;
    auto subscription = bus.transport().consume("bench.broker", acemq::ConsumeSpec{.prefetch = 1},
                                                [&](acemq::Delivery delivery) { held = std::move(delivery); });
    const double broker_round_trip = bench::ns_per_op([&] {
        bus.transport().publish(acemq::OutboundMessage{
            "", "bench.broker", encoded.body, encoded.content_type, envelope.id, headers, {}, true, false});
        held->ack();
    });
    subscription->close();
    bench::report("Transport::publish + deliver + ack, prefetch 1", broker_round_trip);

    std::puts("publish -> handle -> ack through a consumer:");
    const std::uint64_t messages = bench::quick_from_environment() ? 50000 : 200000;
    const double round_trip = through_a_consumer(bus, messages, order);
    bench::report("per message, " + std::to_string(messages) + " through one consumer", round_trip);
    bench::report_ratio("through a consumer / the broker's own round trip", round_trip, broker_round_trip);
    bench::record({.name = "inproc publish → handle → ack through a Consumer",
                   .ours = round_trip,
                   .against = "the embedded broker's own publish + deliver + ack",
                   .underneath = broker_round_trip,
                   .unit = "ns/msg",
                   .aim = 2});
}
