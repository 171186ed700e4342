#include <acemq/settlement.hpp>

namespace acemq {

std::string_view to_string(Outcome outcome) noexcept {
    switch (outcome) {
    case Outcome::acked: return "acked";
    case Outcome::retried: return "retried";
    case Outcome::rejected: return "rejected";
    case Outcome::dead_lettered: return "dead_lettered";
    case Outcome::parked: return "parked";
    case Outcome::in_progress: return "in_progress";
    }
    return "unknown";
}

std::string format_duration(std::chrono::milliseconds duration) {
    std::int64_t millis = duration.count();
    if (millis == 0) return "0s";
    std::string out = millis < 0 ? "-" : "";
    if (millis < 0) millis = -millis;
    const std::int64_t parts[] = {millis / 3600000, millis / 60000 % 60, millis / 1000 % 60, millis % 1000};
    const char* units[] = {"h", "m", "s", "ms"};
    for (int i = 0; i < 4; ++i)
        if (parts[i] != 0) out += std::to_string(parts[i]) + units[i];
    return out;
}

Settlement decide(const Ack& ack, const Envelope& envelope, const RetryPolicy& policy,
                  std::optional<std::chrono::milliseconds> age, double unit_draw) {
    const std::string described = describe(ack.failure());
    switch (ack.kind()) {
    case AckKind::accept: return Settlement{Outcome::acked, {}, std::nullopt, {}};
    case AckKind::reject:
        return Settlement{Outcome::rejected, "the handler rejected it: " + described, std::nullopt, {}};
    case AckKind::park: return Settlement{Outcome::parked, "the handler parked it: " + described, std::nullopt, {}};
    case AckKind::in_progress: return Settlement{Outcome::in_progress, {}, std::nullopt, ack.delay()};
    case AckKind::retry: break;
    }
    if (ack.is_fatal())
        return Settlement{
            Outcome::dead_lettered, "the handler reported an unprocessable message: " + described, std::nullopt, {}};
    if (auto wait = policy.next_wait(envelope.attempt, age, unit_draw))
        return Settlement{Outcome::retried, {}, wait, {}};
    std::string why;
    if (envelope.attempt >= policy.max_attempts()) {
        why = "exhausted " + std::to_string(envelope.attempt) + (envelope.attempt == 1 ? " attempt" : " attempts");
    } else {
        why = "exceeded the maximum message age of " + format_duration(policy.max_message_age());
    }
    return Settlement{Outcome::dead_lettered, why + ": " + described, std::nullopt, {}};
}

Settlement undecodable(const Failure& decode_failure) {
    return Settlement{Outcome::parked, "could not be decoded: " + describe(decode_failure), std::nullopt, {}};
}

Settlement undecodable(const std::exception& decode_failure) { return undecodable(Failure::of(decode_failure)); }

}  // namespace acemq
