// One answer for a readiness probe out of several checks: the bus's own ("broker") and the
// application's (a database, a cache). The checks run at once, under one deadline:
//
//   auto report = acemq::aggregate_health({
//       {"broker", [&bus](auto deadline) { return bus.health(deadline); }},
//       {"db", [&db](auto) { return db.ping() ? acemq::Health{} : acemq::Health{.status = down}; }},
//   });
//   report.status  // the worst part: down > degraded > up
//   acemq::to_json(report, std::chrono::system_clock::now())
//
// aggregate_health is thread-safe and returns by the deadline (plus a little scheduling):
// a check still running then is reported down and left to finish on its own thread, its
// answer dropped. So a check must not refer to anything that may be gone by the time it
// returns, other than what it owns or shares.
#pragma once

#include <acemq/health.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace acemq {

struct HealthCheck {
    std::string name;  // "broker", "db", ...: the key under "parts"
    // Is given 9/10 of the aggregate's deadline, to be heard; may throw (the part is then down, with the text).
    std::function<Health(std::chrono::milliseconds deadline)> check;
};

struct AggregateHealth {
    Health::Status status = Health::Status::up;
    // Each part that said something, in the checks' order: "<name>: <detail>", joined by
    // "; ", after the overall status, e.g. "up: broker: the broker has blocked this ...".
    std::string detail{};
    std::vector<std::pair<std::string, Health>> parts{};  // in the checks' order
};

AggregateHealth aggregate_health(const std::vector<HealthCheck>& checks,
                                 std::chrono::milliseconds deadline = std::chrono::seconds(5));

// {"status":"up","detail":"...","checked":"2026-11-30T12:00:00Z","parts":{"broker":{...}}};
// each part is that check's own report (to_json of its Health); "detail" is left out when
// empty.
std::string to_json(const AggregateHealth& health, std::chrono::system_clock::time_point checked);

}  // namespace acemq
