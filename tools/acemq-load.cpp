// acemq-load: an open-loop load generator for any bus URL (docs/load.md has every option,
// the verdicts and the JSON report). One process publishes and consumes, so the due time a
// message carries in its body (steady-clock nanoseconds) means the same to both ends.
#include <sys/prctl.h>
#include <unistd.h>

#include <acemq/acemq.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "histogram.hpp"
#include "options.hpp"

namespace {

using load::Histogram;
using load::Options;
using SteadyClock = std::chrono::steady_clock;

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch()).count();
}

void sleep_until_ns(std::int64_t when) {
    std::this_thread::sleep_until(SteadyClock::time_point(std::chrono::nanoseconds(when)));
}

// What the run measured; publishers and handlers write it, the progress line reads it.
struct Tally {
    Histogram end_to_end, confirm, send_lag;
    std::atomic<std::uint64_t> published{0}, refused{0}, consumed{0}, failed{0}, dead_lettered{0}, foreign{0};
    std::mutex mutex;
    std::string first_refusal;  // guarded by mutex

    void refuse(std::uint64_t count, const std::string& why) {
        refused += count;
        const std::lock_guard lock(mutex);
        if (first_refusal.empty()) first_refusal = why;
    }
};

// The schedule: message n is due at start + n/rate, whatever happened to n-1.
struct Schedule {
    std::int64_t start = 0;
    std::int64_t measured_from = 0;  // the end of the warm-up
    std::uint64_t total = 0;
    double rate = 0;

    std::int64_t due(std::uint64_t n) const {
        return start + static_cast<std::int64_t>(static_cast<double>(n) * 1e9 / rate + 0.5);
    }
    bool measured(std::int64_t due_ns) const { return due_ns >= measured_from; }
};

acemq::Bytes body_of(std::int64_t due, std::uint64_t sequence, std::size_t size) {
    acemq::Bytes body(size);
    std::memcpy(body.data(), &due, sizeof due);
    std::memcpy(body.data() + sizeof due, &sequence, sizeof sequence);
    return body;
}

// One sender of a publisher thread's window: it takes the next message of that thread's
// share (every `publishers`-th), waits for its due time and sends it, then takes the next.
// Publisher::send returns once the broker confirmed, so a window of W publishes in flight is
// W senders; when all are waiting for confirms, the next message goes out late and the
// lateness shows as send lag, never as a slower schedule.
void send_share(const acemq::Publisher& publisher, const Schedule& schedule, const Options& options,
                std::atomic<std::uint64_t>& next, Tally& tally) {
    // Linux lets a sleep overrun by 50 us by default; a generator that wakes late reports
    // its own lateness as the bus's, so this thread asks for the least slack.
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    const auto stride = static_cast<std::uint64_t>(options.publishers);
    for (std::uint64_t n = next.fetch_add(stride); n < schedule.total; n = next.fetch_add(stride)) {
        const std::int64_t due = schedule.due(n);
        if (due > now_ns()) sleep_until_ns(due);
        const acemq::Bytes body = body_of(due, n, options.size);
        const std::int64_t sent = now_ns();
        bool confirmed = true;
        try {
            publisher.send(body);
        } catch (const std::exception& error) {
            // A PublishError, or the transport failing under the send: either way the message
            // is not known to be confirmed, and the run goes on to show what follows.
            confirmed = false;
            tally.refuse(1, error.what());
        }
        const std::int64_t done = now_ns();
        if (confirmed) ++tally.published;
        if (!schedule.measured(due)) continue;
        tally.send_lag.record(static_cast<std::uint64_t>(sent - due));
        if (confirmed) tally.confirm.record(static_cast<std::uint64_t>(done - sent));
    }
}

// A publisher thread: its window of senders over its share of the schedule.
void publish(const acemq::Publisher& publisher, const Schedule& schedule, const Options& options, std::uint64_t first,
             Tally& tally) {
    std::atomic<std::uint64_t> next{first};
    std::vector<std::thread> senders;
    for (std::size_t i = 0; i < options.window; ++i)
        senders.emplace_back(send_share, std::cref(publisher), std::cref(schedule), std::cref(options), std::ref(next),
                             std::ref(tally));
    for (std::thread& sender : senders) sender.join();
}

class LoadHandler {
public:
    LoadHandler(const Options& options, const Schedule& schedule, Tally& tally)
        : options_(options), schedule_(schedule), tally_(tally) {}

