// What every subcommand of `acemq` shares: the options before the subcommand, the exit
// codes, and the functions that add each group of subcommands to the command line. Internal
// to the program.
#pragma once

#include <chrono>
#include <string>

#include <CLI/CLI.hpp>

namespace acemq::cli {

// The exit status of `acemq`, documented in `acemq --help` and the README.
enum class Exit : int {
    ok = 0,
    check_failed = 1,  // the command ran and its answer is "no": drift, down, not confirmed
    usage = 2,         // the command line is wrong
    unreachable = 3,   // no broker, database or endpoint answered at the URL
    refused = 4,       // the broker refused: credentials, keys, management disabled, in use
    not_found = 5,     // no such queue, exchange, record or file
    failed = 6,        // anything else; the message says what
};

// The options given before the subcommand, read once the command line is parsed.
struct Context {
    std::string url;  // --url, else ACEMQ_URL
    // --management-url, else ACEMQ_MANAGEMENT_URL: RabbitMQ's management HTTP API, when it is
    // not http://HOST:15672 of the amqp URL (ManagementOptions::http_url).
    std::string management_url;
    bool json = false;
    std::chrono::milliseconds timeout{10'000};
};

// Each adds its subcommands to `app`; their callbacks read `context` once parsing is done.
void add_broker_commands(CLI::App& app, const Context& context);  // broker_commands.cpp
void add_plan_commands(CLI::App& app, const Context& context);    // plan_commands.cpp

}  // namespace acemq::cli
