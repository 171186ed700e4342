#include <acemq/health.hpp>

#include <cstdio>

#include <acemq/json_codec.hpp>

#include "rfc3339.hpp"

namespace acemq {

std::string_view to_string(Health::Status status) {
    switch (status) {
    case Health::Status::up: return "up";
    case Health::Status::degraded: return "degraded";
    case Health::Status::down: return "down";
    }
    return "down";
}

std::string to_json(const Health& health, std::chrono::system_clock::time_point checked) {
    const std::string stamp = detail::rfc3339(checked, detail::SecondFraction::none);
    char millis[32];
    std::snprintf(millis, sizeof millis, "%.3f", static_cast<double>(health.round_trip.count()) / 1000.0);
    std::string out = "{\"status\":" + json_quoted(to_string(health.status));
    if (!health.detail.empty()) out += ",\"detail\":" + json_quoted(health.detail);
    out += ",\"checked\":" + json_quoted(stamp);
    out += ",\"parts\":{\"blocked\":" + std::string(health.blocked ? "true" : "false") +
           ",\"roundTripMillis\":" + millis + ",\"consumers\":" + std::to_string(health.consumers) +
           ",\"inFlight\":" + std::to_string(health.in_flight) + ",\"stoppedReading\":[";
    for (std::size_t i = 0; i < health.stopped_reading.size(); ++i)
        out += (i == 0 ? "" : ",") + json_quoted(health.stopped_reading[i]);
    out += "]}}";
    return out;
}

}  // namespace acemq
