// The commands that look at and move single messages: peek (browse, nothing taken), publish
// (confirmed or exit 1), tail (consume and print, acked only when asked).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <thread>

#include <acemq/json_codec.hpp>
#include <acemq/url.hpp>
#include "broker_commands.hpp"
#include "load/options.hpp"
#include "message_view.hpp"
#include "output.hpp"

namespace acemq::cli {
namespace {

void print_messages(const Context& context, const std::string& queue, const std::vector<Value>& values,
                    const std::string& text) {
    if (context.json) {
        std::printf("%s\n", pretty_json(Value::Map{{"queue", queue}, {"messages", Value::Array(values)}}).c_str());
    } else {
        std::fputs(text.c_str(), stdout);
        if (values.empty()) std::printf("(no messages in %s)\n", quoted_name(queue).c_str());
    }
    std::fflush(stdout);
}

struct PeekArgs {
    std::string queue;
    std::size_t count = 10;
    std::uint64_t from = 0;
};

void peek(const Context& context, const PeekArgs& args) {
    const std::vector<BrowsedMessage> browsed =
        open_broker(context)->browse(args.queue, {.from = args.from, .count = args.count});
    std::vector<Value> values;
    std::string text;
    for (const BrowsedMessage& message : browsed) {
        const MessageView view{message.message, message.position, message.persistent};
        values.push_back(message_value(view));
        text += message_text(view);
    }
    print_messages(context, args.queue, values, text);
}

struct PublishArgs {
    std::string routing_key;
    std::string exchange;
    std::string file;
    std::vector<std::string> headers;
    std::string content_type;
    std::string message_id;
    bool transient = false;
};

Bytes read_body(const std::string& file) {
    std::string text;
    if (file.empty() || file == "-") {
        if (::isatty(STDIN_FILENO) != 0)
            throw CommandFailed(Exit::usage,
                                "publish reads the body from standard input, which is a terminal: give "
                                "--file FILE, or pipe the body in");
        text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
        std::ifstream in(file, std::ios::binary);
        if (!in)
            throw CommandFailed(Exit::not_found,
                                "cannot read the body file " + quoted_name(file) + ": check its path and permissions");
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const auto* first = reinterpret_cast<const std::byte*>(text.data());
    return Bytes(first, first + text.size());
}

// What a body is when --content-type does not say: JSON when it reads as JSON, text when it
// is text, bytes otherwise, so that a consumer's codec can read it.
std::string guessed_content_type(const Bytes& body) {
    try {
        JsonCodec().decode(body, content_types::json);
        return std::string(content_types::json);
    } catch (const DecodeError&) {}
    const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
    return std::string(is_text(text) ? content_types::text : content_types::octet_stream);
}

std::string host_name() {
    char name[256] = {};
    return ::gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
}

void publish(const Context& context, const PublishArgs& args) {
    Envelope envelope = Envelope::for_new_message(args.routing_key, "acemq publish@" + host_name());
    if (!args.message_id.empty()) envelope.id = envelope.correlation = args.message_id;
    for (const std::string& header : args.headers) {
        const std::size_t equals = header.find('=');
        if (equals == std::string::npos || equals == 0)
            throw CommandFailed(Exit::usage, "--header " + quoted_name(header) + " is not NAME=VALUE: write it as k=v");
        set_header(envelope, header.substr(0, equals), header.substr(equals + 1));
    }
    Bytes body = read_body(args.file);
    const std::string content_type = args.content_type.empty() ? guessed_content_type(body) : args.content_type;
    std::shared_ptr<Transport> transport = open_connection(context);
    const PublishResult result = transport->publish({.exchange = args.exchange,
                                                     .routing_key = args.routing_key,
                                                     .body = std::move(body),
                                                     .content_type = content_type,
                                                     .message_id = envelope.id,
                                                     .headers = render_headers(envelope),
                                                     .persistent = !args.transient,
                                                     .mandatory = true});
    transport->close();
    const std::string target =
        (args.exchange.empty() ? std::string("the default exchange") : "exchange " + quoted_name(args.exchange)) +
        " with routing key " + quoted_name(args.routing_key);
    if (!result.confirmed)
        throw CommandFailed(
            Exit::check_failed,
            "not confirmed: the publish to " + target + " was " +
                (result.why == PublishResult::Unconfirmed::lost ? "perhaps lost (no confirm came)" : "not taken") +
                ": " + result.return_reason + "; check the broker and try again");
    if (!result.routed)
        throw CommandFailed(Exit::check_failed, "the broker took the publish to " + target +
                                                    " but it reached no queue (" + result.return_reason +
                                                    "): check the routing key and the bindings (`acemq bindings`)");
    Table table({{"CONFIRMED"}, {"ID"}, {"CONTENT TYPE"}});
    table.add({"yes", envelope.id, content_type});
    print_answer(context, table, Value::Map{{"confirmed", true}, {"id", envelope.id}, {"contentType", content_type}});
}

struct TailArgs {
    std::string queue;
    bool ack = false;
    std::size_t count = 10;
    std::string timeout = "5s";
};

// Pulls rather than subscribes: a message left unacked is held until the end and then put
// back, so it is never handed to this tail twice (a requeued message would come straight
// back to the head, and be printed forever).
void tail(const Context& context, const TailArgs& args, std::chrono::milliseconds idle) {
    std::shared_ptr<Transport> transport = open_connection(context);
    if (!transport->queue_exists(args.queue))
        throw ManagementError(
            ManagementError::Reason::not_found,
            "acemq: there is no queue " + quoted_name(args.queue) + " at " + redacted_url(context.url));
    std::vector<Delivery> held;
    std::vector<Value> values;
    auto last = std::chrono::steady_clock::now();
    std::size_t seen = 0;
    while (args.count == 0 || seen < args.count) {
        std::optional<Delivery> delivery = transport->pull(args.queue);
        if (!delivery) {
            if (std::chrono::steady_clock::now() - last >= idle) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            continue;
        }
        last = std::chrono::steady_clock::now();
        const MessageView view{delivery->message()};
        if (context.json)
            values.push_back(message_value(view));
        else {
            std::fputs(message_text(view).c_str(), stdout);
            std::fflush(stdout);
        }
        ++seen;
        if (args.ack)
            delivery->ack();
        else
            held.push_back(std::move(*delivery));
    }
    // Back in reverse, each to the head, so that they stand in their old order.
    for (auto it = held.rbegin(); it != held.rend(); ++it) it->requeue();
    // A call that waits for the broker's answer after the settlements: the amqp transport
    // posts an ack to its I/O thread, and a close right behind it could drop it unsent.
    transport->queue_depth(args.queue);
    transport->close();
    if (context.json)
        std::printf("%s\n", pretty_json(Value::Map{{"queue", args.queue},
                                                   {"acked", args.ack},
                                                   {"messages", Value::Array(std::move(values))}})
                                .c_str());
    else
        std::printf("(%zu messages %s)\n", seen, args.ack ? "taken and acked" : "shown and put back");
    std::fflush(stdout);
}

}  // namespace

void add_message_commands(CLI::App& app, const Context& context) {
    auto peek_args = std::make_shared<PeekArgs>();
    CLI::App* peek_command =
        app.add_subcommand("peek", "show the messages of QUEUE (envelope and decoded body) without taking them");
    peek_command->add_option("QUEUE", peek_args->queue, "the queue")->required();
    peek_command->add_option("-n,--count", peek_args->count, "at most this many (default 10)")
        ->check(CLI::Range(1, 100000));
    peek_command->add_option("--from", peek_args->from, "the position of the first one shown, 0 the head (default 0)");
    peek_command->callback([&context, peek_args] { peek(context, *peek_args); });

    auto publish_args = std::make_shared<PublishArgs>();
    CLI::App* publish_command = app.add_subcommand(
        "publish", "publish one message, the body from --file or standard input; exit 0 only once confirmed");
    publish_command
        ->add_option("ROUTING_KEY", publish_args->routing_key,
                     "the routing key (the queue's name on the "
                     "default exchange)")
        ->required();
    publish_command->add_option("--exchange,-e", publish_args->exchange, "the exchange (default: the default one)");
    publish_command->add_option("--file,-f", publish_args->file, "the body's file (default: standard input, or -)");
    publish_command->add_option("--header,-H", publish_args->headers, "an application header NAME=VALUE, repeatable");
    publish_command->add_option("--content-type", publish_args->content_type,
                                "the body's content type (default: application/json when it reads as JSON, text "
                                "when it is text, else application/octet-stream)");
    publish_command->add_option("--message-id", publish_args->message_id, "its id (default: a new UUID)");
    publish_command->add_flag("--transient", publish_args->transient, "not persistent (default: persistent)");
    publish_command->callback([&context, publish_args] { publish(context, *publish_args); });

    auto tail_args = std::make_shared<TailArgs>();
    CLI::App* tail_command =
        app.add_subcommand("tail", "take messages of QUEUE and print them; put back at the end unless --ack");
    tail_command->add_option("QUEUE", tail_args->queue, "the queue")->required();
    tail_command->add_flag("--ack", tail_args->ack, "ack each one printed: it leaves the queue for good");
    tail_command->add_option("--count,-n", tail_args->count, "stop after this many, 0 for no limit (default 10)");
    tail_command->add_option("--timeout", tail_args->timeout,
                             "stop once no message has come for this long: 500ms, 5s, 1m (default 5s)");
    tail_command->callback([&context, tail_args] {
        tail(context, *tail_args,
             std::chrono::duration_cast<std::chrono::milliseconds>(
                 load::parse_duration("--timeout", tail_args->timeout)));
    });
}

}  // namespace acemq::cli
