// acemq: one command for operators (tools/README.md). The subcommands live in
// broker_commands.cpp and plan_commands.cpp; this file reads the shared options and turns
// what went wrong into an exit status.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <acemq/error.hpp>
#include "command_line.hpp"

int main(int argc, char** argv) {
    using acemq::cli::Exit;
    acemq::cli::Context context;
    CLI::App app{"acemq: ask and steer an acemq broker (embedded, ZeroMQ or RabbitMQ)", "acemq"};
    app.require_subcommand(1);
    app.add_option("--url", context.url,
                   "the broker: inproc://NAME?data=FILE, zmq+tcp://, zmq+ipc://, amqp://, amqps://")
        ->envname("ACEMQ_URL");
    app.add_flag("--json", context.json, "write JSON for scripts instead of tables");
    acemq::cli::add_broker_commands(app, context);
    acemq::cli::add_plan_commands(app, context);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        return app.exit(error);
    } catch (const acemq::Error& error) {
        std::fprintf(stderr, "%s\n", error.what());
        return static_cast<int>(Exit::failed);
    }
    return static_cast<int>(Exit::ok);
}
