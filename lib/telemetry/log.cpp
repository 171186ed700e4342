#include <acemq/log.hpp>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include <acemq/json_codec.hpp>
#include "quoted_text.hpp"
#include "rfc3339.hpp"

namespace acemq {

namespace {

// Field values come from peers (a client's name, a peer address): bounded, so that one
// cannot make every line it appears in huge.
constexpr std::size_t field_limit = detail::shown_text_limit;

// One slot: the record sink that gets every record, and the line sink it wraps when it was
// installed through set_log_sink (so that set_log_sink gives it back as it was given).
std::mutex sink_lock;
LogRecordSink current_sink;
LogSink current_line_sink;
std::atomic<LogLevel> minimum_level{LogLevel::info};
std::atomic<LogFormat> default_format{LogFormat::text};

void to_stderr(const LogRecord& record) {
    std::string line = format_log_record(record, default_format.load(std::memory_order_relaxed));
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
}

LogRecordSink installed(LogRecordSink sink, LogSink line_sink) {
    std::lock_guard guard(sink_lock);
    LogRecordSink previous = std::move(current_sink);
    current_sink = std::move(sink);
    current_line_sink = std::move(line_sink);
    return previous;
}

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
    switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
    }
    return "error";
}

std::string format_log_record(const LogRecord& record, LogFormat format) {
    std::string line;
    if (format == LogFormat::text) {
        detail::append_rfc3339(line, record.time, detail::SecondFraction::millis);
        line += ' ';
        line += to_string(record.level);
        line += ' ';
        line += record.component.empty() ? std::string_view("acemq") : record.component;
        line += ": ";
        line += record.message;
        return line;
    }
    line = "{\"time\":\"";
    detail::append_rfc3339(line, record.time, detail::SecondFraction::millis);
    line += "\",\"level\":\"";
    line += to_string(record.level);
    line += "\",\"component\":" + json_quoted(record.component.empty() ? "acemq" : record.component);
    line += ",\"message\":" + json_quoted(record.message);
    for (const LogField& field : record.fields) {
        const std::string_view value = field.value.substr(0, detail::character_boundary(field.value, field_limit));
        line += ',' + json_quoted(field.name) + ':' + json_quoted(value);
    }
    line += '}';
    return line;
}

LogSink set_log_sink(LogSink sink) {
    LogRecordSink wrapper;
    if (sink) wrapper = [sink](const LogRecord& record) { sink(record.level, record.message); };
    LogSink previous_line;
    LogRecordSink previous;
    {
        std::lock_guard guard(sink_lock);
        previous_line = std::move(current_line_sink);
        previous = std::move(current_sink);
        current_sink = std::move(wrapper);
        current_line_sink = std::move(sink);
    }
    if (previous_line || !previous) return previous_line;
    return [previous](LogLevel level, std::string_view line) {
        previous(LogRecord{std::chrono::system_clock::now(), level, "", line, {}});
    };
}

LogRecordSink set_log_record_sink(LogRecordSink sink) { return installed(std::move(sink), nullptr); }

void set_log_format(LogFormat format) { default_format.store(format, std::memory_order_relaxed); }

void set_log_level(LogLevel minimum) { minimum_level.store(minimum, std::memory_order_relaxed); }

LogLevel log_level() { return minimum_level.load(std::memory_order_relaxed); }

bool log_enabled(LogLevel level) { return level >= minimum_level.load(std::memory_order_relaxed); }

void log(LogLevel level, std::string_view component, std::string_view message, std::initializer_list<LogField> fields) {
    if (!log_enabled(level)) return;
    LogRecordSink sink;
    {
        std::lock_guard guard(sink_lock);
        sink = current_sink;
    }
    const LogRecord record{std::chrono::system_clock::now(), level, component, message,
                           std::span<const LogField>(fields.begin(), fields.size())};
    if (sink)
        sink(record);
    else
        to_stderr(record);
}

void log(LogLevel level, std::string_view line) { log(level, "app", line); }

}  // namespace acemq
