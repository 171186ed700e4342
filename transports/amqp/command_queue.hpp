// Work handed to the transport's I/O thread: the session layer's queue of commands.
// Thread-safe; internal.
#pragma once

#include <functional>

#include "session/work_queue.hpp"

namespace acemq::amqp {

class Connection;

// Runs on the I/O thread with the connection up, or with nullptr when the transport closed
// before it could run.
using Command = std::function<void(Connection*)>;
using CommandQueue = session::WorkQueue<Command>;

}  // namespace acemq::amqp
