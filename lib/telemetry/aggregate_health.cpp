#include <acemq/aggregate_health.hpp>

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include <acemq/json_codec.hpp>

#include "rfc3339.hpp"

namespace acemq {

namespace {

int severity(Health::Status status) {
    switch (status) {
    case Health::Status::up: return 0;
    case Health::Status::degraded: return 1;
    case Health::Status::down: return 2;
    }
    return 2;
}

// What the checks' threads write and the caller reads: shared, so that a check answering
// after the deadline writes into something that still exists.
struct Answers {
    std::mutex lock;
    std::condition_variable changed;
    std::vector<std::optional<Health>> health;
    std::size_t pending = 0;
};

Health run_one(const HealthCheck& check, std::chrono::milliseconds deadline) {
    try {
        if (!check.check) return Health{.status = Health::Status::down, .detail = "no check was given"};
        return check.check(deadline);
    } catch (const std::exception& error) {
        return Health{.status = Health::Status::down, .detail = std::string("the check threw: ") + error.what()};
    } catch (...) {  // anything else a check throws still makes its part down, never the prober
        return Health{.status = Health::Status::down,
                      .detail = "the check threw something that is not a std::exception"};
    }
}

}  // namespace

AggregateHealth aggregate_health(const std::vector<HealthCheck>& checks, std::chrono::milliseconds deadline) {
    auto answers = std::make_shared<Answers>();
    answers->health.resize(checks.size());
    answers->pending = checks.size();
    const auto until = std::chrono::steady_clock::now() + deadline;
    // A tenth is kept back, so that a check that uses all it is given (a ping that is never
    // answered waits out its timeout) answers in time to be heard, with what it counted.
    const std::chrono::milliseconds given = deadline - deadline / 10;
    for (std::size_t i = 0; i < checks.size(); ++i) {
        auto finish = [answers, i](Health health) {
            std::lock_guard guard(answers->lock);
            answers->health[i] = std::move(health);
            --answers->pending;
            answers->changed.notify_all();
        };
        try {
            // Detached: a check that hangs past the deadline must not hold the probe; it owns a
            // copy of its check and shares the answers, so nothing it touches goes away.
            std::thread([check = checks[i], given, finish] { finish(run_one(check, given)); }).detach();
        } catch (const std::system_error&) {
            finish(run_one(checks[i], given));  // no thread to spare: this one runs here
        }
    }
    std::unique_lock guard(answers->lock);
    answers->changed.wait_until(guard, until, [&] { return answers->pending == 0; });

    AggregateHealth report;
    for (std::size_t i = 0; i < checks.size(); ++i) {
        Health part = answers->health[i].value_or(
            Health{.status = Health::Status::down,
                   .detail = "did not answer within " + std::to_string(deadline.count()) + " ms"});
        if (severity(part.status) > severity(report.status)) report.status = part.status;
        report.parts.emplace_back(checks[i].name, std::move(part));
    }
    std::string said;
    for (const auto& [name, part] : report.parts) {
        if (part.detail.empty()) continue;
        said += (said.empty() ? "" : "; ") + name + ": " + part.detail;
    }
    if (!said.empty()) report.detail = std::string(to_string(report.status)) + ": " + said;
    return report;
}

std::string to_json(const AggregateHealth& health, std::chrono::system_clock::time_point checked) {
    std::string out = "{\"status\":" + json_quoted(to_string(health.status));
    if (!health.detail.empty()) out += ",\"detail\":" + json_quoted(health.detail);
    out += ",\"checked\":" + json_quoted(detail::rfc3339(checked, detail::SecondFraction::none)) + ",\"parts\":{";
    bool first = true;
    for (const auto& [name, part] : health.parts) {
        if (!first) out += ',';
        first = false;
        out += json_quoted(name) + ":" + to_json(part, checked);
    }
    return out + "}}";
}

}  // namespace acemq
