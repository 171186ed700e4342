// Dead letters: `dlq list` shows what sits in QUEUE.dlq and why, `dlq replay` moves it back
// through acemq::replay (<acemq/replay.hpp>), and `move` moves any queue's messages to
// another the same way.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include <acemq/replay.hpp>
#include "broker_commands.hpp"
#include "message_view.hpp"
#include "output.hpp"

namespace acemq::cli {
namespace {

// "orders.new" names its dead letters "orders.new.dlq"; a name already ending in .dlq or
// .parked is the set-aside queue itself.
std::string dead_letter_queue(const std::string& queue) {
    const auto ends_with = [&](std::string_view suffix) {
        return queue.size() > suffix.size() && queue.compare(queue.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    return ends_with(".dlq") || ends_with(".parked") ? queue : queue + ".dlq";
}

// --match TEXT: the body's bytes, or any of the envelope's fields and headers, hold TEXT.
bool matches(const Envelope& envelope, std::span<const std::byte> body, const std::string& text) {
    if (text.empty()) return true;
    const std::string_view body_text(reinterpret_cast<const char*>(body.data()), body.size());
    if (body_text.find(text) != std::string_view::npos) return true;
    for (const std::string* field :
         {&envelope.id, &envelope.type, &envelope.error, &envelope.origin, &envelope.correlation, &envelope.causation})
        if (field->find(text) != std::string::npos) return true;
    for (const auto& [name, value] : envelope.headers)
        if ((name + "=" + value.to_string()).find(text) != std::string::npos) return true;
    return false;
}

struct ListArgs {
    std::string queue;
    std::size_t count = 100;
};

void list(const Context& context, const ListArgs& args) {
    const std::string dlq = dead_letter_queue(args.queue);
    const std::vector<BrowsedMessage> browsed = open_broker(context)->browse(dlq, {.count = args.count});
    Table table({{"#", Align::right},
                 {"ID", Align::left, 36},
                 {"ATTEMPT", Align::right},
                 {"AGE", Align::right},
                 {"ERROR", Align::left, 80}});
    Value::Array messages;
    const EpochMillis now = epoch_millis_now();
    for (const BrowsedMessage& browsed_message : browsed) {
        const Envelope envelope = envelope_of(browsed_message.message);
        table.add({count_text(browsed_message.position), envelope.id_generated ? "-" : envelope.id,
                   std::to_string(envelope.attempt), age_text(envelope.age(now)),
                   envelope.error.empty() ? "-" : envelope.error});
        const std::optional<std::chrono::milliseconds> age = envelope.age(now);
        messages.emplace_back(Value::Map{{"position", browsed_message.position},
                                         {"id", envelope.id_generated ? Value() : Value(envelope.id)},
                                         {"attempt", static_cast<std::int64_t>(envelope.attempt)},
                                         {"ageMs", age ? Value(static_cast<std::int64_t>(age->count())) : Value()},
                                         {"error", envelope.error}});
    }
    if (!context.json && browsed.empty()) {
        print_note(context, "(no dead letters in " + quoted_name(dlq) + ")");
        return;
    }
    print_answer(context, table, Value::Map{{"queue", dlq}, {"messages", Value(std::move(messages))}});
}

struct ReplayArgs {
    std::string queue;
    std::string to;  // move's TO; "" for replay's rule
    std::size_t limit = 0;
    std::string match;
    bool dry_run = false;
    bool keep_attempt = false;
};

void print_summary(const Context& context, const std::string& source, bool dry_run, std::size_t moved,
                   std::size_t skipped, std::uint64_t left, std::string_view reason) {
    Table table({{"QUEUE"},
                 {dry_run ? "WOULD MOVE" : "MOVED", Align::right},
                 {"SKIPPED", Align::right},
                 {"LEFT", Align::right},
                 {"STOPPED"}});
    table.add({source, count_text(moved), count_text(skipped), count_text(left), std::string(reason)});
    print_answer(context, table,
                 Value::Map{{"queue", source},
                            {"dryRun", dry_run},
                            {dry_run ? "wouldMove" : "moved", static_cast<std::uint64_t>(moved)},
                            {"skipped", static_cast<std::uint64_t>(skipped)},
                            {"left", left},
                            {"stopped", std::string(reason)}});
}

// What a replay would do, from a browse of the whole queue: nothing is taken. (Not from the
// listing's counts: RabbitMQ's lag behind the queue by its statistics interval.)
void dry_run(const Context& context, const std::string& source, const ReplayArgs& args) {
    std::unique_ptr<Management> broker = open_broker(context);
    find_queue(*broker, context, source);
    std::size_t moved = 0, skipped = 0, total = 0;
    constexpr std::size_t page = 500;
    for (std::uint64_t from = 0;; from += page) {
        const std::vector<BrowsedMessage> browsed = broker->browse(source, {.from = from, .count = page});
        for (const BrowsedMessage& message : browsed) {
            ++total;
            if (args.limit != 0 && moved == args.limit) continue;
            if (matches(envelope_of(message.message), message.message.body(), args.match))
                ++moved;
            else
                ++skipped;
        }
        if (browsed.size() < page) break;
    }
    const bool limited = args.limit != 0 && moved == args.limit;
    print_summary(context, source, true, moved, skipped, total - moved,
                  to_string(limited ? ReplayStop::limit : ReplayStop::drained));
}

void replay_queue(const Context& context, const std::string& source, const ReplayArgs& args) {
    if (args.dry_run) return dry_run(context, source, args);
    if (!args.to.empty() && args.to == source)
        throw CommandFailed(Exit::usage, "move from " + quoted_name(source) +
                                             " to itself would do nothing: name another "
                                             "queue");
    std::unique_ptr<Management> broker = open_broker(context);
    find_queue(*broker, context, source);  // a missing queue is told as not found, before anything is pulled
    Bus bus = open_bus(context);
    std::size_t seen = 0, accepted = 0;
    auto next_progress = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    ReplayOptions options{.limit = args.limit, .restart = !args.keep_attempt};
    if (!args.to.empty()) options.routing_key = args.to;
    // The filter sees every message pulled, so it is where a long replay tells how far it is.
    options.only = [&](const Envelope& envelope, std::span<const std::byte> body) {
        ++seen;
        if (std::chrono::steady_clock::now() >= next_progress) {
            std::fprintf(stderr, "acemq: %s: %zu looked at, %zu moved so far\n", quoted_name(source).c_str(), seen,
                         accepted);
            next_progress = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        }
        const bool take = matches(envelope, body, args.match);
        accepted += take ? 1 : 0;
        return take;
    };
    const ReplayResult result = replay(bus, source, options);
    // A call answered after the last ack: the amqp transport posts acks to its I/O thread,
    // and a close right behind one could drop it, leaving a moved message in `source` too.
    bus.transport().queue_depth(source);
    bus.close();
    // Asked on a connection of its own once the replay's is closed, so that the declined
    // messages it put back are counted (RabbitMQ takes them back on the closing channel, and
    // a listing would lag: its counts come from statistics gathered every few seconds).
    std::shared_ptr<Transport> counter = open_connection(context);
    const std::uint64_t left = counter->queue_depth(source);
    counter->close();
    print_summary(context, source, false, result.moved, result.skipped, left, to_string(result.reason));
}

}  // namespace

void add_dlq_commands(CLI::App& app, const Context& context) {
    CLI::App* dlq = app.add_subcommand("dlq", "the dead letters of a queue (QUEUE.dlq): list them, replay them");
    dlq->require_subcommand(1);

    auto list_args = std::make_shared<ListArgs>();
    CLI::App* list_command = dlq->add_subcommand("list", "the messages in QUEUE.dlq: id, attempt, age, and why");
    list_command->add_option("QUEUE", list_args->queue, "the queue whose dead letters to show (or QUEUE.dlq itself)")
        ->required();
    list_command->add_option("-n,--count", list_args->count, "at most this many (default 100)")
        ->check(CLI::Range(1, 100000));
    list_command->callback([&context, list_args] { list(context, *list_args); });

    auto replay_args = std::make_shared<ReplayArgs>();
    CLI::App* replay_command = dlq->add_subcommand(
        "replay", "move the messages of QUEUE.dlq back to QUEUE, attempt restarted, and say how many moved");
    replay_command->add_option("QUEUE", replay_args->queue, "the queue whose dead letters to replay")->required();
    replay_command->add_option("--limit", replay_args->limit, "move at most this many (default: all)");
    replay_command->add_option("--match", replay_args->match,
                               "move only messages whose body or headers (error, id, type, ...) contain TEXT");
    replay_command->add_flag("--dry-run", replay_args->dry_run, "move nothing: count what would move");
    replay_command->callback(
        [&context, replay_args] { replay_queue(context, dead_letter_queue(replay_args->queue), *replay_args); });

    auto move_args = std::make_shared<ReplayArgs>();
    CLI::App* move_command = app.add_subcommand(
        "move", "move the messages of FROM to the queue TO, one at a time, never losing one (acemq::replay)");
    move_command->add_option("FROM", move_args->queue, "the queue they leave")->required();
    move_command->add_option("TO", move_args->to, "the queue they go to, through the default exchange")->required();
    move_command->add_option("--limit", move_args->limit, "move at most this many (default: all)");
    move_command->add_option("--match", move_args->match, "move only messages whose body or headers contain TEXT");
    move_command->add_flag("--dry-run", move_args->dry_run, "move nothing: count what would move");
    move_args->keep_attempt = true;
    move_command->callback([&context, move_args] { replay_queue(context, move_args->queue, *move_args); });
}

}  // namespace acemq::cli
