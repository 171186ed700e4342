// Internal: one way of writing a JSON string, shared by the JSON codec and the health
// reports, and of writing the time a report was made.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace acemq::detail {

// `text` as a JSON string, quoted and escaped as JsonCodec writes strings (no UTF-8 check).
std::string json_quoted(std::string_view text);

// "2026-11-30T12:00:00Z": RFC 3339, UTC, whole seconds (defined in health.cpp).
std::string rfc3339_seconds(std::chrono::system_clock::time_point when);

}  // namespace acemq::detail
