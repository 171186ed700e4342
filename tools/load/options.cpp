#include "options.hpp"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <vector>

namespace load {

namespace {

struct Spec {
    const char* name;
    const char* value;  // nullptr for a flag that takes none
    const char* help;
    std::function<void(Options&, const std::string&)> set;
};

double number(const std::string& option, const std::string& text) {
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || !std::isfinite(value))
        throw UsageProblem("acemq-load: " + option + " wants a number, got \"" + text + "\"");
    return value;
}

template <class Int>
Int whole(const std::string& option, const std::string& text, Int lowest, Int highest) {
    long long value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || value < static_cast<long long>(lowest) ||
        value > static_cast<long long>(highest))
        throw UsageProblem("acemq-load: " + option + " wants a whole number from " + std::to_string(lowest) + " to " +
                           std::to_string(highest) + ", got \"" + text + "\"");
    return static_cast<Int>(value);
}

const std::vector<Spec>& specs() {
    static const std::vector<Spec> all{
        {"--url", "URL",
         "The bus to load: inproc://NAME (in this process), zmq+tcp://HOST:PORT (an acemq-broker) or "
         "amqp://USER:PW@HOST:PORT/ (RabbitMQ); default inproc://acemq-load.",
         [](Options& o, const std::string& v) { o.url = v; }},
        {"--queue", "NAME",
         "The queue the load goes through, deleted and declared afresh at the start (with its .dlq and .parked) "
         "and deleted at the end, so never one an application uses; default acemq.load.",
         [](Options& o, const std::string& v) { o.queue = v; }},
        {"--queue-type", "classic|quorum", "The type of that queue; default classic.",
         [](Options& o, const std::string& v) {
             if (v == "classic")
                 o.queue_type = QueueKind::classic;
             else if (v == "quorum")
                 o.queue_type = QueueKind::quorum;
             else
                 throw UsageProblem("acemq-load: --queue-type is classic or quorum, got \"" + v + "\"");
         }},
        {"--rate", "MSG/S",
         "Messages offered per second over all publisher threads: message n is due at start + n/rate; default 1000.",
         [](Options& o, const std::string& v) {
             o.rate = number("--rate", v);
             if (o.rate <= 0 || o.rate > 1e7)
                 throw UsageProblem("acemq-load: --rate must be above 0 and at most 10000000 messages a second");
         }},
        {"--size", "BYTES",
         "The body of each message, at least 16 (the due time and a sequence number, then padding); default 512.",
         [](Options& o, const std::string& v) {
             o.size = whole<std::size_t>("--size", v, header_bytes, 64 * 1024 * 1024);
         }},
        {"--publishers", "N", "Publisher threads, each sending every N-th message; default 1.",
         [](Options& o, const std::string& v) { o.publishers = whole<int>("--publishers", v, 1, 256); }},
        {"--window", "N",
         "Publishes in flight per publisher thread awaiting their confirm, kept by N sending threads each "
         "waiting for one confirm (Publisher::send is synchronous); default 32.",
         [](Options& o, const std::string& v) { o.window = whole<std::size_t>("--window", v, 1, 1024); }},
        {"--consumers", "N", "Handler threads of the one consumer (its concurrency); 0 publishes only; default 1.",
         [](Options& o, const std::string& v) { o.consumers = whole<int>("--consumers", v, 0, 1024); }},
        {"--prefetch", "N", "Deliveries the consumer may hold unsettled; default 100.",
         [](Options& o, const std::string& v) { o.prefetch = whole<std::uint16_t>("--prefetch", v, 1, 65535); }},
        {"--handler-time", "DURATION", "How long each handler call sleeps, standing for work; default 0s.",
         [](Options& o, const std::string& v) { o.handler_time = parse_duration("--handler-time", v); }},
        {"--failure-rate", "FRACTION",
         "The fraction of handler calls that throw, so that their messages are retried (see --attempts) and then "
         "dead-lettered to QUEUE.dlq; default 0.",
         [](Options& o, const std::string& v) {
             o.failure_rate = number("--failure-rate", v);
             if (o.failure_rate < 0 || o.failure_rate > 1)
                 throw UsageProblem("acemq-load: --failure-rate is a fraction from 0 to 1, got " + v);
         }},
        {"--attempts", "N",
         "Deliveries a failing message gets before it is dead-lettered, climbing a fixed retry ladder; default 1 "
         "(no retry).",
         [](Options& o, const std::string& v) { o.attempts = whole<int>("--attempts", v, 1, 100); }},
        {"--retry-delay", "DURATION", "The wait on each rung of that ladder; default 100ms.",
         [](Options& o, const std::string& v) { o.retry_delay = parse_duration("--retry-delay", v); }},
        {"--duration", "DURATION", "How long the load is measured, after the warm-up; default 30s.",
         [](Options& o, const std::string& v) { o.duration = parse_duration("--duration", v); }},
        {"--warmup", "DURATION",
         "How long the load runs first without being recorded in the histograms (it is counted); default 5s.",
         [](Options& o, const std::string& v) { o.warmup = parse_duration("--warmup", v); }},
        {"--drain", "DURATION",
         "How long to wait after the last publish for the consumer to handle what was published; default 10s.",
         [](Options& o, const std::string& v) { o.drain = parse_duration("--drain", v); }},
        {"--lag-bound", "DURATION",
         "The send-lag p99 under which the generator kept up (the run is invalid otherwise); default 1ms.",
         [](Options& o, const std::string& v) { o.lag_bound = parse_duration("--lag-bound", v); }},
        {"--min-samples", "N",
         "End-to-end samples (confirm samples when publishing only) a run needs to be long enough for a p99.9; "
         "default 10000.",
         [](Options& o, const std::string& v) {
             o.min_samples = whole<std::uint64_t>("--min-samples", v, 0, std::numeric_limits<std::int64_t>::max());
         }},
        {"--progress", nullptr,
         "Writes a progress line (rates, end-to-end p99, queue depth) to standard error every --progress-every, "
         "as whole lines, also when it is not a terminal (a log, a CI job); on a terminal one line is updated every "
         "second without it.",
         [](Options& o, const std::string&) { o.progress = true; }},
        {"--progress-every", "DURATION", "How often --progress writes its line; default 5s.",
         [](Options& o, const std::string& v) {
             o.progress_every = parse_duration("--progress-every", v);
             if (o.progress_every < std::chrono::milliseconds(100))
                 throw UsageProblem("acemq-load: --progress-every must be at least 100ms");
         }},
        {"--json", "FILE", "Also writes the report as JSON to FILE, or to standard output for -.",
         [](Options& o, const std::string& v) { o.json = v; }},
        {"--keep-queue", nullptr, "Leaves the queue and its .dlq in place at the end, to look at what is left.",
         [](Options& o, const std::string&) { o.keep_queue = true; }},
        {"--help", nullptr, "Prints this help and exits.", [](Options& o, const std::string&) { o.help = true; }},
    };
    return all;
}

}  // namespace

