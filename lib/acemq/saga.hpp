// Sagas (docs/routing-slips.md §5): steps run in order on one subject, each with the
// compensation that undoes it; when a step fails, the steps already done are compensated in
// reverse. In-process and not durable, as in every member of the family: no broker, no
// stored state; a process that dies half-way compensates nothing.
//
//   struct Order { std::string id; std::string payment; };
//   acemq::Saga<Order> checkout("checkout");
//   checkout.step("reserve", [&](Order& o) { stock.reserve(o.id); }, [&](Order& o) { stock.release(o.id); })
//           .step("charge", [&](Order& o) { o.payment = payments.charge(o.id); },
//                           [&](Order& o) { payments.refund(o.payment); })
//           .step("ship", [&](Order& o) { shipping.book(o.id); });
//   acemq::SagaResult result = checkout.run(order);
//   if (result.has_unresolved()) alert(result.to_string());
//   // "checkout failed at ship, compensated ['reserve', 'charge'], UNRESOLVED ['charge']"
//
// run() never throws for a failing step: an exception from a step (any type) is the
// failure; the result says which step, what it threw, and which compensations failed. A
// failing compensation is logged at error ("could not compensate step <name>"), collected
// in `unresolved`, and the remaining ones still run.
//
// Cancellation: C++ has no cancellation exception, so two things play its part, and neither
// compensates anything (as the family's cancellation, which propagates uncompensated):
// SagaCancelled thrown by a step goes out of run() as it is, and a stop requested on the
// std::stop_token given to run() throws SagaCancelled before the next step begins. A saga
// stopped this way leaves what it did in place: whoever cancelled it decides about that.
//
// A Saga is built on one thread; once built, run() is const and may be called from many
// threads at once (as far as the steps allow).
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <acemq/error.hpp>

namespace acemq {

// Stops a saga without compensating: see "Cancellation" above.
class SagaCancelled : public Error {
public:
    using Error::Error;
};

struct SagaResult {
    std::string saga;
    std::vector<std::string> completed{};    // the steps that ran to the end, in order
    std::optional<std::string> failed_at{};  // the step that failed; nullopt when all ran
    std::exception_ptr failure{};            // what it threw; null when all ran
    std::vector<std::string> unresolved{};   // compensations that failed, in the order tried

    bool complete() const noexcept { return !failed_at.has_value(); }
    // Failed, and every compensation there was ran.
    bool compensated() const noexcept { return failed_at.has_value() && unresolved.empty(); }
    // Failed, and something could not be undone: the one to alert on.
    bool has_unresolved() const noexcept { return !unresolved.empty(); }

    // "<saga> completed: a -> b", or
    // "<saga> failed at c, compensated ['a', 'b']" with ", UNRESOLVED ['b']" when any are.
    std::string to_string() const;
};

namespace detail {

struct SagaStep {
    std::string name;
    std::function<void()> action;
    std::function<void()> compensation;  // empty: nothing to undo
};

void check_saga_name(std::string_view saga);
// Throws InvalidArgument for an empty step name, one the saga already has, or no action.
void check_saga_step(std::string_view saga, std::string_view step, const std::vector<std::string>& names,
                     bool has_action);
std::string saga_text(std::string_view saga, const std::vector<std::string>& names);
SagaResult run_saga(const std::string& saga, const std::vector<SagaStep>& steps, const std::stop_token& stop);

}  // namespace detail

template <class Subject>
class Saga {
public:
    using Action = std::function<void(Subject&)>;

    // InvalidArgument "acemq: a saga needs a name" for an empty one.
    explicit Saga(std::string name) : name_(std::move(name)) { detail::check_saga_name(name_); }

    // Adds a step; returns the saga for the next. InvalidArgument for an empty name, a name
    // the saga already has ("... already has a step called 'x'") or an empty action. A step
    // without a compensation is skipped when compensating. Return values are ignored.
    Saga& step(std::string name, Action action, Action compensation = {}) & {
        detail::check_saga_step(name_, name, names_, static_cast<bool>(action));
        names_.push_back(name);
        steps_.push_back({std::move(name), std::move(action), std::move(compensation)});
        return *this;
    }
    Saga&& step(std::string name, Action action, Action compensation = {}) && {
        return std::move(step(std::move(name), std::move(action), std::move(compensation)));
    }

    const std::string& name() const noexcept { return name_; }
    const std::vector<std::string>& step_names() const noexcept { return names_; }

    // Runs the steps on `subject` as described above. InvalidArgument ("... has no steps")
    // for a saga without steps; SagaCancelled as described under "Cancellation".
    SagaResult run(Subject& subject, std::stop_token stop = {}) const {
        std::vector<detail::SagaStep> bound;
        bound.reserve(steps_.size());
        for (const Step& step : steps_) {
            bound.push_back({step.name, [&subject, &step] { step.action(subject); },
                             step.compensation
                                 ? std::function<void()>([&subject, &step] { step.compensation(subject); })
                                 : std::function<void()>()});
        }
        return detail::run_saga(name_, bound, stop);
    }

    // "Saga(<name>: a -> b)"
    std::string to_string() const { return detail::saga_text(name_, names_); }

private:
    struct Step {
        std::string name;
        Action action;
        Action compensation;
    };
    std::string name_;
    std::vector<std::string> names_;
    std::vector<Step> steps_;
};

}  // namespace acemq
