#include "session/settings.hpp"

#include <array>
#include <mutex>

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

struct Events::Measured {
    enum class State { connected, reconnecting, blocked, closed };
    static constexpr std::array<std::string_view, 4> state_names{"connected", "reconnecting", "blocked", "closed"};

    std::mutex lock;
    State state = State::connected;  // an Events belongs to a transport whose open succeeded
    std::chrono::steady_clock::time_point lost_at{};
    // Kept while the instruments are: an InMemoryMetrics' instruments refer to it, and the
    // transport may outlive the bus that gave it.
    std::shared_ptr<Metrics> metrics;
    std::array<std::shared_ptr<Gauge>, state_names.size()> states{};
    std::shared_ptr<Counter> lost, recoveries;
    std::shared_ptr<Distribution> disconnected;

    void show_state() const {
        if (!lost) return;
        for (std::size_t i = 0; i < states.size(); ++i) states[i]->set(i == static_cast<std::size_t>(state) ? 1 : 0);
    }
    void outage_ended() const {
        if (disconnected)
            disconnected->record(std::chrono::duration<double>(std::chrono::steady_clock::now() - lost_at).count());
    }
    void on(ConnectionEvent::Kind kind) {
        std::lock_guard guard(lock);
        const State before = state;
        switch (kind) {
        case ConnectionEvent::Kind::lost:
            if (before == State::reconnecting || before == State::closed) return;
            lost_at = std::chrono::steady_clock::now();
            if (lost) lost->add(1);
            state = State::reconnecting;
            break;
        case ConnectionEvent::Kind::retrying: return;
        case ConnectionEvent::Kind::recovered:
            if (before == State::reconnecting) outage_ended();
            if (recoveries) recoveries->add(1);
            state = State::connected;
            break;
        case ConnectionEvent::Kind::blocked: state = State::blocked; break;
        case ConnectionEvent::Kind::unblocked: state = State::connected; break;
        case ConnectionEvent::Kind::gave_up:
            if (before == State::reconnecting) outage_ended();
            state = State::closed;
            break;
        }
        show_state();
    }
};

Events::Events(std::string component, std::string who, std::function<void(const ConnectionEvent&)> on_event)
    : component_(std::move(component)), who_(std::move(who)), on_event_(std::move(on_event)),
      measured_(std::make_shared<Measured>()) {}

void Events::measure(const std::shared_ptr<Metrics>& metrics) {
    if (!metrics) return;
    const Labels labels{{std::string(tag::transport), component_}};
    std::lock_guard guard(measured_->lock);
    measured_->metrics = metrics;
    for (std::size_t i = 0; i < Measured::state_names.size(); ++i)
        measured_->states[i] = metrics->bind_gauge(metric::connection_state,
                                                   {{std::string(tag::transport), component_},
                                                    {std::string(tag::state), std::string(Measured::state_names[i])}});
    measured_->lost = metrics->bind_counter(metric::connection_lost_total, labels);
    measured_->recoveries = metrics->bind_counter(metric::connection_recoveries_total, labels);
    measured_->disconnected = metrics->bind_distribution(metric::connection_disconnected_duration, labels);
    measured_->show_state();
}

void Events::emit(ConnectionEvent::Kind kind, std::string detail, int attempt) const {
    measured_->on(kind);
    log(kind == ConnectionEvent::Kind::recovered || kind == ConnectionEvent::Kind::unblocked ? LogLevel::info
                                                                                             : LogLevel::warning,
        component_, who_ + ": " + std::string(to_string(kind)) + ": " + detail,
        {{"event", to_string(kind)}, {"reason", detail}});
    if (!on_event_) return;
    try {
        on_event_({kind, std::move(detail), attempt});
    } catch (const std::exception& error) {
        log(LogLevel::error, component_, who_ + ": on_event threw: " + error.what());
    }
}

}  // namespace session

}  // namespace acemq
