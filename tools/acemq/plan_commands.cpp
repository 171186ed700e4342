#include "plan_commands.hpp"

namespace acemq::cli {

void add_plan_commands(CLI::App& app, const Context& context) {
    add_topology_commands(app, context);
    add_store_commands(app, context);
    add_telemetry_commands(app, context);
}

}  // namespace acemq::cli
