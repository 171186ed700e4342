#include "inproc/exchange.hpp"

#include <algorithm>

#include "inproc/queue.hpp"

namespace acemq::inproc::detail {

Exchange::Exchange(ExchangeDeclaration declaration) : declaration_(std::move(declaration)) {}

bool Exchange::bind(Queue& queue, const std::string& routing_key, const FieldTable& arguments) {
    for (const Binding& binding : bindings_)
        if (binding.queue == &queue && binding.routing_key == routing_key && binding.arguments == arguments)
            return false;
    bindings_.push_back(Binding{.queue = &queue, .routing_key = routing_key, .arguments = arguments});
    add_route(bindings_.back());
    return true;
}

void Exchange::list_bindings(std::vector<BindingDeclaration>& into) const {
    for (const Binding& binding : bindings_)
        into.push_back(BindingDeclaration{.queue = binding.queue->name(),
                                          .exchange = declaration_.name,
                                          .routing_key = binding.routing_key,
                                          .arguments = binding.arguments});
}

std::size_t Exchange::unbind(const Queue& queue) {
    const std::size_t removed =
        std::erase_if(bindings_, [&](const Binding& binding) { return binding.queue == &queue; });
    if (removed == 0) return 0;
    direct_.clear();
    topic_.clear();
    fanout_.clear();
    for (const Binding& binding : bindings_) add_route(binding);
    return removed;
}

void Exchange::route(std::string_view key, std::uint64_t mark, std::vector<Queue*>& into) const {
    auto add = [&](Queue* queue) {
        if (queue->first_route(mark)) into.push_back(queue);
    };
    switch (declaration_.kind) {
    case ExchangeKind::direct:
        if (const auto found = direct_.find(key); found != direct_.end())
            for (Queue* queue : found->second) add(queue);
        break;
    case ExchangeKind::topic: topic_.match(key, add); break;
    case ExchangeKind::fanout:
        for (Queue* queue : fanout_) add(queue);
        break;
    case ExchangeKind::headers: break;  // refused at declare
    }
}

void Exchange::add_route(const Binding& binding) {
    switch (declaration_.kind) {
    case ExchangeKind::direct: direct_[binding.routing_key].push_back(binding.queue); break;
    case ExchangeKind::topic: topic_.add(binding.routing_key, binding.queue); break;
    case ExchangeKind::fanout: fanout_.push_back(binding.queue); break;
    case ExchangeKind::headers: break;
    }
}

}  // namespace acemq::inproc::detail