    acemq::Ack operator()(const acemq::RawMessage& message) const {
        const std::int64_t started = now_ns();
        if (message.payload.size() < load::header_bytes) {
            ++tally_.foreign;  // not one of ours; the queue is ours, so someone else published it
            return acemq::accept();
        }
        std::int64_t due = 0;
        std::memcpy(&due, message.payload.data(), sizeof due);
        // A retried message's due time is its first one: only a first delivery measures the path.
        if (message.envelope.attempt == 1 && schedule_.measured(due))
            tally_.end_to_end.record(static_cast<std::uint64_t>(std::max<std::int64_t>(0, started - due)));
        if (options_.handler_time > load::Nanos::zero()) std::this_thread::sleep_for(options_.handler_time);
        if (options_.failure_rate > 0 && fails()) {
            ++tally_.failed;
            if (message.envelope.attempt >= options_.attempts) ++tally_.dead_lettered;
            throw std::runtime_error("acemq-load: this handler call fails, as --failure-rate asks");
        }
        ++tally_.consumed;
        return acemq::accept();
    }

private:
    bool fails() const {
        thread_local std::minstd_rand random{std::random_device{}()};
        return std::uniform_real_distribution<double>(0, 1)(random) < options_.failure_rate;
    }

    const Options& options_;
    const Schedule& schedule_;
    Tally& tally_;
};

const char* queue_type_name(const Options& options) {
    return options.queue_type == load::QueueKind::quorum ? "quorum" : "classic";
}

std::string millis(std::uint64_t nanos) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", static_cast<double>(nanos) / 1e6);
    return text;
}

std::string micros(std::uint64_t nanos) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", static_cast<double>(nanos) / 1e3);
    return text;
}

// A rate, to one decimal: "1999.8".
std::string number_text(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", value);
    return text;
}

std::string seconds(load::Nanos duration) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", std::chrono::duration<double>(duration).count());
    return text;
}

// The rates since the last line, the end-to-end p99 so far and the queue's depth. On a
// terminal, one line rewritten in place every second; with --progress, a whole line every
// --progress-every wherever standard error goes (a terminal too), so that a log or a CI job
// shows how a long run is going; neither, nothing.
class Progress {
public:
    Progress(acemq::Bus& bus, const Options& options, const Schedule& schedule, Tally& tally)
        : bus_(bus), options_(options), schedule_(schedule), tally_(tally) {
        if (options.progress || isatty(STDERR_FILENO)) thread_ = std::thread([this] { run(); });
    }
    ~Progress() { stop(); }

