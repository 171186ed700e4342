// Where the library's own log lines go. By default warnings and errors go to stderr;
// replace the sink to route them into your logging. Never given payloads or credentials.
// Thread-safe.
#pragma once

#include <functional>
#include <string_view>

namespace acemq {

enum class LogLevel { debug, info, warning, error };

using LogSink = std::function<void(LogLevel, std::string_view line)>;

// Installs `sink` (an empty function restores the default) and returns the previous one.
LogSink set_log_sink(LogSink sink);
void log(LogLevel level, std::string_view line);

}  // namespace acemq
