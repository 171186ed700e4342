#include <acemq/retry.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <acemq/error.hpp>

namespace acemq {

namespace {

std::string millis_text(milliseconds value) { return std::to_string(value.count()) + " ms"; }

// An uncapped ladder of many attempts outgrows any clock: such waits saturate.
constexpr double longest_wait_millis = 9.0e18;

milliseconds clamp_to_max(double raw_millis, milliseconds max_delay) {
    if (max_delay.count() > 0 && raw_millis > static_cast<double>(max_delay.count())) return max_delay;
    return milliseconds(static_cast<std::int64_t>(std::min(raw_millis, longest_wait_millis)));
}

// One call of the family's spelling, "name(arguments)", as parse_retry_policy reads it.
struct PolicyCall {
    std::string_view name;
    std::vector<std::string_view> arguments;
};

std::string_view trimmed(std::string_view text) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    return text;
}

[[noreturn]] void refuse_policy(std::string_view how, const std::string& why) {
    throw InvalidArgument("acemq: retry policy \"" + std::string(how) + "\": " + why +
                          "; write it as none(), fixed(4, 30s) or exponential(6, 10s, 1m), optionally followed "
                          "by .giveUpAfter(2m), .withJitter(0.1), .waitInBrokerFrom(1m)");
}

std::vector<PolicyCall> policy_calls(std::string_view how) {
    std::vector<PolicyCall> calls;
    std::string_view rest = trimmed(how);
    while (!rest.empty()) {
        if (!calls.empty()) {
            if (rest.front() != '.') refuse_policy(how, "expected \".\" before \"" + std::string(rest) + "\"");
            rest.remove_prefix(1);
        }
        const auto open = rest.find('('), close = rest.find(')');
        if (open == std::string_view::npos || close == std::string_view::npos || close < open)
            refuse_policy(how, "\"" + std::string(rest) + "\" is not a call name(arguments)");
        PolicyCall call{trimmed(rest.substr(0, open)), {}};
        std::string_view arguments = rest.substr(open + 1, close - open - 1);
        while (!trimmed(arguments).empty()) {
            const auto comma = arguments.find(',');
            call.arguments.push_back(trimmed(arguments.substr(0, comma)));
            arguments = comma == std::string_view::npos ? std::string_view() : arguments.substr(comma + 1);
        }
        calls.push_back(std::move(call));
        rest = trimmed(rest.substr(close + 1));
    }
    if (calls.empty()) refuse_policy(how, "it is empty");
    return calls;
}

std::int64_t whole_number(std::string_view how, std::string_view text) {
    std::int64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size() || text.empty())
        refuse_policy(how, "\"" + std::string(text) + "\" is not a whole number");
    return number;
}

milliseconds duration_named(std::string_view how, std::string_view text) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    const std::string_view unit = text.substr(digits);
    const std::int64_t count = whole_number(how, text.substr(0, digits));
    if (unit == "ms") return milliseconds(count);
    if (unit == "s") return std::chrono::seconds(count);
    if (unit == "m") return std::chrono::minutes(count);
    if (unit == "h") return std::chrono::hours(count);
    refuse_policy(how, "\"" + std::string(text) + "\" is not a duration (a whole number and ms, s, m or h)");
}

double fraction_named(std::string_view how, std::string_view text) {
    double number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size() || text.empty())
        refuse_policy(how, "\"" + std::string(text) + "\" is not a number");
    return number;
}

void expect_arguments(std::string_view how, const PolicyCall& call, std::size_t count) {
    if (call.arguments.size() != count)
        refuse_policy(how, std::string(call.name) + " takes " + std::to_string(count) + " argument" +
                               (count == 1 ? "" : "s") + ", got " + std::to_string(call.arguments.size()));
}

}  // namespace

RetryPolicy::RetryPolicy(std::int32_t max_attempts, milliseconds initial_delay, double multiplier,
                         milliseconds max_delay, double jitter_factor)
    : max_attempts_(max_attempts), initial_delay_(initial_delay), multiplier_(multiplier), max_delay_(max_delay),
      jitter_factor_(jitter_factor) {
    validate();
}

void RetryPolicy::validate() const {
    if (max_attempts_ < 1)
        throw InvalidArgument("acemq: a retry policy needs at least 1 attempt (the first delivery counts), got " +
                              std::to_string(max_attempts_));
    if (initial_delay_.count() < 0)
        throw InvalidArgument("acemq: a retry delay cannot be negative, got " + millis_text(initial_delay_));
    if (!(multiplier_ >= 1.0) || !std::isfinite(multiplier_))
        throw InvalidArgument("acemq: a retry multiplier must be 1 or more, got " + std::to_string(multiplier_));
    if (max_delay_.count() < 0)
        throw InvalidArgument("acemq: a maximum retry delay cannot be negative (0 means uncapped), got " +
                              millis_text(max_delay_));
    if (max_message_age_.count() < 0)
        throw InvalidArgument("acemq: a maximum message age cannot be negative (0 means no limit), got " +
                              millis_text(max_message_age_));
    if (!(jitter_factor_ >= 0.0 && jitter_factor_ <= 1.0))
        throw InvalidArgument("acemq: a jitter factor must lie in [0, 1], got " + std::to_string(jitter_factor_));
    if (broker_wait_threshold_.count() < 0)
        throw InvalidArgument("acemq: the broker-wait threshold cannot be negative, got " +
                              millis_text(broker_wait_threshold_) +
                              "; zero is how a policy says every wait happens in the consumer");
}

RetryPolicy RetryPolicy::give_up_after(milliseconds max_age) const {
    RetryPolicy copy = *this;
    copy.max_message_age_ = max_age;
    copy.validate();
    return copy;
}

