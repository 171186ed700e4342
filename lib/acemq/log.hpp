// Where the library's own log lines go. By default warnings and errors go to stderr;
// replace the sink to route them into your logging, and lower the minimum level to see
// more. Never given payloads or credentials. Thread-safe.
#pragma once

#include <functional>
#include <string_view>

namespace acemq {

enum class LogLevel { debug, info, warning, error };

using LogSink = std::function<void(LogLevel, std::string_view line)>;

// Installs `sink` (an empty function restores the default, stderr with the level word) and
// returns the previous one.
LogSink set_log_sink(LogSink sink);

// Lines below `minimum` are dropped before any sink sees them; LogLevel::warning unless set.
void set_log_level(LogLevel minimum);
LogLevel log_level();
// Whether a line at `level` would be passed on: check it before building an expensive line.
bool log_enabled(LogLevel level);

void log(LogLevel level, std::string_view line);

}  // namespace acemq
