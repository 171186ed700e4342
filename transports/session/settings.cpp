#include "session/settings.hpp"

#include <acemq/error.hpp>
#include <acemq/log.hpp>

namespace acemq {

std::string_view to_string(ConnectionEvent::Kind kind) {
    switch (kind) {
    case ConnectionEvent::Kind::lost: return "lost";
    case ConnectionEvent::Kind::retrying: return "retrying";
    case ConnectionEvent::Kind::recovered: return "recovered";
    case ConnectionEvent::Kind::blocked: return "blocked";
    case ConnectionEvent::Kind::unblocked: return "unblocked";
    case ConnectionEvent::Kind::gave_up: return "gave-up";
    }
    return "unknown";
}

namespace session {

Settings settle(const SessionOptions& options, const Defaults& defaults, std::string_view options_name) {
    if (options.max_outstanding_publishes == 0)
        throw InvalidArgument("acemq: " + std::string(options_name) +
                              " session.max_outstanding_publishes must be at least 1");
    return Settings{.connect_timeout = options.connect_timeout.value_or(defaults.connect_timeout),
                    .call_timeout = options.call_timeout,
                    .max_outstanding_publishes = options.max_outstanding_publishes,
                    .confirm_timeout = options.confirm_timeout,
                    .heartbeat = options.heartbeat.value_or(defaults.heartbeat),
                    .recover = options.recover,
                    .first_recovery_delay = options.first_recovery_delay.value_or(defaults.first_recovery_delay),
                    .max_recovery_delay = options.max_recovery_delay.value_or(defaults.max_recovery_delay),
                    .name = options.name,
                    .on_event = options.on_event};
}

void Events::emit(ConnectionEvent::Kind kind, std::string detail, int attempt) const {
    log(kind == ConnectionEvent::Kind::recovered || kind == ConnectionEvent::Kind::unblocked ? LogLevel::info
                                                                                             : LogLevel::warning,
        who_ + ": " + std::string(to_string(kind)) + ": " + detail);
    if (!on_event_) return;
    try {
        on_event_({kind, std::move(detail), attempt});
    } catch (const std::exception& error) {
        log(LogLevel::error, who_ + ": on_event threw: " + error.what());
    }
}

}  // namespace session

}  // namespace acemq
