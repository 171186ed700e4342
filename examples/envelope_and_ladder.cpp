// What an AceMQ message carries and how a failing one climbs its retry ladder, with no
// broker at all: builds a real envelope, prints the headers it puts on the wire, walks an
// exponential policy's ladder attempt by attempt, and prints what a consumer declares.
//
//   build/examples/envelope_and_ladder
#include <acemq/acemq.hpp>

#include <cstdio>
#include <iostream>

using namespace std::chrono_literals;

namespace {

void print_headers(const acemq::Headers& headers) {
    for (const auto& [name, value] : headers)
        std::printf("  %-22s %s\n", name.str().c_str(), value.to_string().c_str());
}

}  // namespace

int main() {
    acemq::Envelope envelope = acemq::Envelope::for_new_message("order.placed", "orders@pod-1");
    envelope.causation = "cart-7";
    acemq::set_header(envelope, "x-tenant", "acme");
    std::puts("The headers a publish of order.placed puts on the wire:");
    print_headers(acemq::render_headers(envelope));

    const acemq::RetryPolicy policy = acemq::exponential_retry(6, 10s, 5min);
    std::puts("\nexponential_retry(6, 10s, 5min), attempt by attempt:");
    for (std::int32_t attempt = 1;; ++attempt) {
        const std::optional<acemq::RetryWait> wait = policy.next_wait(attempt, 0ms);
        if (!wait) {
            std::printf("  attempt %d fails: no attempts left, to %s\n", attempt,
                        acemq::dead_letter_queue("orders.new").c_str());
            break;
        }
        const auto scheduled = policy.base_delay(attempt);
        if (wait->in_broker)
            std::printf("  attempt %d fails: waits %lld ms on rung %s\n", attempt,
                        static_cast<long long>(wait->delay.count()),
                        acemq::rung_queue("orders.new", scheduled).c_str());
        else
            std::printf("  attempt %d fails: waits %lld ms in the consumer (%lld ms before jitter)\n", attempt,
                        static_cast<long long>(wait->delay.count()), static_cast<long long>(scheduled.count()));
    }

    std::puts("\nWhat a consumer of orders.new with this policy declares:");
    std::cout << acemq::consumer_topology("orders.new", policy);
}
