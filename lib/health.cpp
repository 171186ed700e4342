#include "acemq/health.hpp"

#include <cstdio>
#include <ctime>

namespace acemq {

std::string_view to_string(Health::Status status) {
    switch (status) {
    case Health::Status::up: return "up";
    case Health::Status::degraded: return "degraded";
    case Health::Status::down: return "down";
    }
    return "down";
}

namespace {

std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
                out += escaped;
            } else {
                out += c;
            }
        }
    }
    return out + "\"";
}

}  // namespace

std::string to_json(const Health& health, std::chrono::system_clock::time_point checked) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(checked);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
    char millis[32];
    std::snprintf(millis, sizeof millis, "%.3f", static_cast<double>(health.round_trip.count()) / 1000.0);
    std::string out = "{\"status\":" + json_string(to_string(health.status));
    if (!health.detail.empty()) out += ",\"detail\":" + json_string(health.detail);
    out += ",\"checked\":" + json_string(stamp);
    out += ",\"parts\":{\"blocked\":" + std::string(health.blocked ? "true" : "false") +
           ",\"roundTripMillis\":" + millis + "}}";
    return out;
}

}  // namespace acemq
