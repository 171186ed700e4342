// A harness for your own tests: watch a Bus and wait, with a bound, until what you expect
// has happened. Never sleep blindly in a test of messaging code: wait for the event.
//
//   acemq::Bus bus = acemq::connect("inproc://test-" + unique_name());
//   acemq::testing::Harness harness{bus};
//   ... publish, consume ...
//   REQUIRE(harness.wait_dead_lettered("shipping.orders", 1, 2s));
//
// Counts start when the harness is made. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/bus.hpp>
#include <acemq/settlement.hpp>

namespace acemq::testing {

struct SettledRecord {
    std::string queue;
    Envelope envelope;
    Settlement settlement;
};

struct PublishedRecord {
    std::string exchange;
    std::string routing_key;
    Envelope envelope;
};

class Harness {
public:
    explicit Harness(Bus& bus);

    // Each waits until at least `count` such events were seen and returns true, or returns
    // false once `timeout` has passed.
    bool wait_consumed(std::string_view queue, std::size_t count, std::chrono::milliseconds timeout) const;
    bool wait_settled(std::string_view queue, Outcome outcome, std::size_t count,
                      std::chrono::milliseconds timeout) const;
    // Rejected or dead-lettered (to {queue}.dlq); parked messages are counted by wait_parked.
    bool wait_dead_lettered(std::string_view queue, std::size_t count, std::chrono::milliseconds timeout) const;
    bool wait_parked(std::string_view queue, std::size_t count, std::chrono::milliseconds timeout) const;
    // Confirmed publishes through a Publisher with this routing key (engine republishes —
    // retries, dead letters — are not publishes).
    bool wait_published(std::string_view routing_key, std::size_t count, std::chrono::milliseconds timeout) const;

    std::vector<SettledRecord> settled(std::string_view queue) const;
    std::vector<PublishedRecord> published() const;

    class Recorder;

private:
    std::shared_ptr<Recorder> recorder_;
};

}  // namespace acemq::testing
