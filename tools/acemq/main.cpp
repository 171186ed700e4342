// acemq: one command for operators (tools/README.md). The subcommands live in
// broker_commands.cpp and plan_commands.cpp; this file reads the shared options and turns
// what went wrong into an exit status (output.hpp).
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "command_line.hpp"
#include "load/options.hpp"
#include "output.hpp"

namespace {

// Every subcommand's --help ends with the exit codes, as the program's does.
void add_footer(CLI::App& app, const std::string& footer) {
    app.footer(footer);
    for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) add_footer(*command, footer);
}

}  // namespace

int main(int argc, char** argv) {
    using acemq::cli::Exit;
    acemq::cli::Context context;
    CLI::App app{"acemq: ask and steer an acemq broker (embedded, ZeroMQ or RabbitMQ)", "acemq"};
    app.require_subcommand(1);
    // The shared options may come after the subcommand too (`acemq queues --json`); the
    // subcommands made below inherit it.
    app.fallthrough();
    app.add_option("--url", context.url,
                   "the broker: inproc://NAME?data=FILE, zmq+tcp://, zmq+ipc://, amqp://, amqps:// (credentials are "
                   "never printed back)")
        ->envname("ACEMQ_URL");
    app.add_option("--management-url", context.management_url,
                   "RabbitMQ only: its management HTTP API, when not http://HOST:15672 of the amqp URL")
        ->envname("ACEMQ_MANAGEMENT_URL");
    app.add_flag("--json", context.json, "write one JSON document for scripts instead of tables");
    app.add_option_function<std::string>(
           "--timeout",
           [&context](const std::string& text) {
               context.timeout =
                   std::chrono::duration_cast<std::chrono::milliseconds>(load::parse_duration("--timeout", text));
           },
           "how long to wait for the broker's answer to each call: 500ms, 10s, 1m (default 10s)")
        ->type_name("DURATION");
    acemq::cli::add_broker_commands(app, context);
    acemq::cli::add_plan_commands(app, context);
    add_footer(app, acemq::cli::exit_codes_help());
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForAllHelp& help) {
        return app.exit(help);
    } catch (const CLI::ParseError& error) {
        app.exit(error);
        return static_cast<int>(Exit::usage);
    } catch (...) {
        return static_cast<int>(acemq::cli::report_failure(std::current_exception(), context));
    }
    return static_cast<int>(Exit::ok);
}
