#include "amqp/topology_replay.hpp"

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

}  // namespace

void TopologyReplay::declare(Connection& connection, const Topology& topology) {
    // Each kept once the broker has it: one refused leaves those before it declared.
    for (const auto& exchange : topology.exchanges()) {
        declare_one(connection, exchange);
        declared_.remember(exchange);
    }
    for (const auto& queue : topology.queues()) {
        declare_one(connection, queue);
        declared_.remember(queue);
    }
    for (const auto& binding : topology.bindings()) {
        declare_one(connection, binding);
        declared_.remember(binding);
    }
}

void TopologyReplay::replay(Connection& connection) {
    for (const auto& exchange : declared_.exchanges()) declare_one(connection, exchange);
    for (const auto& queue : declared_.queues()) declare_one(connection, queue);
    for (const auto& binding : declared_.bindings()) declare_one(connection, binding);
}

void TopologyReplay::delete_queue(Connection& connection, const std::string& queue) {
    admin([&] { connection.delete_queue(admin_channel, queue); });
    declared_.forget_queue(queue);
}

std::optional<std::uint64_t> TopologyReplay::message_count(Connection& connection, const std::string& queue) {
    return connection.message_count(admin_channel, queue);
}

}  // namespace acemq::amqp
