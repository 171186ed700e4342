#include "session/declared_topology.hpp"

#include <algorithm>

namespace acemq::session {

namespace {

template <class T>
void keep_by_name(std::vector<T>& kept, const T& declaration) {
    const auto found =
        std::find_if(kept.begin(), kept.end(), [&](const T& earlier) { return earlier.name == declaration.name; });
    if (found == kept.end())
        kept.push_back(declaration);
    else
        *found = declaration;
}

}  // namespace

void DeclaredTopology::remember(const ExchangeDeclaration& exchange) { keep_by_name(exchanges_, exchange); }

void DeclaredTopology::remember(const QueueDeclaration& queue) { keep_by_name(queues_, queue); }

void DeclaredTopology::remember(const BindingDeclaration& binding) {
    if (std::find(bindings_.begin(), bindings_.end(), binding) == bindings_.end()) bindings_.push_back(binding);
}

void DeclaredTopology::remember(const Topology& topology) {
    for (const auto& exchange : topology.exchanges()) remember(exchange);
    for (const auto& queue : topology.queues()) remember(queue);
    for (const auto& binding : topology.bindings()) remember(binding);
}

void DeclaredTopology::forget_queue(std::string_view queue) {
    std::erase_if(queues_, [&](const QueueDeclaration& declared) { return declared.name == queue; });
    std::erase_if(bindings_, [&](const BindingDeclaration& declared) { return declared.queue == queue; });
}

}  // namespace acemq::session
