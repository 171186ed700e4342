#include <acemq/log.hpp>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace acemq {

namespace {

std::mutex sink_lock;
LogSink current_sink;
std::atomic<LogLevel> minimum_level{LogLevel::info};

const char* level_word(LogLevel level) {
    switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
    }
    return "error";
}

void to_stderr(LogLevel level, std::string_view line) {
    std::fprintf(stderr, "acemq %s: %.*s\n", level_word(level), static_cast<int>(line.size()), line.data());
}

}  // namespace

LogSink set_log_sink(LogSink sink) {
    std::lock_guard guard(sink_lock);
    LogSink previous = std::move(current_sink);
    current_sink = std::move(sink);
    return previous;
}

void set_log_level(LogLevel minimum) { minimum_level.store(minimum, std::memory_order_relaxed); }

LogLevel log_level() { return minimum_level.load(std::memory_order_relaxed); }

bool log_enabled(LogLevel level) { return level >= minimum_level.load(std::memory_order_relaxed); }

void log(LogLevel level, std::string_view line) {
    if (!log_enabled(level)) return;
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
