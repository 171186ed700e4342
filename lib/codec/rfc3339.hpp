// Internal: a time as RFC 3339 text, UTC, the one way the library writes one: the health
// reports' "checked" and the lease end in a log line (whole seconds), acemq-replayed-at
// (milliseconds, as the family's other languages write it), a span's and its events' times
// (microseconds). Thread-safe (the text of the last second is kept per thread).
#pragma once

#include <chrono>
#include <string>

namespace acemq::detail {

// How much of a second the text shows; the rest is cut, not rounded.
enum class SecondFraction { none, millis, micros };

// Appends "2026-11-30T12:00:00Z" (none), "2026-11-30T12:00:00.789Z" (millis) or
// "2026-11-30T12:00:00.789012Z" (micros).
void append_rfc3339(std::string& out, std::chrono::system_clock::time_point when, SecondFraction fraction);

std::string rfc3339(std::chrono::system_clock::time_point when, SecondFraction fraction);

}  // namespace acemq::detail
