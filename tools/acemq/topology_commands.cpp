// topology print|apply|diff: a topology file (<acemq/topology_file.hpp>) against the broker.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <acemq/topology_file.hpp>
#include <acemq/url.hpp>
#include "broker_commands.hpp"
#include "output.hpp"
#include "plan_commands.hpp"
#include "topology_plan.hpp"

namespace acemq::cli {
namespace {

Topology read_file(const std::string& path) {
    if (!std::filesystem::exists(path))
        throw CommandFailed(Exit::not_found, "there is no topology file " + quoted_name(path) + ": check the path");
    return read_topology_file(path);
}

TopologyPlan plan_for(const Context& context, const Topology& wanted) {
    const std::unique_ptr<Management> broker = open_broker(context);
    return plan_topology(wanted, broker->exchanges(), broker->queues(), broker->bindings());
}

std::string sign(PlanStep::Change change) {
    switch (change) {
    case PlanStep::Change::create: return "+";
    case PlanStep::Change::drift: return "~";
    case PlanStep::Change::missing: return "!";
    }
    return "?";
}

std::string summary(const TopologyPlan& plan) {
    return std::to_string(plan.count(PlanStep::Change::create)) + " to create, " +
           std::to_string(plan.count(PlanStep::Change::drift)) + " drifted, " +
           std::to_string(plan.count(PlanStep::Change::missing)) + " missing, " + std::to_string(plan.unchanged) +
           " unchanged";
}

// `steps` as people read a plan: "+ queue orders.new (quorum, durable)", "~ queue x" with
// one line a difference under it.
void print_steps(const TopologyPlan& plan) {
    for (const PlanStep& step : plan.steps) {
        std::string line = "  " + sign(step.change) + " " + step.kind + " " + step.name;
        if (step.change == PlanStep::Change::drift) {
            std::printf("%s\n", printable(line).c_str());
            for (const std::string& difference : step.details) std::printf("      %s\n", printable(difference).c_str());
            continue;
        }
        if (!step.details.empty() && !step.details.front().empty()) line += " (" + step.details.front() + ")";
        std::printf("%s\n", printable(line).c_str());
    }
}

Value plan_document(const Context& context, const std::string& file, const TopologyPlan& plan) {
    Value::Array steps;
    for (const PlanStep& step : plan.steps) {
        Value::Array details;
        for (const std::string& detail : step.details) details.emplace_back(detail);
        steps.emplace_back(Value::Map{{"change", to_string(step.change)},
                                      {"kind", step.kind},
                                      {"name", step.name},
                                      {"details", Value(std::move(details))}});
    }
    return Value(Value::Map{{"url", redacted_url(context.url)},
                            {"file", file},
                            {"matches", plan.matches()},
                            {"create", std::uint64_t{plan.count(PlanStep::Change::create)}},
                            {"drift", std::uint64_t{plan.count(PlanStep::Change::drift)}},
                            {"missing", std::uint64_t{plan.count(PlanStep::Change::missing)}},
                            {"unchanged", std::uint64_t{plan.unchanged}},
                            {"steps", Value(std::move(steps))}});
}

void print_topology(const Context& context, const std::string& from) {
    if (!from.empty()) {
        std::fputs(print_topology_file(read_file(from)).c_str(), stdout);
        return;
    }
    const std::unique_ptr<Management> broker = open_broker(context);
    std::fputs(print_topology_file(listed_topology(broker->exchanges(), broker->queues(), broker->bindings())).c_str(),
               stdout);
}

void diff_topology(const Context& context, const std::string& file) {
    const TopologyPlan plan = plan_for(context, read_file(file));
    if (context.json) {
        std::printf("%s\n", pretty_json(plan_document(context, file, plan)).c_str());
    } else if (plan.matches()) {
        std::printf("%s matches %s: %zu declarations, nothing to change.\n", redacted_url(context.url).c_str(),
                    printable(file).c_str(), plan.unchanged);
    } else {
        std::printf("%s against %s:\n", printable(file).c_str(), redacted_url(context.url).c_str());
        print_steps(plan);
        std::printf("Plan: %s.\n", summary(plan).c_str());
    }
    std::fflush(stdout);
    if (!plan.matches())
        throw CommandFailed(
            Exit::check_failed,
            "the broker does not match " + quoted_name(file) + " (" + summary(plan) + "): " +
                (plan.count(PlanStep::Change::create) > 0 ? "`acemq topology apply` declares what is to be created; "
                                                          : "") +
                "a drifted declaration changes only by deleting it on the broker or changing the "
                "file, a missing one by its owner declaring it");
}

void apply_topology(const Context& context, const std::string& file) {
    const Topology wanted = read_file(file);
    const TopologyPlan plan = plan_for(context, wanted);
    if (plan.count(PlanStep::Change::drift) > 0 || plan.count(PlanStep::Change::missing) > 0) {
        if (!context.json) {
            std::printf("%s against %s:\n", printable(file).c_str(), redacted_url(context.url).c_str());
            print_steps(plan);
        } else {
            std::printf("%s\n", pretty_json(plan_document(context, file, plan)).c_str());
        }
        std::fflush(stdout);
        throw CommandFailed(Exit::check_failed,
                            "nothing applied: the broker has declarations that differ from " + quoted_name(file) +
                                " or lacks ones it expects (" + summary(plan) +
                                "), which a declare would fail on; delete the drifted ones on the broker or change "
                                "the file, then apply again");
    }
    const std::shared_ptr<Transport> transport = open_connection(context);
    transport->declare(wanted);
    transport->close();
    if (context.json) {
        std::printf("%s\n", pretty_json(plan_document(context, file, plan)).c_str());
    } else {
        print_steps(plan);
        std::printf("Applied %s to %s: %zu created, %zu unchanged.\n", printable(file).c_str(),
                    redacted_url(context.url).c_str(), plan.count(PlanStep::Change::create), plan.unchanged);
    }
    std::fflush(stdout);
}

}  // namespace

void add_topology_commands(CLI::App& app, const Context& context) {
    CLI::App* topology = app.add_subcommand(
        "topology", "a topology file (JSON: exchanges, queues, bindings; docs/topology-file.md) against the broker");
    topology->require_subcommand(1);

    auto from = std::make_shared<std::string>();
    CLI::App* print = topology->add_subcommand(
        "print",
        "write the broker's declarations as a topology file (or, with --from, a file as the library reads it)");
    print->add_option("--from", *from, "print this topology file, every declaration spelled out, instead");
    print->callback([&context, from] { print_topology(context, *from); });

    auto apply_file = std::make_shared<std::string>();
    CLI::App* apply = topology->add_subcommand(
        "apply", "declare what FILE declares and the broker lacks; refuses, changing nothing, when something drifted");
    apply->add_option("FILE", *apply_file, "the topology file")->required();
    apply->callback([&context, apply_file] { apply_topology(context, *apply_file); });

    auto diff_file = std::make_shared<std::string>();
    CLI::App* diff = topology->add_subcommand(
        "diff",
        "what apply would create, and what drifted (other type, flags or arguments); exit 1 unless the broker "
        "matches FILE");
    diff->add_option("FILE", *diff_file, "the topology file")->required();
    diff->callback([&context, diff_file] { diff_topology(context, *diff_file); });
}

}  // namespace acemq::cli