RetryPolicy RetryPolicy::with_jitter(double factor) const {
    RetryPolicy copy = *this;
    copy.jitter_factor_ = factor;
    copy.validate();
    return copy;
}

RetryPolicy RetryPolicy::wait_in_broker_from(milliseconds threshold) const {
    RetryPolicy copy = *this;
    copy.broker_wait_threshold_ = threshold;
    copy.validate();
    return copy;
}

std::vector<milliseconds> RetryPolicy::schedule() const {
    std::vector<milliseconds> waits;
    double raw = static_cast<double>(initial_delay_.count());
    for (std::int32_t step = 1; step < max_attempts_; ++step) {
        waits.push_back(clamp_to_max(raw, max_delay_));
        raw *= multiplier_;
    }
    return waits;
}

std::vector<milliseconds> RetryPolicy::broker_rungs() const {
    std::vector<milliseconds> rungs;
    for (milliseconds wait : schedule()) {
        if (waits_in_broker(wait) && std::find(rungs.begin(), rungs.end(), wait) == rungs.end()) rungs.push_back(wait);
    }
    return rungs;
}

bool RetryPolicy::allows_retry(std::int32_t attempt, std::optional<milliseconds> age) const {
    if (attempt >= max_attempts_) return false;
    if (max_message_age_.count() > 0 && age && *age >= max_message_age_) return false;
    return true;
}

milliseconds RetryPolicy::base_delay(std::int32_t attempt) const {
    double delay = static_cast<double>(initial_delay_.count());
    const bool capped = max_delay_.count() > 0;
    for (std::int32_t step = 1; step < attempt && multiplier_ > 1.0 && delay < longest_wait_millis; ++step) {
        delay *= multiplier_;
        if (capped && delay > static_cast<double>(max_delay_.count())) {
            delay = static_cast<double>(max_delay_.count());
            break;
        }
    }
    return clamp_to_max(delay, max_delay_);
}

bool RetryPolicy::waits_in_broker(milliseconds delay) const {
    return broker_wait_threshold_.count() > 0 && delay.count() > 0 && delay >= broker_wait_threshold_;
}

std::optional<RetryWait> RetryPolicy::next_wait(std::int32_t attempt, std::optional<milliseconds> age,
                                                double unit_draw) const {
    if (!allows_retry(attempt, age)) return std::nullopt;
    const milliseconds delay = base_delay(attempt);
    if (waits_in_broker(delay)) return RetryWait{delay, true};
    if (jitter_factor_ <= 0.0 || delay.count() == 0) return RetryWait{delay, false};
    const double factor = 1.0 + (unit_draw * 2.0 - 1.0) * jitter_factor_;
    // Floored at 1 ms as the contract fixture asks: a jittered wait never becomes "no wait".
    const double jittered =
        std::clamp(std::floor(static_cast<double>(delay.count()) * factor), 1.0, longest_wait_millis);
    return RetryWait{milliseconds(static_cast<std::int64_t>(jittered)), false};
}

std::optional<RetryWait> RetryPolicy::next_wait(std::int32_t attempt, std::optional<milliseconds> age) const {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    return next_wait(attempt, age, unit(generator));
}

RetryPolicy no_retry() { return RetryPolicy(1, milliseconds{0}, 1.0, milliseconds{0}, 0.0); }

RetryPolicy fixed_retry(std::int32_t attempts, milliseconds delay) {
    return RetryPolicy(attempts, delay, 1.0, delay, 0.0);
}

RetryPolicy exponential_retry(std::int32_t attempts, milliseconds initial, milliseconds max) {
    return RetryPolicy(attempts, initial, 2.0, max, 0.2);
}

RetryPolicy parse_retry_policy(std::string_view how) {
    const std::vector<PolicyCall> calls = policy_calls(how);
    const PolicyCall& factory = calls.front();
    auto attempts = [&](std::string_view text) {
        const std::int64_t count = whole_number(how, text);
        if (count < 1 || count > INT32_MAX)
            refuse_policy(how, "the attempts must lie in [1, 2147483647], got " + std::string(text));
        return static_cast<std::int32_t>(count);
    };
    RetryPolicy policy = no_retry();
    if (factory.name == "none") {
        expect_arguments(how, factory, 0);
    } else if (factory.name == "fixed") {
        expect_arguments(how, factory, 2);
        policy = fixed_retry(attempts(factory.arguments[0]), duration_named(how, factory.arguments[1]));
    } else if (factory.name == "exponential") {
        expect_arguments(how, factory, 3);
        policy = exponential_retry(attempts(factory.arguments[0]), duration_named(how, factory.arguments[1]),
                                   duration_named(how, factory.arguments[2]));
    } else {
        refuse_policy(how, "it starts with " + std::string(factory.name) + "(), not none, fixed or exponential");
    }
    for (std::size_t i = 1; i < calls.size(); ++i) {
        const PolicyCall& change = calls[i];
        expect_arguments(how, change, 1);
        if (change.name == "giveUpAfter") {
            policy = policy.give_up_after(duration_named(how, change.arguments[0]));
        } else if (change.name == "withJitter") {
            policy = policy.with_jitter(fraction_named(how, change.arguments[0]));
        } else if (change.name == "waitInBrokerFrom") {
            policy = policy.wait_in_broker_from(duration_named(how, change.arguments[0]));
        } else {
            refuse_policy(how,
                          "." + std::string(change.name) + "() is not giveUpAfter, withJitter or waitInBrokerFrom");
        }
    }
    return policy;
}

}  // namespace acemq
