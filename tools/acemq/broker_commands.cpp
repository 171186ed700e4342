#include "command_line.hpp"

namespace acemq::cli {

void add_broker_commands(CLI::App& /*app*/, const Context& /*context*/) {}

}  // namespace acemq::cli
