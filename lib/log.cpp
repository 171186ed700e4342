#include <acemq/log.hpp>

#include <cstdio>
#include <mutex>
#include <string>

namespace acemq {

namespace {

std::mutex sink_lock;
LogSink current_sink;

void to_stderr(LogLevel level, std::string_view line) {
    if (level < LogLevel::warning) return;
    std::fprintf(stderr, "acemq %s: %.*s\n", level == LogLevel::error ? "error" : "warning",
                 static_cast<int>(line.size()), line.data());
}

}  // namespace

LogSink set_log_sink(LogSink sink) {
    std::lock_guard guard(sink_lock);
    LogSink previous = std::move(current_sink);
    current_sink = std::move(sink);
    return previous;
}

void log(LogLevel level, std::string_view line) {
    LogSink sink;
    {
        std::lock_guard guard(sink_lock);
        sink = current_sink;
    }
    if (sink)
        sink(level, line);
    else
        to_stderr(level, line);
}

}  // namespace acemq
