// What `acemq topology apply FILE` would change on a broker, and what has drifted there: the
// file's declarations compared with the broker's listings. Internal to the program.
//
// The comparison rule (docs/topology-file.md): a queue or exchange compares by its type,
// its flags (durable, exclusive, auto-delete) and the arguments the file declares, each by
// value (a 32-bit 5 is a 64-bit 5); arguments the broker holds and the file does not name are
// left alone, since a broker adds its own (RabbitMQ's x-queue-type on a classic queue, a
// policy's) and apply would not change them. A binding is there when one with its queue,
// exchange, routing key and the file's arguments is. Names the file expects as existing are
// checked too, except amq.* exchanges, which every broker predeclares and no listing shows.
// Nothing on the broker that the file does not name is reported: apply deletes nothing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <acemq/management.hpp>
#include <acemq/topology.hpp>

namespace acemq::cli {

struct PlanStep {
    enum class Change {
        create,   // absent from the broker: apply declares it
        drift,    // on the broker with other settings: apply would fail on it
        missing,  // named as existing (declared by its owner) but absent: apply would fail
    };
    Change change;
    std::string kind;  // "exchange", "queue", "binding"
    std::string name;  // a binding: "QUEUE from EXCHANGE on KEY"
    // create: how it is declared ("quorum, durable, x-dead-letter-exchange=acemq.dlx");
    // drift: one line a difference ("durable: broker no, file yes").
    std::vector<std::string> details;
};

struct TopologyPlan {
    std::vector<PlanStep> steps;  // exchanges, queues, bindings, then the expected names
    std::size_t unchanged = 0;    // declarations the broker has as the file says
    std::size_t count(PlanStep::Change change) const;
    bool matches() const { return steps.empty(); }
};

// Compares what `wanted` declares with the broker's listings.
TopologyPlan plan_topology(const Topology& wanted, const std::vector<ExchangeSummary>& exchanges,
                           const std::vector<QueueSummary>& queues, const std::vector<BindingDeclaration>& bindings);

// The broker's declarations as a Topology, from its listings: what `topology print` writes.
// A binding to an exchange the listings leave out (amq.*) names it as existing.
Topology listed_topology(const std::vector<ExchangeSummary>& exchanges, const std::vector<QueueSummary>& queues,
                         const std::vector<BindingDeclaration>& bindings);

std::string to_string(PlanStep::Change change);  // "create", "drift", "missing"

}  // namespace acemq::cli
