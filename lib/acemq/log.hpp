// Where the library's own log lines go. By default info and above go to stderr (the
// library says little at info: a broker session opened or closed, a connection recovered,
// and the lines with_logging() was asked for); replace the sink to route them into your
// logging, raise the minimum level to see less or lower it to debug to see more. Never
// given payloads or credentials. Thread-safe.
//
// Every line is a LogRecord: when (UTC), how bad, which part of the library said it (its
// component: "zmq-broker", "durable-broker", "zmq", "amqp", "outbox", "engine", ...), a
// sentence that stands on its own, and for the lines an operator filters on (a broker
// session opened or closed, a frame refused) named fields such as peer, client and reason.
// The default sink writes a record as one line of text,
//
//   2026-12-05T13:40:01.123Z info zmq-broker: session 3 of client "billing" from ... ended: ...
//
// or, after set_log_format(LogFormat::json), as one JSON object a line (for journald, Loki):
//
//   {"time":"2026-12-05T13:40:01.123Z","level":"info","component":"zmq-broker",
//    "message":"session 3 ... ended: ...","peer":"127.0.0.1:53412","client":"billing",...}
//
// Field values are cut to 256 bytes (at a UTF-8 boundary); the sentence holds what they say.
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace acemq {

enum class LogLevel { debug, info, warning, error };
// "debug", "info", "warning", "error".
std::string_view to_string(LogLevel level) noexcept;

// A named value of a record, for machines; the message says the same for people.
struct LogField {
    std::string_view name;
    std::string_view value;
};

// Valid only during the sink's call: copy what you keep.
struct LogRecord {
    std::chrono::system_clock::time_point time;
    LogLevel level;
    std::string_view component;
    std::string_view message;
    std::span<const LogField> fields;
};

// A sink of lines: given the level and the message only.
using LogSink = std::function<void(LogLevel, std::string_view line)>;
// A sink of whole records.
using LogRecordSink = std::function<void(const LogRecord&)>;

// Installs `sink` (an empty function restores the default) and returns the previous one.
// There is one sink: each call replaces whatever either installed. The previous sink comes
// back as it was given, or, when it was installed through the other call, wrapped (a line
// sink given a record as its level and message; a record sink given a line as a record
// with the component "").
LogSink set_log_sink(LogSink sink);
LogRecordSink set_log_record_sink(LogRecordSink sink);

// How the default sink writes a record: text (as above) unless set.
enum class LogFormat { text, json };
void set_log_format(LogFormat format);
// The default sink's line for `record`, without the newline, in `format`.
std::string format_log_record(const LogRecord& record, LogFormat format);

// Lines below `minimum` are dropped before any sink sees them; LogLevel::info unless set.
void set_log_level(LogLevel minimum);
LogLevel log_level();
// Whether a line at `level` would be passed on: check it before building an expensive line.
bool log_enabled(LogLevel level);

// Passes a record made now to the sink.
void log(LogLevel level, std::string_view component, std::string_view message,
         std::initializer_list<LogField> fields = {});
// The same with the component "app": for a program's own lines.
void log(LogLevel level, std::string_view line);

}  // namespace acemq
