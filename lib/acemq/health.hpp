// Is the connection to the broker good? What a readiness probe asks (Bus::health).
//
// up        the broker answered (or the transport is in-process); also when the broker has
//           blocked the connection, which pauses publishing but loses nothing
// degraded  the broker answered, but some consumers have stopped reading: their queue was
//           deleted under them (or the broker cancelled them), or deliveries have waited past
//           ConsumerOptions::stall_after while every worker was busy with an older one
// down      no answer in time, the connection closed or its session known lost (said at once),
//           or (a durable embedded broker, here or over zmq) the data file refuses commits
//
// Readiness: up and degraded are ready (200), down is not (503). Liveness must not ask the
// broker at all.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace acemq {

struct Health {
    enum class Status { up, degraded, down };
    Status status = Status::up;
    std::string detail{};  // why, when not plainly up; e.g. "the broker has blocked this connection; ..."
    bool blocked = false;  // the broker blocks publishing on this connection (a resource alarm)
    std::chrono::microseconds round_trip{0};  // how long the broker took to answer; 0 when not asked
    // The consumer half, filled in by Bus::health (a transport's own check leaves it empty,
    // except AMQP's stopped_reading, which names the queues whose consumers the broker cancelled).
    std::size_t consumers = 0;                   // live consumers on the bus
    std::size_t in_flight = 0;                   // deliveries handed to them and not yet settled
    std::vector<std::string> stopped_reading{};  // their queues, once each, in the order asked
};

std::string_view to_string(Health::Status status);  // "up", "degraded", "down"

// The family's report: {"status":"up","detail":"...","checked":"2026-11-30T12:00:00Z",
// "parts":{"blocked":false,"roundTripMillis":0.412,"consumers":2,"inFlight":5,
// "stoppedReading":["orders"]}}; "detail" is left out when empty, the parts never are.
std::string to_json(const Health& health, std::chrono::system_clock::time_point checked);

}  // namespace acemq
