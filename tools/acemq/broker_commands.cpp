// The broker's listings (queues, exchanges, bindings, sessions, info) and what changes a
// queue as a whole (purge, delete, backup).
#include "broker_commands.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <acemq/config.hpp>
#include <acemq/url.hpp>
#include <acemq/zmq.hpp>
#if ACEMQ_HAS_AMQP
#include <acemq/amqp.hpp>
#endif
#include "output.hpp"

namespace acemq::cli {
namespace {

Value optional_millis(const std::optional<std::chrono::milliseconds>& age) {
    return optional_value(age ? std::optional<std::int64_t>(age->count()) : std::nullopt);
}
Value optional_micros(const std::optional<std::chrono::microseconds>& latency) {
    return optional_value(latency ? std::optional<std::int64_t>(latency->count()) : std::nullopt);
}

void print_queues(const Context& context) {
    Table table({{"NAME"},
                 {"TYPE"},
                 {"DURABLE"},
                 {"READY", Align::right},
                 {"UNACKED", Align::right},
                 {"CONSUMERS", Align::right},
                 {"BYTES", Align::right},
                 {"OLDEST", Align::right}});
    Value::Array document;
    for (const QueueSummary& queue : open_broker(context)->queues()) {
        table.add({queue.name, std::string(to_string(queue.type)), yes_no(queue.durable), count_text(queue.ready),
                   count_text(queue.unacked), count_text(queue.consumers), bytes_text(queue.bytes),
                   age_text(queue.oldest_age)});
        document.emplace_back(Value::Map{{"name", queue.name},
                                         {"type", std::string(to_string(queue.type))},
                                         {"durable", queue.durable},
                                         {"exclusive", queue.exclusive},
                                         {"autoDelete", queue.auto_delete},
                                         {"ready", queue.ready},
                                         {"unacked", queue.unacked},
                                         {"consumers", queue.consumers},
                                         {"bytes", queue.bytes},
                                         {"oldestAgeMs", optional_millis(queue.oldest_age)},
                                         {"arguments", to_value(queue.arguments)}});
    }
    print_answer(context, table, Value(std::move(document)));
}

void print_exchanges(const Context& context) {
    Table table({{"NAME"}, {"KIND"}, {"DURABLE"}, {"AUTO-DELETE"}, {"ARGUMENTS"}});
    Value::Array document;
    for (const ExchangeSummary& exchange : open_broker(context)->exchanges()) {
        table.add({exchange.name, std::string(to_string(exchange.kind)), yes_no(exchange.durable),
                   yes_no(exchange.auto_delete), to_string(exchange.arguments)});
        document.emplace_back(Value::Map{{"name", exchange.name},
                                         {"kind", std::string(to_string(exchange.kind))},
                                         {"durable", exchange.durable},
                                         {"autoDelete", exchange.auto_delete},
                                         {"arguments", to_value(exchange.arguments)}});
    }
    print_answer(context, table, Value(std::move(document)));
}

void print_bindings(const Context& context) {
    Table table({{"EXCHANGE"}, {"ROUTING KEY"}, {"QUEUE"}, {"ARGUMENTS"}});
    Value::Array document;
    for (const BindingDeclaration& binding : open_broker(context)->bindings()) {
        table.add({binding.exchange, binding.routing_key, binding.queue, to_string(binding.arguments)});
        document.emplace_back(Value::Map{{"exchange", binding.exchange},
                                         {"routingKey", binding.routing_key},
                                         {"queue", binding.queue},
                                         {"arguments", to_value(binding.arguments)}});
    }
    print_answer(context, table, Value(std::move(document)));
}

void print_sessions(const Context& context) {
    Table table({{"PEER"}, {"NAME"}, {"SINCE"}, {"CONSUMERS", Align::right}, {"UNACKED", Align::right}});
    Value::Array document;
    for (const SessionSummary& session : open_broker(context)->sessions()) {
        table.add({session.peer, session.name.empty() ? "-" : session.name, time_text(session.since),
                   count_text(session.consumers), count_text(session.unacked)});
        document.emplace_back(Value::Map{{"peer", session.peer},
                                         {"name", session.name},
                                         {"since", time_text(session.since)},
                                         {"consumers", session.consumers},
                                         {"unacked", session.unacked}});
    }
    print_answer(context, table, Value(std::move(document)));
}

void print_info(const Context& context) {
    const BrokerInfo info = open_broker(context)->info();
    const auto latency = [](const std::optional<std::chrono::microseconds>& value) {
        return value ? std::to_string(value->count()) + "us" : std::string("-");
    };
    Table table({{"FIELD"}, {"VALUE", Align::left, 200}});
    table.add({"url", redacted_url(context.url)});
    table.add({"product", info.product});
    table.add({"version", info.version});
    table.add({"name", info.name});
    table.add({"uptime", age_text(std::chrono::duration_cast<std::chrono::milliseconds>(info.uptime))});
    table.add({"data file", info.data_file.empty() ? "- (in memory)" : info.data_file});
    if (!info.data_file.empty()) {
        table.add({"data bytes", bytes_text(info.data_bytes)});
        table.add({"wal bytes", bytes_text(info.wal_bytes)});
        table.add({"free disk", info.free_disk_bytes ? bytes_text(*info.free_disk_bytes) : "-"});
        table.add({"opens", count_text(info.opens)});
        table.add({"quarantined", count_text(info.quarantined)});
        table.add({"commits", count_text(info.commits)});
        table.add({"commit latency mean", latency(info.commit_latency_mean)});
        table.add({"commit latency max", latency(info.commit_latency_max)});
    }
    Value::Map details;
    for (const auto& [name, value] : info.details) {
        table.add({name, value});
        details.emplace_back(name, value);
    }
    print_answer(context, table,
                 Value::Map{{"url", redacted_url(context.url)},
                            {"product", info.product},
                            {"version", info.version},
                            {"name", info.name},
                            {"uptimeSeconds", static_cast<std::int64_t>(info.uptime.count())},
                            {"dataFile", info.data_file},
                            {"dataBytes", info.data_bytes},
                            {"walBytes", info.wal_bytes},
                            {"freeDiskBytes", info.free_disk_bytes ? Value(*info.free_disk_bytes) : Value()},
                            {"opens", info.opens},
                            {"quarantined", info.quarantined},
                            {"commits", info.commits},
                            {"commitLatencyMeanUs", optional_micros(info.commit_latency_mean)},
                            {"commitLatencyMaxUs", optional_micros(info.commit_latency_max)},
                            {"details", Value(std::move(details))}});
}

void purge(const Context& context, const std::string& queue, bool yes) {
    std::unique_ptr<Management> broker = open_broker(context);
    confirm("purge the " + count_text(find_queue(*broker, context, queue).ready) + " ready messages of queue " +
                quoted_name(queue) + "?",
            yes);
    const std::uint64_t purged = broker->purge(queue);
    print_answer(
        context,
        [&] {
            Table table({{"QUEUE"}, {"PURGED", Align::right}});
            table.add({queue, count_text(purged)});
            return table;
        }(),
        Value::Map{{"queue", queue}, {"purged", purged}});
}

void delete_queue(const Context& context, const std::string& queue, bool force, bool yes) {
    std::unique_ptr<Management> broker = open_broker(context);
    const QueueSummary found = find_queue(*broker, context, queue);
    confirm("delete queue " + quoted_name(queue) + " with its " + count_text(found.ready + found.unacked) +
                " messages" + (found.consumers > 0 ? " and " + count_text(found.consumers) + " consumers" : "") + "?",
            yes);
    broker->delete_queue(queue, {.even_if_consumed = force});
    Table table({{"DELETED"}});
    table.add({queue});
    print_answer(context, table, Value::Map{{"deleted", queue}});
}

void backup(const Context& context, const std::string& file) {
    // A relative path would be read by the broker against its own working directory: made
    // absolute here, it names the file the operator meant (on the same machine).
    const std::string path = std::filesystem::absolute(file).string();
    const BackupResult result = open_broker(context)->backup(path);
    Table table({{"FILE", Align::left, 200}, {"BYTES", Align::right}, {"MESSAGES", Align::right}});
    table.add({result.path, bytes_text(result.bytes), count_text(result.messages)});
    print_answer(context, table,
                 Value::Map{{"path", result.path}, {"bytes", result.bytes}, {"messages", result.messages}});
}

}  // namespace

std::unique_ptr<Management> open_broker(const Context& context) {
    if (context.url.empty()) throw CommandFailed(Exit::usage, "no broker given: pass --url URL or set ACEMQ_URL");
    return open_management(context.url, {.timeout = context.timeout, .http_url = context.management_url});
}

std::shared_ptr<Transport> open_connection(const Context& context) {
    if (context.url.empty()) throw CommandFailed(Exit::usage, "no broker given: pass --url URL or set ACEMQ_URL");
    // --timeout bounds the open and every call, so a broker that is down is told within it
    // (a transport's own connect timeout is 10 s or 30 s).
    const SessionOptions session{.connect_timeout = context.timeout, .call_timeout = context.timeout, .name = "acemq"};
    const std::string_view url = context.url;
    if (url.starts_with("zmq+")) return zmq::open(url, {.session = session});
#if ACEMQ_HAS_AMQP
    if (url.starts_with("amqp://") || url.starts_with("amqps://")) return amqp::open(url, {.session = session});
#endif
    return open_transport(url);
}

Bus open_bus(const Context& context) { return connect(open_connection(context)); }

QueueSummary find_queue(Management& broker, const Context& context, std::string_view queue) {
    for (QueueSummary& summary : broker.queues())
        if (summary.name == queue) return summary;
    throw ManagementError(ManagementError::Reason::not_found,
                          "acemq: there is no queue " + quoted_name(queue) + " at " + redacted_url(context.url));
}

void confirm(const std::string& question, bool yes) {
    if (yes) return;
    if (::isatty(STDIN_FILENO) == 0)
        throw CommandFailed(Exit::usage, "will not " + question.substr(0, question.size() - 1) +
                                             " without asking, and standard input is not a terminal to ask on: "
                                             "give --yes to do it without asking");
    std::fprintf(stderr, "%s [y/N] ", question.c_str());
    std::fflush(stderr);
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "yes" && answer != "Y")
        throw CommandFailed(Exit::check_failed, "not done: the answer was not yes");
}

