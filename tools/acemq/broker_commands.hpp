// The subcommands that talk to a broker (issue 29 §2), in groups by concept, and what they
// share: the broker's Management, a Transport or a Bus on the URL, and the question asked
// before a purge or a delete. Internal to the program.
#pragma once

#include <memory>
#include <string>

#include <acemq/bus.hpp>
#include <acemq/management.hpp>
#include <acemq/transport.hpp>
#include "command_line.hpp"

namespace acemq::cli {

void add_listing_commands(CLI::App& app, const Context& context);  // queues, exchanges, ..., purge, delete, backup
void add_message_commands(CLI::App& app, const Context& context);  // peek, publish, tail: message_commands.cpp
void add_dlq_commands(CLI::App& app, const Context& context);      // dlq list|replay, move: dlq_commands.cpp

// Each throws CommandFailed (usage) when no URL was given.
std::unique_ptr<Management> open_broker(const Context& context);
std::shared_ptr<Transport> open_connection(const Context& context);
Bus open_bus(const Context& context);

// The summary of `queue`; ManagementError (not_found) naming it and the URL when there is none.
QueueSummary find_queue(Management& broker, const Context& context, std::string_view queue);

// Asks `question` ("purge 12 ready messages of \"orders.new\"?") on a terminal and throws
// CommandFailed (check_failed) unless the answer is yes; off a terminal it throws
// CommandFailed (usage) naming --yes. Nothing is asked when `yes`.
void confirm(const std::string& question, bool yes);

}  // namespace acemq::cli
