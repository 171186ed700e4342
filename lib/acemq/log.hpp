// Where the library's own log lines go. By default info and above go to stderr (the
// library says little at info: a broker session opened or closed, a connection recovered,
// and the lines with_logging() was asked for); replace the sink to route them into your
// logging, raise the minimum level to see less or lower it to debug to see more. Never
// given payloads or credentials. Thread-safe.
#pragma once

#include <functional>
#include <string_view>

namespace acemq {

enum class LogLevel { debug, info, warning, error };

using LogSink = std::function<void(LogLevel, std::string_view line)>;

// Installs `sink` (an empty function restores the default, stderr with the level word) and
// returns the previous one.
LogSink set_log_sink(LogSink sink);

// Lines below `minimum` are dropped before any sink sees them; LogLevel::info unless set.
void set_log_level(LogLevel minimum);
LogLevel log_level();
// Whether a line at `level` would be passed on: check it before building an expensive line.
bool log_enabled(LogLevel level);

void log(LogLevel level, std::string_view line);

}  // namespace acemq
