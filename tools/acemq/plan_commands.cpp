#include "command_line.hpp"

namespace acemq::cli {

void add_plan_commands(CLI::App& /*app*/, const Context& /*context*/) {}

}  // namespace acemq::cli
