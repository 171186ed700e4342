// The subcommands for plans, stores and telemetry (issue 29 §2), in groups by concept.
// Internal to the program.
#pragma once

#include "command_line.hpp"

namespace acemq::cli {

void add_topology_commands(CLI::App& app, const Context& context);   // topology_commands.cpp
void add_store_commands(CLI::App& app, const Context& context);      // store_commands.cpp: outbox, schema-ddl
void add_telemetry_commands(CLI::App& app, const Context& context);  // telemetry_commands.cpp: health, metrics

}  // namespace acemq::cli
