#include "topology_plan.hpp"

#include <algorithm>
#include <string_view>

#include <acemq/naming.hpp>

#include "output.hpp"

namespace acemq::cli {
namespace {

// The arguments `file` declares that `broker` lacks or holds with another value, one line
// each. `left_out` is compared elsewhere (x-queue-type, as the queue's type).
void compare_arguments(const FieldTable& file, const FieldTable& broker, std::vector<std::string>& differences,
                       std::string_view left_out = {}) {
    for (const auto& [name, wanted] : file) {
        if (name == left_out) continue;
        const auto held = broker.find(name);
        if (held != broker.end() && equivalent(held->second, wanted)) continue;
        differences.push_back(name + ": broker " + (held == broker.end() ? "(absent)" : held->second.to_string()) +
                              ", file " + wanted.to_string());
    }
}

void compare_flag(std::string_view name, bool broker, bool file, std::vector<std::string>& differences) {
    if (broker != file)
        differences.push_back(std::string(name) + ": broker " + yes_no(broker) + ", file " + yes_no(file));
}

std::string arguments_text(const FieldTable& arguments, std::string_view left_out = {}) {
    std::string out;
    for (const auto& [name, value] : arguments)
        if (name != left_out) out += ", " + name + "=" + value.to_string();
    return out;
}

std::string binding_name(const BindingDeclaration& binding) {
    return binding.queue + " from " + binding.exchange + " on " +
           (binding.routing_key.empty() ? "\"\"" : binding.routing_key);
}

bool has_arguments(const FieldTable& broker, const FieldTable& file) {
    std::vector<std::string> differences;
    compare_arguments(file, broker, differences);
    return differences.empty();
}

template <class Summary>
const Summary* named(const std::vector<Summary>& listed, std::string_view name) {
    const auto it = std::find_if(listed.begin(), listed.end(), [&](const Summary& s) { return s.name == name; });
    return it == listed.end() ? nullptr : &*it;
}

void record(TopologyPlan& plan, PlanStep step) {
    if (step.change == PlanStep::Change::drift && step.details.empty())
        ++plan.unchanged;
    else
        plan.steps.push_back(std::move(step));
}

}  // namespace

std::size_t TopologyPlan::count(PlanStep::Change change) const {
    return static_cast<std::size_t>(
        std::count_if(steps.begin(), steps.end(), [&](const PlanStep& step) { return step.change == change; }));
}

std::string to_string(PlanStep::Change change) {
    switch (change) {
    case PlanStep::Change::create: return "create";
    case PlanStep::Change::drift: return "drift";
    case PlanStep::Change::missing: return "missing";
    }
    return "unknown";
}

TopologyPlan plan_topology(const Topology& wanted, const std::vector<ExchangeSummary>& exchanges,
                           const std::vector<QueueSummary>& queues, const std::vector<BindingDeclaration>& bindings) {
    TopologyPlan plan;
    for (const ExchangeDeclaration& exchange : wanted.exchanges()) {
        const ExchangeSummary* held = named(exchanges, exchange.name);
        if (held == nullptr) {
            std::string how = std::string(to_string(exchange.kind)) + (exchange.durable ? ", durable" : ", transient");
            if (exchange.auto_delete) how += ", auto-delete";
            plan.steps.push_back(
                {PlanStep::Change::create, "exchange", exchange.name, {how + arguments_text(exchange.arguments)}});
            continue;
        }
        PlanStep step{PlanStep::Change::drift, "exchange", exchange.name, {}};
        if (held->kind != exchange.kind)
            step.details.push_back("type: broker " + std::string(to_string(held->kind)) + ", file " +
                                   std::string(to_string(exchange.kind)));
        compare_flag("durable", held->durable, exchange.durable, step.details);
        compare_flag("autoDelete", held->auto_delete, exchange.auto_delete, step.details);
        compare_arguments(exchange.arguments, held->arguments, step.details);
        record(plan, std::move(step));
    }
    for (const QueueDeclaration& queue : wanted.queues()) {
        const QueueSummary* held = named(queues, queue.name);
        if (held == nullptr) {
            std::string how = std::string(to_string(queue.type)) + (queue.durable ? ", durable" : ", transient");
            if (queue.exclusive) how += ", exclusive";
            if (queue.auto_delete) how += ", auto-delete";
            plan.steps.push_back({PlanStep::Change::create,
                                  "queue",
                                  queue.name,
                                  {how + arguments_text(queue.arguments, argument::queue_type)}});
            continue;
        }
        PlanStep step{PlanStep::Change::drift, "queue", queue.name, {}};
        if (held->type != queue.type)
            step.details.push_back("type: broker " + std::string(to_string(held->type)) + ", file " +
                                   std::string(to_string(queue.type)));
        compare_flag("durable", held->durable, queue.durable, step.details);
        compare_flag("exclusive", held->exclusive, queue.exclusive, step.details);
        compare_flag("autoDelete", held->auto_delete, queue.auto_delete, step.details);
        compare_arguments(queue.arguments, held->arguments, step.details, argument::queue_type);
        record(plan, std::move(step));
    }
    for (const BindingDeclaration& binding : wanted.bindings()) {
        const bool held = std::any_of(bindings.begin(), bindings.end(), [&](const BindingDeclaration& listed) {
            return listed.queue == binding.queue && listed.exchange == binding.exchange &&
                   listed.routing_key == binding.routing_key && has_arguments(listed.arguments, binding.arguments);
        });
        if (held)
            ++plan.unchanged;
        else
            plan.steps.push_back({PlanStep::Change::create,
                                  "binding",
                                  binding_name(binding),
                                  {arguments_text(binding.arguments).substr(binding.arguments.empty() ? 0 : 2)}});
    }
    for (const std::string& name : wanted.existing_exchanges()) {
        if (wanted.find_exchange(name) != nullptr || name.starts_with("amq.")) continue;
        if (named(exchanges, name) == nullptr)
            plan.steps.push_back({PlanStep::Change::missing, "exchange", name, {"expected, declared by its owner"}});
    }
    for (const std::string& name : wanted.existing_queues()) {
        if (wanted.find_queue(name) != nullptr) continue;
        if (named(queues, name) == nullptr)
            plan.steps.push_back({PlanStep::Change::missing, "queue", name, {"expected, declared by its owner"}});
    }
    return plan;
}

Topology listed_topology(const std::vector<ExchangeSummary>& exchanges, const std::vector<QueueSummary>& queues,
                         const std::vector<BindingDeclaration>& bindings) {
    Topology topology;
    for (const ExchangeSummary& exchange : exchanges)
        topology.exchange(
            exchange.name, exchange.kind,
            {.durable = exchange.durable, .auto_delete = exchange.auto_delete, .arguments = exchange.arguments});
    for (const QueueSummary& queue : queues) {
        // The type is the queue's; the builder writes x-queue-type for it and refuses both.
        FieldTable arguments = queue.arguments;
        arguments.erase(argument::queue_type);
        topology.queue(queue.name, {.type = queue.type,
                                    .durable = queue.durable,
                                    .exclusive = queue.exclusive,
                                    .auto_delete = queue.auto_delete,
                                    .arguments = std::move(arguments)});
    }
    for (const BindingDeclaration& binding : bindings) {
        if (binding.exchange.empty()) continue;  // the default exchange's, implicit
        if (topology.find_exchange(binding.exchange) == nullptr) topology.existing_exchange(binding.exchange);
        if (topology.find_queue(binding.queue) == nullptr) topology.existing_queue(binding.queue);
        topology.bind(binding.queue, binding.exchange, binding.routing_key, binding.arguments);
    }
    return topology;
}

}  // namespace acemq::cli
