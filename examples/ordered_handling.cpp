// An edge box reading sensors: each device's readings must be applied in the order they were
// taken (a meter's deltas, a valve's open/close), but one worker cannot keep up with all the
// devices. acemq::ordered keeps each device's readings one at a time, in arrival order, while
// eight workers handle different devices side by side.
//
//   build/examples/ordered_handling [--url URL]
//
// Runs on the embedded broker; give --url amqp://... or zmq+tcp://... for another. The order
// holds within this process: to spread one queue's devices over several processes, route by
// acemq::partitioned_routing_key to one queue per partition (docs/ordered.md).
#include <acemq/acemq.hpp>

#include "command_line.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>

using namespace std::chrono_literals;

struct Reading {
    std::string device;
    std::int64_t sequence = 0;  // as the device numbered it
    double value = 0;
};

namespace {

constexpr int devices = 6;
constexpr int readings_per_device = 20;

// What the handlers saw, for the line at the end.
struct Ledger {
    std::mutex lock;
    std::condition_variable changed;
    std::map<std::string, std::int64_t> next_expected;
    int handled = 0;
    int out_of_order = 0;
    int devices_at_once = 0;
    int most_devices_at_once = 0;
};

int run(const std::string& url) {
    acemq::Bus bus = acemq::connect(url, {.origin = "edge-box@ordered-handling"});
    bus.declare(acemq::Topology{}.queue("readings", {.dead_letter = true}));

    Ledger ledger;
    auto apply = [&ledger](const acemq::Message<Reading>& message) {
        const Reading& reading = message.payload;
        {
            std::lock_guard guard(ledger.lock);
            if (reading.sequence != ledger.next_expected[reading.device]) ++ledger.out_of_order;
            ledger.next_expected[reading.device] = reading.sequence + 1;
            ledger.most_devices_at_once = std::max(ledger.most_devices_at_once, ++ledger.devices_at_once);
        }
        std::this_thread::sleep_for(2ms);  // applying the reading: the work worth spreading out
        {
            std::lock_guard guard(ledger.lock);
            --ledger.devices_at_once;
            ++ledger.handled;
        }
        ledger.changed.notify_all();
        return acemq::accept();
    };
    acemq::Consumer consumer =
        bus.consume("readings", acemq::ordered(acemq::by_header("device"), apply), {.prefetch = 50, .concurrency = 8});

    // The devices report interleaved, as they would over one uplink.
    acemq::Publisher uplink = bus.publisher_to_queue("readings");
    for (int sequence = 0; sequence < readings_per_device; ++sequence)
        for (int device = 0; device < devices; ++device) {
            const std::string name = "meter-" + std::to_string(device + 1);
            acemq::SendOptions options;
            options.headers.insert_or_assign("device", acemq::FieldValue(name));
            uplink.send(Reading{name, sequence, 0.5 * sequence}, options);
        }

    std::unique_lock guard(ledger.lock);
    if (!ledger.changed.wait_for(guard, 30s, [&] { return ledger.handled == devices * readings_per_device; })) {
        std::fprintf(stderr, "only %d of %d readings were handled within 30 s\n", ledger.handled,
                     devices * readings_per_device);
        return 1;
    }
    std::printf("handled %d readings from %d devices on 8 workers, up to %d devices at once\n", ledger.handled, devices,
                ledger.most_devices_at_once);
    std::printf("each device's readings in arrival order: %d out of order\n", ledger.out_of_order);
    return ledger.out_of_order == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string url = example::option(argc, argv, "--url").value_or("inproc://ordered-handling");
    return example::run("ordered_handling", [&] { return run(url); });
}
