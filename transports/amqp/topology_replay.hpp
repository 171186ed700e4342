// The topology this transport declared, kept so that a new connection declares it again
// before anything else, and the declarations themselves (on the admin channel). I/O thread
// only; internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <acemq/topology.hpp>

namespace acemq::amqp {

class Connection;

class DeclaredTopology {
public:
    // Declares and remembers; TopologyError when the broker refuses one (the admin channel
    // is open again by then).
    void declare(Connection& connection, const Topology& topology);
    // Everything remembered, again, on a new connection.
    void replay(Connection& connection);
    // Deletes the queue and forgets it and its bindings.
    void delete_queue(Connection& connection, const std::string& queue);
    // The queue's message count, or nullopt when it does not exist; creates nothing.
    std::optional<std::uint64_t> message_count(Connection& connection, const std::string& queue);

private:
    std::vector<ExchangeDeclaration> exchanges_;
    std::vector<QueueDeclaration> queues_;
    std::vector<BindingDeclaration> bindings_;
};

}  // namespace acemq::amqp
