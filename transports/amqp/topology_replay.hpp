// Declarations on the admin channel, and the topology this transport declared kept (by the
// session layer's rule, session/declared_topology.hpp) so that a new connection declares it
// again before anything else. I/O thread only; internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <acemq/topology.hpp>
#include "session/declared_topology.hpp"

namespace acemq::amqp {

class Connection;

class TopologyReplay {
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
    session::DeclaredTopology declared_;
};

}  // namespace acemq::amqp