void add_listing_commands(CLI::App& app, const Context& context) {
    app.add_subcommand("queues", "the queues: type, ready and unacked messages, consumers, bytes, oldest message's age")
        ->callback([&context] { print_queues(context); });
    app.add_subcommand("exchanges", "the exchanges declared (not the default one, nor RabbitMQ's amq.*)")
        ->callback([&context] { print_exchanges(context); });
    app.add_subcommand("bindings", "the bindings of exchanges to queues")->callback([&context] {
        print_bindings(context);
    });
    app.add_subcommand("sessions", "the clients connected now: peer, name, since, consumers, unacked")
        ->callback([&context] { print_sessions(context); });
    app.add_subcommand("info", "the broker: version, uptime, data file and its size, free disk, limits, commits")
        ->callback([&context] { print_info(context); });

    struct QueueCommand {
        std::string queue;
        bool yes = false;
        bool force = false;
    };
    auto purge_args = std::make_shared<QueueCommand>();
    CLI::App* purge_command =
        app.add_subcommand("purge", "drop the ready messages of QUEUE (handed-out ones stay); asks first");
    purge_command->add_option("QUEUE", purge_args->queue, "the queue")->required();
    purge_command->add_flag("--yes,-y", purge_args->yes, "do not ask (needed when standard input is not a terminal)");
    purge_command->callback([&context, purge_args] { purge(context, purge_args->queue, purge_args->yes); });

    auto delete_args = std::make_shared<QueueCommand>();
    CLI::App* delete_command = app.add_subcommand("delete", "delete QUEUE and its messages; asks first");
    delete_command->add_option("QUEUE", delete_args->queue, "the queue")->required();
    delete_command->add_flag("--force", delete_args->force, "delete it even while consumers read it (cancels them)");
    delete_command->add_flag("--yes,-y", delete_args->yes, "do not ask (needed when standard input is not a terminal)");
    delete_command->callback(
        [&context, delete_args] { delete_queue(context, delete_args->queue, delete_args->force, delete_args->yes); });

    auto backup_file = std::make_shared<std::string>();
    CLI::App* backup_command = app.add_subcommand(
        "backup", "copy the broker's data file, while it runs, to FILE on the broker's machine (SQLite online backup)");
    backup_command->add_option("FILE", *backup_file, "where the copy goes; must not exist")->required();
    backup_command->callback([&context, backup_file] { backup(context, *backup_file); });
}

void add_broker_commands(CLI::App& app, const Context& context) {
    add_listing_commands(app, context);
    add_message_commands(app, context);
    add_dlq_commands(app, context);
}

}  // namespace acemq::cli
