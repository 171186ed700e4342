// One exchange of the embedded broker: its declaration, its bindings, and the routes built
// from them for its kind (direct: by key; topic: a trie of patterns, topic_routes.hpp;
// fanout: every bound queue). The default exchange is not one of these: it routes by
// queue name, which the broker looks up itself.
//
// Ownership: the broker owns each exchange by name; an exchange points at the queues bound
// to it, and the broker unbinds a queue (unbind) before it lets go of it. Internal to the
// inproc broker. Not thread-safe: the broker's lock guards every member.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/topology.hpp>
#include "inproc/topic_routes.hpp"

namespace acemq::inproc::detail {

class Queue;

class Exchange {
public:
    // A headers exchange never gets here: the broker refuses it at declare.
    explicit Exchange(ExchangeDeclaration declaration);
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    const ExchangeDeclaration& declaration() const noexcept { return declaration_; }

    // False when the same binding exists: the same binding twice is one, as in RabbitMQ.
    bool bind(Queue& queue, const std::string& routing_key, const FieldTable& arguments);
    // Removes every binding to `queue`; how many there were.
    std::size_t unbind(const Queue& queue);
    bool has_bindings() const noexcept { return !bindings_.empty(); }
    // Appends its bindings as they were declared, in the order they were made.
    void list_bindings(std::vector<BindingDeclaration>& into) const;

    // Appends every queue `key` routes to that publish `mark` has not reached yet
    // (Queue::first_route), so each queue once.
    void route(std::string_view key, std::uint64_t mark, std::vector<Queue*>& into) const;

private:
    struct Binding {
        Queue* queue;
        std::string routing_key;
        FieldTable arguments;
    };

    void add_route(const Binding& binding);

    ExchangeDeclaration declaration_;
    std::vector<Binding> bindings_;
    // Built from the bindings, for the exchange's kind only.
    StringMap<std::vector<Queue*>> direct_;
    TopicRoutes<Queue*> topic_;
    std::vector<Queue*> fanout_;
};

}  // namespace acemq::inproc::detail