Nanos parse_duration(const std::string& option, const std::string& text) {
    static const std::vector<std::pair<std::string, double>> units{{"ns", 1},  {"us", 1e3}, {"ms", 1e6},
                                                                   {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
    const std::size_t digits = text.find_first_not_of("0123456789.");
    const std::string amount = text.substr(0, digits);
    const std::string unit = digits == std::string::npos ? "" : text.substr(digits);
    for (const auto& [name, scale] : units) {
        if (unit != name || amount.empty()) continue;
        const double nanos = number(option, amount) * scale;
        if (nanos > 1e18) throw UsageProblem("acemq-load: " + option + " is too long: " + text);
        return Nanos(static_cast<std::int64_t>(std::llround(nanos)));
    }
    throw UsageProblem("acemq-load: " + option +
                       " wants a duration with its unit (ns, us, ms, s, m, h), e.g. 500ms, got \"" + text + "\"");
}

Options parse_options(int argc, char** argv) {
    Options options;
    // CLI11 reads the words (a value after the option or after "="; given twice, the last
    // counts); the table above says what each means, and help_text() lays it out.
    CLI::App app{"acemq-load", "acemq-load"};
    app.set_help_flag();
    for (const Spec& spec : specs()) {
        if (!spec.value) {
            app.add_flag_callback(spec.name, [&options, &spec] { spec.set(options, ""); })->disable_flag_override();
            continue;
        }
        app.add_option_function<std::string>(spec.name,
                                             [&options, &spec](const std::string& v) { spec.set(options, v); })
            ->option_text(spec.value)
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ExtrasError&) {
        const std::vector<std::string> extras = app.remaining();
        throw UsageProblem("acemq-load: unknown option \"" + (extras.empty() ? std::string() : extras.front()) +
                           "\"; --help lists them");
    } catch (const CLI::ArgumentMismatch& error) {
        // A flag given a value: CLI11 names it without its dashes.
        const std::string what = error.what();
        const auto override = what.find(" was given a disallowed flag override");
        if (override != std::string::npos)
            throw UsageProblem("acemq-load: --" + what.substr(0, override) + " takes no value");
        // "--rate: 1 required MSG/S missing".
        const std::string name = what.substr(0, what.find(':'));
        for (const Spec& spec : specs())
            if (name == spec.name)
                throw UsageProblem(
                    "acemq-load: " + name +
                    (spec.value ? " wants a value (" + std::string(spec.value) + ")" : " takes no value"));
        throw UsageProblem("acemq-load: " + what + "; --help lists the options");
    } catch (const CLI::ParseError& error) {
        throw UsageProblem("acemq-load: " + std::string(error.what()) + "; --help lists the options");
    }
    if (options.duration <= Nanos::zero()) throw UsageProblem("acemq-load: --duration must be above 0");
    if (static_cast<std::size_t>(options.publishers) * options.window > 4096)
        throw UsageProblem(
            "acemq-load: --publishers times --window is the number of sending threads, at most 4096; "
            "got " +
            std::to_string(static_cast<std::size_t>(options.publishers) * options.window));
    if (options.failure_rate > 0 && options.consumers == 0)
        throw UsageProblem("acemq-load: --failure-rate needs a consumer to fail in; --consumers is 0");
    if (options.attempts > 1 && options.retry_delay < std::chrono::milliseconds(1))
        throw UsageProblem(
            "acemq-load: --retry-delay must be at least 1ms when --attempts is above 1 (a retry "
            "policy counts its waits in milliseconds)");
    return options;
}

std::string help_text() {
    std::string text =
        "acemq-load: an open-loop load generator for an AceMQ bus. Message n is due at start + n/rate whether or not\n"
        "earlier ones were confirmed, and latencies are measured from the due time, so a stalled broker shows as\n"
        "latency instead of slowing the load down. It publishes and consumes in this one process and reports\n"
        "end-to-end (due -> handler start), confirm (send start -> confirmed) and send-lag (due -> send start)\n"
        "percentiles, counts and verdicts; exit status 0 passed, 1 a verdict failed, 2 the run is invalid,\n"
        "3 a bad command line, 4 the bus could not be reached.\n\n"
        "Usage: acemq-load [OPTION VALUE]...\n\n";
    for (const Spec& spec : specs()) {
        text += std::string("  ") + spec.name + (spec.value ? std::string(" ") + spec.value : "") + "\n";
        // Wrapped at 100 columns, indented under the option.
        const std::string indent = "      ";
        std::string line = indent;
        std::istringstream words(spec.help);
        for (std::string word; words >> word;) {
            if (line.size() > indent.size() && line.size() + 1 + word.size() > 100) {
                text += line + "\n";
                line = indent;
            }
            line += (line.size() > indent.size() ? " " : "") + word;
        }
        text += line + "\n";
    }
    text +=
        "\nDurations take a unit: 250us, 500ms, 30s, 2m. The family's reference run on RabbitMQ:\n"
        "  acemq-load --url amqp://guest:guest@127.0.0.1:5672/ --rate 2000 --size 512 --publishers 2 \\\n"
        "             --consumers 4 --prefetch 100 --duration 30s\n";
    return text;
}

}  // namespace load
