#include <acemq/saga.hpp>

#include <algorithm>

#include <acemq/ack.hpp>
#include <acemq/log.hpp>

namespace acemq {

namespace {

// Python's repr of a list of names, as the family's result text prints it: ['a', 'b'].
std::string listed(const std::vector<std::string>& names) {
    std::string text = "[";
    for (const std::string& name : names) text += (text.size() > 1 ? ", '" : "'") + name + "'";
    return text + "]";
}

std::string joined(const std::vector<std::string>& names) {
    std::string text;
    for (const std::string& name : names) text += (text.empty() ? "" : " -> ") + name;
    return text;
}

}  // namespace

std::string SagaResult::to_string() const {
    if (complete()) return saga + " completed: " + joined(completed);
    std::string text = saga + " failed at " + *failed_at + ", compensated " + listed(completed);
    if (has_unresolved()) text += ", UNRESOLVED " + listed(unresolved);
    return text;
}

namespace detail {

void check_saga_name(std::string_view saga) {
    if (saga.empty()) throw InvalidArgument("acemq: a saga needs a name");
}

void check_saga_step(std::string_view saga, std::string_view step, const std::vector<std::string>& names,
                     bool has_action) {
    if (step.empty()) throw InvalidArgument("acemq: a step of saga '" + std::string(saga) + "' needs a name");
    if (std::find(names.begin(), names.end(), step) != names.end())
        throw InvalidArgument("acemq: saga '" + std::string(saga) + "' already has a step called '" +
                              std::string(step) + "'");
    if (!has_action)
        throw InvalidArgument("acemq: step '" + std::string(step) + "' of saga '" + std::string(saga) +
                              "' has no action");
}

std::string saga_text(std::string_view saga, const std::vector<std::string>& names) {
    return "Saga(" + std::string(saga) + ": " + joined(names) + ")";
}

SagaResult run_saga(const std::string& saga, const std::vector<SagaStep>& steps, const std::stop_token& stop) {
    if (steps.empty()) throw InvalidArgument("acemq: saga '" + saga + "' has no steps; add them with step()");
    SagaResult result{.saga = saga};
    std::size_t done = 0;
    for (; done < steps.size(); ++done) {
        if (stop.stop_requested())
            throw SagaCancelled("acemq: saga '" + saga + "' was stopped before step '" + steps[done].name +
                                "'; nothing was compensated");
        try {
            steps[done].action();
        } catch (const SagaCancelled&) {
            throw;
        } catch (...) {
            result.failed_at = steps[done].name;
            result.failure = std::current_exception();
            break;
        }
        result.completed.push_back(steps[done].name);
    }
    if (result.complete()) return result;
    for (std::size_t index = done; index-- > 0;) {
        const SagaStep& step = steps[index];
        if (!step.compensation) continue;
        try {
            step.compensation();
        } catch (...) {
            const Failure failure = Failure::of(std::current_exception(), "in a compensation of saga '" + saga + "'");
            log(LogLevel::error, "saga",
                "saga '" + saga + "' could not compensate step " + step.name + ": " + describe(failure),
                {{"saga", saga}, {"step", step.name}});
            result.unresolved.push_back(step.name);
        }
    }
    return result;
}

}  // namespace detail

}  // namespace acemq