    void stop() {
        {
            const std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        if (!thread_.joinable()) return;
        thread_.join();
        if (!options_.progress) std::fputc('\n', stderr);
    }

private:
    void run() {
        const auto every = options_.progress
                               ? std::chrono::duration_cast<std::chrono::milliseconds>(options_.progress_every)
                               : std::chrono::milliseconds(1000);
        const double every_seconds = std::chrono::duration<double>(every).count();
        std::uint64_t published = 0, consumed = 0;
        std::unique_lock lock(mutex_);
        while (!wake_.wait_for(lock, every, [this] { return stopping_; })) {
            const std::uint64_t now_published = tally_.published, now_consumed = tally_.consumed;
            const double elapsed = static_cast<double>(now_ns() - schedule_.start) / 1e9;
            std::string depth = "?";
            try {
                depth = std::to_string(bus_.transport().queue_depth(options_.queue));
            } catch (const std::exception&) {  // the line shows "?": a depth that cannot be read now is no failure
            }
            const bool warming = now_ns() < schedule_.measured_from;
            std::fprintf(stderr, "%s%7.1f s %s published %6.0f/s consumed %6.0f/s e2e p99 %s ms depth %s%s",
                         options_.progress ? "acemq-load: " : "\r", elapsed, warming ? "warm-up" : "measure",
                         static_cast<double>(now_published - published) / every_seconds,
                         static_cast<double>(now_consumed - consumed) / every_seconds,
                         warming ? "-" : millis(tally_.end_to_end.percentile(99)).c_str(), depth.c_str(),
                         options_.progress ? "\n" : "   ");
            std::fflush(stderr);
            published = now_published;
            consumed = now_consumed;
        }
    }

    acemq::Bus& bus_;
    const Options& options_;
    const Schedule& schedule_;
    Tally& tally_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

struct Verdict {
    const char* rule;
    const char* severity;  // "invalid": the figures cannot be trusted; "failed": the bus fell short
    bool passed;
    std::string observation;
    std::string advice{};  // what to change, for a verdict that did not pass
};

struct Outcome {
    std::string started_at;
    double publish_seconds = 0, run_seconds = 0;
    std::uint64_t depth_at_end = 0, dead_letter_depth = 0;
    std::vector<Verdict> verdicts;
    bool valid = true, passed = true;
};

std::vector<Verdict> judge(const Options& options, Tally& tally, std::uint64_t offered) {
    std::vector<Verdict> verdicts;
    const std::uint64_t lag_p99 = tally.send_lag.percentile(99);
    const auto bound = static_cast<std::uint64_t>(options.lag_bound.count());
    verdicts.push_back({"generator-kept-up", "invalid", tally.send_lag.count() > 0 && lag_p99 <= bound,
                        "send lag p99 " + millis(lag_p99) + " ms, bound " + millis(bound) + " ms",
                        "the senders could not start each publish on time, so the latencies measured a generator "
                        "that fell behind: offer fewer messages a second (--rate below " +
                            number_text(options.rate) + "), send from more publisher threads (--publishers above " +
                            std::to_string(options.publishers) + ") or with a wider window (--window above " +
                            std::to_string(options.window) + "), or accept more lag (a looser --lag-bound than " +
                            millis(bound) + " ms)"});
    std::string refusals = std::to_string(tally.refused) + " of " + std::to_string(offered) + " publishes refused";
    if (tally.refused > 0) refusals += "; the first: " + tally.first_refusal;
    verdicts.push_back({"no-publish-refused", "failed", tally.refused == 0, refusals,
                        "the broker refused publishes (the first refusal says why): offer fewer messages a second, "
                        "or give the broker room (a consumer, a larger --max-data-bytes)"});
    const bool by_confirm = options.consumers == 0;
    const std::uint64_t samples = by_confirm ? tally.confirm.count() : tally.end_to_end.count();
    verdicts.push_back({"ran-long-enough", "invalid", samples >= options.min_samples,
                        std::to_string(samples) + (by_confirm ? " confirm" : " end-to-end") +
                            " samples after the warm-up, at least " + std::to_string(options.min_samples) + " wanted",
                        "too few samples for a p99.9: run longer (--duration above " + seconds(options.duration) +
                            " s) or at a higher --rate, or ask for fewer (--min-samples)"});
    if (options.consumers > 0) {
        const std::uint64_t handled = tally.consumed + tally.dead_lettered;
        verdicts.push_back(
            {"all-handled", "failed", handled == tally.published,
             std::to_string(tally.published) + " published, " + std::to_string(tally.consumed) + " consumed, " +
                 std::to_string(tally.dead_lettered) + " dead-lettered" +
                 (handled < tally.published ? ", " + std::to_string(tally.published - handled) +
                                                  " not handled within the drain of " + seconds(options.drain) + " s"
                                            : ""),
             "the consumer did not keep up: more handler threads (--consumers), a larger --prefetch, a longer "
             "--drain, or fewer messages a second"});
    }
    return verdicts;
}

std::string histogram_json(const Histogram& h) {
    std::ostringstream out;
    out << "{\"count\": " << h.count() << ", \"minMicros\": " << micros(h.min())
        << ", \"p50Micros\": " << micros(h.percentile(50)) << ", \"p90Micros\": " << micros(h.percentile(90))
        << ", \"p99Micros\": " << micros(h.percentile(99)) << ", \"p999Micros\": " << micros(h.percentile(99.9))
        << ", \"maxMicros\": " << micros(h.max()) << "}";
    return out.str();
}

std::string report_json(const Options& options, Tally& tally, const Schedule& schedule, const Outcome& outcome) {
    std::ostringstream out;
    out << "{\n  \"tool\": \"acemq-load\",\n  \"url\": " << acemq::json_quoted(acemq::redacted_url(options.url))
        << ",\n  \"startedAt\": " << acemq::json_quoted(outcome.started_at)
        << ",\n  \"options\": {\"queue\": " << acemq::json_quoted(options.queue) << ", \"queueType\": \""
        << queue_type_name(options) << "\", \"rate\": " << options.rate << ", \"size\": " << options.size
        << ", \"publishers\": " << options.publishers << ", \"window\": " << options.window
        << ", \"consumers\": " << options.consumers << ", \"prefetch\": " << options.prefetch
        << ", \"handlerTimeSeconds\": " << seconds(options.handler_time)
        << ", \"failureRate\": " << options.failure_rate << ", \"attempts\": " << options.attempts
        << ", \"retryDelaySeconds\": " << seconds(options.retry_delay)
        << ", \"lagBoundSeconds\": " << seconds(options.lag_bound) << ", \"minSamples\": " << options.min_samples
        << "},\n  \"durationSeconds\": " << seconds(options.duration)
        << ",\n  \"warmupSeconds\": " << seconds(options.warmup) << ",\n  \"offeredTotal\": " << schedule.total
        << ",\n  \"publishedTotal\": " << tally.published << ",\n  \"refusedTotal\": " << tally.refused
        << ",\n  \"consumedTotal\": " << tally.consumed << ",\n  \"failedTotal\": " << tally.failed
        << ",\n  \"deadLetteredTotal\": " << tally.dead_lettered << ",\n  \"foreignTotal\": " << tally.foreign
        << ",\n  \"offeredRatePerSecond\": " << options.rate
        << ",\n  \"publishRatePerSecond\": " << static_cast<double>(tally.published) / outcome.publish_seconds
        << ",\n  \"consumeRatePerSecond\": " << static_cast<double>(tally.consumed) / outcome.run_seconds
        << ",\n  \"queueDepthAtEnd\": " << outcome.depth_at_end
        << ",\n  \"deadLetterDepthAtEnd\": " << outcome.dead_letter_depth
        << ",\n  \"endToEnd\": " << histogram_json(tally.end_to_end)
        << ",\n  \"confirm\": " << histogram_json(tally.confirm)
        << ",\n  \"sendLag\": " << histogram_json(tally.send_lag)
        << ",\n  \"firstRefusal\": " << (tally.first_refusal.empty() ? "null" : acemq::json_quoted(tally.first_refusal))
        << ",\n  \"verdicts\": [";
    for (std::size_t i = 0; i < outcome.verdicts.size(); ++i) {
        const Verdict& v = outcome.verdicts[i];
        out << (i ? ",\n" : "\n") << "    {\"rule\": \"" << v.rule << "\", \"severity\": \"" << v.severity
            << "\", \"passed\": " << (v.passed ? "true" : "false")
            << ", \"observation\": " << acemq::json_quoted(v.observation);
        if (!v.passed) out << ", \"advice\": " << acemq::json_quoted(v.advice);
        out << "}";
    }
    out << "\n  ],\n  \"valid\": " << (outcome.valid ? "true" : "false")
        << ",\n  \"passed\": " << (outcome.passed ? "true" : "false") << "\n}\n";
    return out.str();
}

std::string report_text(const Options& options, Tally& tally, const Schedule& schedule, const Outcome& outcome) {
    std::ostringstream out;
    char line[200];
    out << "acemq-load: " << acemq::redacted_url(options.url) << ", " << queue_type_name(options) << " queue "
        << options.queue << ", " << options.rate << " msg/s of " << options.size << " B, " << options.publishers
        << " publisher thread(s) (window " << options.window << "), " << options.consumers << " consumer(s) (prefetch "
        << options.prefetch << "), " << seconds(options.duration) << " s after a " << seconds(options.warmup)
        << " s warm-up\n";
    out << "offered " << schedule.total << ", published " << tally.published << ", refused " << tally.refused
        << ", consumed " << tally.consumed << ", failed " << tally.failed << ", dead-lettered " << tally.dead_lettered
        << "; queue depth when publishing ended " << outcome.depth_at_end << ", in .dlq " << outcome.dead_letter_depth
        << "\n";
    std::snprintf(line, sizeof line, "%-11s %9s %9s %9s %9s %9s %9s  (ms)\n", "", "samples", "p50", "p90", "p99",
                  "p99.9", "max");
    out << line;
    const std::pair<const char*, const Histogram*> rows[] = {
        {"end-to-end", &tally.end_to_end}, {"confirm", &tally.confirm}, {"send lag", &tally.send_lag}};
    for (const auto& [name, h] : rows) {
        std::snprintf(line, sizeof line, "%-11s %9llu %9s %9s %9s %9s %9s\n", name,
                      static_cast<unsigned long long>(h->count()), millis(h->percentile(50)).c_str(),
                      millis(h->percentile(90)).c_str(), millis(h->percentile(99)).c_str(),
                      millis(h->percentile(99.9)).c_str(), millis(h->max()).c_str());
        out << line;
    }
    out << "rates: offered " << number_text(options.rate) << " msg/s, published "
        << number_text(static_cast<double>(tally.published) / outcome.publish_seconds) << " msg/s, consumed "
        << number_text(static_cast<double>(tally.consumed) / outcome.run_seconds) << " msg/s\n";
    for (const Verdict& v : outcome.verdicts) {
        out << (v.passed ? "  ok    " : (std::strcmp(v.severity, "invalid") == 0 ? "  INVALID " : "  FAILED  "))
            << v.rule << ": " << v.observation << "\n";
        if (!v.passed) out << "          what to change: " << v.advice << "\n";
    }
    out << (!outcome.valid ? "INVALID" : outcome.passed ? "PASSED" : "FAILED") << "\n";
    return out.str();
}

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    gmtime_r(&now, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return text;
}

int run(const Options& options) {
    acemq::Bus bus = acemq::connect(options.url, {.origin = "acemq-load"});
    acemq::Transport& transport = bus.transport();
    const std::string dlq = options.queue + ".dlq", parked = options.queue + ".parked";
    // Earlier runs' messages would carry another process's due times: start empty.
    for (const std::string& queue : {options.queue, dlq, parked}) transport.delete_queue(queue);
    const acemq::RetryPolicy policy =
        options.attempts > 1
            ? acemq::fixed_retry(options.attempts,
                                 std::chrono::duration_cast<std::chrono::milliseconds>(options.retry_delay))
            : acemq::no_retry();
    bus.declare(acemq::Topology{}.queue(
        options.queue, {.dead_letter = true,
                        .retry = options.attempts > 1 ? std::optional(policy) : std::nullopt,
                        .type = options.queue_type == load::QueueKind::quorum ? acemq::QueueType::quorum
                                                                              : acemq::QueueType::classic}));

    Tally tally;
    Schedule schedule;
    schedule.rate = options.rate;
    const double planned = std::chrono::duration<double>(options.warmup + options.duration).count();
    schedule.total = static_cast<std::uint64_t>(std::ceil(planned * options.rate));
    Outcome outcome;
    outcome.started_at = utc_now();
    // Fixed before any handler can read it, with a moment for the consumer and the senders
    // to start before the first message falls due.
    schedule.start = now_ns() + 200'000'000;
    schedule.measured_from = schedule.start + options.warmup.count();

    std::optional<acemq::Consumer> consumer;
    if (options.consumers > 0)
        consumer.emplace(
            bus.consume_raw(options.queue, LoadHandler(options, schedule, tally),
                            {.retry = policy, .prefetch = options.prefetch, .concurrency = options.consumers}));
    const acemq::Publisher publisher =
        bus.publisher_to_queue(options.queue, {.codec = std::make_shared<acemq::BytesCodec>()});

    Progress progress(bus, options, schedule, tally);
    std::vector<std::thread> publishers;
    for (int i = 0; i < options.publishers; ++i)
        publishers.emplace_back(publish, std::cref(publisher), std::cref(schedule), std::cref(options),
                                static_cast<std::uint64_t>(i), std::ref(tally));
    for (std::thread& thread : publishers) thread.join();
    const std::int64_t published_at = now_ns();
    outcome.depth_at_end = transport.queue_depth(options.queue);
    if (consumer) {
        const std::int64_t deadline = published_at + options.drain.count();
        while (tally.consumed + tally.dead_lettered < tally.published && now_ns() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        consumer->close();
    }
    const std::int64_t finished_at = now_ns();
    progress.stop();
    outcome.publish_seconds = static_cast<double>(published_at - schedule.start) / 1e9;
    outcome.run_seconds = static_cast<double>(finished_at - schedule.start) / 1e9;
    outcome.dead_letter_depth = transport.queue_depth(dlq);
    if (!options.keep_queue)
        for (const std::string& queue : {options.queue, dlq, parked}) transport.delete_queue(queue);
    bus.close();

    outcome.verdicts = judge(options, tally, schedule.total);
    for (const Verdict& v : outcome.verdicts) {
        if (v.passed) continue;
        outcome.passed = false;
        if (std::strcmp(v.severity, "invalid") == 0) outcome.valid = false;
    }
    const std::string text = report_text(options, tally, schedule, outcome);
    if (options.json) {
        const std::string json = report_json(options, tally, schedule, outcome);
        if (*options.json == "-") {
            std::cout << json;
            std::cerr << text;
        } else {
            std::ofstream file(*options.json);
            file << json;
            if (!file.flush()) throw std::runtime_error("acemq-load: cannot write the JSON report to " + *options.json);
            std::cout << text;
        }
    } else {
        std::cout << text;
    }
    return !outcome.valid ? 2 : outcome.passed ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    Options options;
    try {
        options = load::parse_options(argc, argv);
    } catch (const load::UsageProblem& problem) {
        std::fprintf(stderr, "%s\n", problem.what());
        return 3;
    }
    if (options.help) {
        std::cout << load::help_text();
        return 0;
    }
    try {
        return run(options);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "acemq-load: the run could not be made: %s\n", error.what());
        return 4;
    }
}
