#include "amqp/topology_replay.hpp"

#include <algorithm>

#include "amqp/channels.hpp"
#include "amqp/connection.hpp"

namespace acemq::amqp {

namespace {

// A refusal closes the admin channel (reopened by the connection): say what was refused.
template <class Declare>
void admin(Declare declare) {
    try {
        declare();
    } catch (const ChannelClosed& closed) {
        throw TopologyError(closed.what());
    }
}

void declare_one(Connection& connection, const ExchangeDeclaration& exchange) {
    admin([&] { connection.declare_exchange(admin_channel, exchange); });
}
void declare_one(Connection& connection, const QueueDeclaration& queue) {
    admin([&] { connection.declare_queue(admin_channel, queue); });
}
void declare_one(Connection& connection, const BindingDeclaration& binding) {
    admin([&] { connection.bind_queue(admin_channel, binding); });
}

// Declares `item` and keeps it in `list`, replacing an earlier one that is `same`.
template <class T, class Same>
void declare_and_remember(Connection& connection, std::vector<T>& list, const T& item, Same same) {
    declare_one(connection, item);
    const auto found = std::find_if(list.begin(), list.end(), same);
    if (found == list.end())
        list.push_back(item);
    else
        *found = item;
}

}  // namespace

void DeclaredTopology::declare(Connection& connection, const Topology& topology) {
    for (const auto& exchange : topology.exchanges())
        declare_and_remember(connection, exchanges_, exchange, [&](const auto& e) { return e.name == exchange.name; });
    for (const auto& queue : topology.queues())
        declare_and_remember(connection, queues_, queue, [&](const auto& q) { return q.name == queue.name; });
    for (const auto& binding : topology.bindings())
        declare_and_remember(connection, bindings_, binding, [&](const auto& b) { return b == binding; });
}

void DeclaredTopology::replay(Connection& connection) {
    for (const auto& exchange : exchanges_) declare_one(connection, exchange);
    for (const auto& queue : queues_) declare_one(connection, queue);
    for (const auto& binding : bindings_) declare_one(connection, binding);
}

void DeclaredTopology::delete_queue(Connection& connection, const std::string& queue) {
    admin([&] { connection.delete_queue(admin_channel, queue); });
    std::erase_if(queues_, [&](const auto& q) { return q.name == queue; });
    std::erase_if(bindings_, [&](const auto& b) { return b.queue == queue; });
}

std::optional<std::uint64_t> DeclaredTopology::message_count(Connection& connection, const std::string& queue) {
    return connection.message_count(admin_channel, queue);
}

}  // namespace acemq::amqp
