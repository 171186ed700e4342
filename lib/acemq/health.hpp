// Is the connection to the broker good? What a readiness probe asks (Bus::health).
//
// up        the broker answered (or the transport is in-process); also when the broker has
//           blocked the connection, which pauses publishing but loses nothing
// degraded  the broker answered, but some consumers have stopped reading (their queue was
//           deleted under them)
// down      no answer in time, or the connection is closed
//
// Readiness: up and degraded are ready (200), down is not (503). Liveness must not ask the
// broker at all.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace acemq {

struct Health {
    enum class Status { up, degraded, down };
    Status status = Status::up;
    std::string detail{};  // why, when not plainly up; e.g. "the broker has blocked this connection; ..."
    bool blocked = false;  // the broker blocks publishing on this connection (a resource alarm)
    std::chrono::microseconds round_trip{0};  // how long the broker took to answer; 0 when not asked
};

std::string_view to_string(Health::Status status);  // "up", "degraded", "down"

// The family's report: {"status":"up","detail":"...","checked":"2026-11-30T12:00:00Z",
// "parts":{"blocked":false,"roundTripMillis":0.412}}; "detail" is left out when empty.
std::string to_json(const Health& health, std::chrono::system_clock::time_point checked);

}  // namespace acemq
