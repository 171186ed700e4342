// Request/reply through acemq's Requester and serve() (<acemq/request_reply.hpp>), side by
// side with what a C++ team would compare it with, in one run. Every side echoes a 64 B
// body: the responder sends back what it was asked, on a connection of its own.
//   raw zmq  cppzmq by hand: a DEALER asking a ROUTER thread over tcp://127.0.0.1 that sends
//            each request back (zmq_bench's row (b), bench/raw_zmq.hpp): the floor.
//   NATS     libnats against a nats-server at $ACEMQ_BENCH_NATS_URL (bench/run starts one on
//            loopback), each publish sent at once (natsOptions_SetSendAsap, its low-latency
//            setting): natsConnection_Request for one call at a time; for many in flight,
//            publishes whose reply subjects share one wildcard inbox subscription (what
//            natsConnection_Request does inside; libnats has no asynchronous request call).
//   acemq    a Requester on one Bus and serve() on another, both on the same broker:
//            inproc (the embedded broker, in this process), zmq (an acemq-broker process at
//            $ACEMQ_BENCH_ZMQ_URL, which bench/run starts, over tcp://127.0.0.1) and amqp
//            (RabbitMQ at $ACEMQ_TEST_AMQP_URL). ask() for one call at a time, ask_async()
//            futures for many in flight; each request is confirmed by the broker before
//            ask_async returns, as the API promises, so a window's calls are sent one confirm
//            apart. The responder's consumer keeps the bus's prefetch (20) and one worker.
// For each side: calls/s with one call in flight; calls/s with 64 kept in flight (a new call
// as the oldest one's reply arrives, the median of 3 runs); p50 and p99 of one call.
// Recorded ratios: each acemq transport's figure against raw zmq's and against NATS's. A
// server that is not there leaves its rows out and says why; only a failure of acemq's own
// rows fails the bench. Figures only, never asserted on.
//
//   build/bench/request_reply_bench [--quick]   (or ACEMQ_BENCH_QUICK=1: a tenth of the calls, one run)
//
// Alone, it measures raw zmq and inproc; the other sides need the servers bench/run starts, e.g.
//   build/tools/acemq-broker --listen tcp://127.0.0.1:5680 & nats-server -a 127.0.0.1 -p 4222 &
//   ACEMQ_BENCH_ZMQ_URL=zmq+tcp://127.0.0.1:5680 ACEMQ_BENCH_NATS_URL=nats://127.0.0.1:4222 build/bench/request_reply_bench
#include <acemq/acemq.hpp>
#include <acemq/request_reply.hpp>

#include <zmq.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "measure.hpp"
#include "nats_client.hpp"
#include "raw_zmq.hpp"

using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t payload_bytes = 64;
constexpr int window = 64;  // calls kept in flight
constexpr auto reply_timeout = std::chrono::milliseconds(bench::raw_zmq::peer_timeout_ms);

struct Sizes {
    int runs;        // of each many-in-flight figure, the median reported
    int one_by_one;  // calls, one in flight: calls/s, p50, p99
    int in_flight;   // calls per run, `window` in flight
    int warm_up;     // calls before the timed ones
};

constexpr Sizes full_sizes{3, 2'000, 10'000, 200};
constexpr Sizes quick_sizes{1, 200, 1'000, 20};

double seconds(Clock::duration elapsed) { return std::chrono::duration<double>(elapsed).count(); }
double micros(Clock::duration elapsed) { return std::chrono::duration<double, std::micro>(elapsed).count(); }

struct Figures {
    double one_in_flight;   // calls/s
    double many_in_flight;  // calls/s, `window` in flight
    double p50_us, p99_us;  // of one call, one in flight
};

// A side's figures. `call` makes one call and waits for its reply; `start` sends one and
// `finish` waits for the reply to the oldest call not yet finished.
template <class Call, class Start, class Finish>
Figures measure(const Sizes& sizes, Call call, Start start, Finish finish) {
    for (int i = 0; i < sizes.warm_up; ++i) call();
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(sizes.one_by_one));
    const auto began = Clock::now();
    for (int i = 0; i < sizes.one_by_one; ++i) {
        const auto sent = Clock::now();
        call();
        samples.push_back(micros(Clock::now() - sent));
    }
    Figures figures{};
    figures.one_in_flight = sizes.one_by_one / seconds(Clock::now() - began);
    figures.p50_us = bench::percentile(samples, 0.50);
    figures.p99_us = bench::percentile(samples, 0.99);
    std::vector<double> runs;
    for (int run = 0; run < sizes.runs; ++run) {
        const auto run_began = Clock::now();
        int started = 0;
        for (; started < window && started < sizes.in_flight; ++started) start();
        for (int finished = 0; finished < sizes.in_flight; ++finished) {
            finish();
            if (started < sizes.in_flight) {
                start();
                ++started;
            }
        }
        runs.push_back(sizes.in_flight / seconds(Clock::now() - run_began));
    }
    figures.many_in_flight = bench::median(std::move(runs));
    return figures;
}

// A side's figures, or why there are none.
struct Outcome {
    std::optional<Figures> figures;
    std::string missing;
};

// ---- raw zmq --------------------------------------------------------------------------------

Figures through_raw_zmq(const Sizes& sizes) {
    zmq::context_t context;
    bench::raw_zmq::Echo echo(context, "tcp://127.0.0.1:*");
    const acemq::Bytes payload(payload_bytes, std::byte{'x'});
    const Figures figures = measure(
        sizes,
        [&] {
            echo.send(payload);
            echo.receive();
        },
        [&] { echo.send(payload); }, [&] { echo.receive(); });
    echo.close();
    return figures;
}

// ---- NATS -----------------------------------------------------------------------------------

constexpr const char* nats_subject = "acemq.bench.request_reply";

#if ACEMQ_BENCH_NATS

using bench::nats::ok;
using NatsConnection = bench::nats::Connection;
using NatsSubscription = bench::nats::Subscription;

NatsSubscription nats_subscribe(natsConnection* connection, const std::string& subject, natsMsgHandler handler,
                                void* closure) {
    natsSubscription* subscription = nullptr;
    ok(natsConnection_Subscribe(&subscription, connection, subject.c_str(), handler, closure),
       "subscribing to " + subject);
    // Once flushed, the server has the subscription: the first request finds it.
    ok(natsConnection_Flush(connection), "flushing the subscription to " + subject);
    return NatsSubscription(subscription);
}

// The responder: sends each request's body back to its reply subject, on libnats's thread
// for the subscription.
class NatsEcho {
public:
    explicit NatsEcho(const std::string& url)
        : connection_(bench::nats::connect(url, true)),
          subscription_(nats_subscribe(connection_.get(), nats_subject, answer, nullptr)) {}

private:
    static void answer(natsConnection* connection, natsSubscription*, natsMsg* request, void*) {
        // A failed publish has no one to tell here: the caller's wait for it runs out and says so.
        natsConnection_Publish(connection, natsMsg_GetReply(request), natsMsg_GetData(request),
                               natsMsg_GetDataLength(request));
        natsMsg_Destroy(request);
    }

    NatsConnection connection_;
    NatsSubscription subscription_;  // after the connection: unsubscribed before it closes
};

// The caller: natsConnection_Request for one call; for many, requests whose reply subjects
// (INBOX.1, INBOX.2, ...) one wildcard subscription receives, counted as they arrive.
class NatsRequester {
public:
    explicit NatsRequester(const std::string& url)
        : connection_(bench::nats::connect(url, true)), body_(payload_bytes, 'x') {
        natsInbox* inbox = nullptr;
        ok(natsInbox_Create(&inbox), "making an inbox");
        inbox_ = inbox;
        natsInbox_Destroy(inbox);
        replies_subscription_ = nats_subscribe(connection_.get(), inbox_ + ".*", arrived, this);
    }

    void call() {
        natsMsg* reply = nullptr;
        ok(natsConnection_Request(&reply, connection_.get(), nats_subject, body_.data(), static_cast<int>(body_.size()),
                                  reply_timeout.count()),
           "a request");
        natsMsg_Destroy(reply);
    }

    void start() {
        const std::string reply_to = inbox_ + "." + std::to_string(++sent_);
        ok(natsConnection_PublishRequest(connection_.get(), nats_subject, reply_to.c_str(), body_.data(),
                                         static_cast<int>(body_.size())),
           "an asynchronous request");
    }

    void finish() {
        std::unique_lock lock(mutex_);
        if (!replied_.wait_for(lock, reply_timeout, [this] { return replies_ > finished_; }))
            throw std::runtime_error("NATS: no reply within " + std::to_string(reply_timeout.count()) +
                                     " ms to an asynchronous request");
        ++finished_;
    }

private:
    static void arrived(natsConnection*, natsSubscription*, natsMsg* reply, void* closure) {
        natsMsg_Destroy(reply);
        auto* self = static_cast<NatsRequester*>(closure);
        {
            std::lock_guard lock(self->mutex_);
            ++self->replies_;
        }
        self->replied_.notify_one();
    }

    NatsConnection connection_;
    std::string body_;
    std::string inbox_;
    std::uint64_t sent_ = 0;
    std::mutex mutex_;
    std::condition_variable replied_;
    std::uint64_t replies_ = 0;              // under mutex_
    std::uint64_t finished_ = 0;             // under mutex_
    NatsSubscription replies_subscription_;  // last: unsubscribed before what `arrived` touches goes
};

Outcome through_nats(const Sizes& sizes) {
    const char* url = std::getenv("ACEMQ_BENCH_NATS_URL");
    if (url == nullptr || *url == '\0')
        return {std::nullopt,
                "ACEMQ_BENCH_NATS_URL is not set: bench/run sets it to the nats-server it starts, when Debian's "
                "nats-server is installed (scripts/setup --servers installs it)"};
    try {
        const NatsEcho echo(url);
        NatsRequester requester(url);
        return {measure(
                    sizes, [&] { requester.call(); }, [&] { requester.start(); }, [&] { requester.finish(); }),
                ""};
    } catch (const std::exception& error) {
        return {std::nullopt, std::string("NATS at ") + acemq::redacted_url(url) + " failed: " + error.what()};
    }
}

#else

Outcome through_nats(const Sizes&) { return {std::nullopt, bench::nats::missing_from_build}; }

#endif

// ---- acemq ----------------------------------------------------------------------------------

struct Echoed {
    std::string body;
};

const std::string acemq_queue = "acemq.bench.request_reply";

// A Requester on one bus asking a responder served on another, both on `url`.
Figures through_acemq(const std::string& url, const Sizes& sizes) {
    acemq::Bus serving = acemq::connect(url, {.origin = "request_reply_bench@responder"});
    acemq::Bus asking = acemq::connect(url, {.origin = "request_reply_bench@requester"});
    // With dead letters, as serve() asks, for requests it sets aside (none here).
    serving.declare(acemq::Topology{}.queue(
        acemq_queue, {.dead_letter = true, .type = acemq::QueueType::classic, .durable = false}));
    acemq::Responder responder = acemq::serve<Echoed>(
        serving, acemq_queue, [](const acemq::Message<Echoed>& request) { return request.payload; });
    acemq::Requester requester(asking, "", acemq_queue, {.timeout = reply_timeout});
    const Echoed request{std::string(payload_bytes, 'x')};
    std::deque<std::future<Echoed>> waiting;
    const Figures figures = measure(
        sizes, [&] { bench::keep(requester.ask<Echoed>(request)); },
        [&] { waiting.push_back(requester.ask_async<Echoed>(request)); },
        [&] {
            bench::keep(waiting.front().get());
            waiting.pop_front();
        });
    requester.close();
    responder.close();
    for (const std::string& queue : {acemq_queue, acemq_queue + ".dlq", acemq_queue + ".parked"})
        serving.transport().delete_queue(queue);
    asking.close();
    serving.close();
    return figures;
}

// For a broker elsewhere: nothing, and why, when `variable` names none or it cannot be
// reached; a failure once connected is acemq's own and goes on up.
Outcome through_acemq_at(const char* variable, const std::string& how_to_get_one, const Sizes& sizes) {
    const char* url = std::getenv(variable);
    if (url == nullptr || *url == '\0') return {std::nullopt, std::string(variable) + " is not set: " + how_to_get_one};
    try {
        acemq::connect(url, {.origin = "request_reply_bench@probe"}).close();
    } catch (const acemq::Error& error) {
        return {std::nullopt, std::string("no broker to use at ") + acemq::redacted_url(url) + ": " + error.what()};
    }
    return {through_acemq(url, sizes), ""};
}

// ---- the table ------------------------------------------------------------------------------

struct Side {
    std::string label;  // in this bench's own table
    std::string name;   // in the recorded rows
    std::string tag;    // in its ratio lines
    Outcome outcome;
};

void print_side(const Side& side) {
    if (!side.outcome.figures) {
        std::printf("  %-40s missing: %s\n", side.label.c_str(), side.outcome.missing.c_str());
        return;
    }
    const Figures& figures = *side.outcome.figures;
    std::printf("  %-40s %12.0f %12.0f %10.1f %10.1f\n", side.label.c_str(), figures.one_in_flight,
                figures.many_in_flight, figures.p50_us, figures.p99_us);
}

void print_ratios(const Side& ours, const Side& against) {
    if (!ours.outcome.figures || !against.outcome.figures) return;
    const Figures& a = *ours.outcome.figures;
    const Figures& b = *against.outcome.figures;
    const std::string what = ours.tag + " / " + against.tag;
    std::printf("  %-40s %12.3f %12.3f %10.3f %10.3f\n", what.c_str(), a.one_in_flight / b.one_in_flight,
                a.many_in_flight / b.many_in_flight, a.p50_us / b.p50_us, a.p99_us / b.p99_us);
}

void record_against(const Side& ours, const Side& against, const std::string& against_name) {
    if (!ours.outcome.figures || !against.outcome.figures) return;
    const Figures& a = *ours.outcome.figures;
    const Figures& b = *against.outcome.figures;
    const auto row = [&](const std::string& what, double mine, double theirs, const char* unit, bench::Better better) {
        bench::record({.name = "request/reply, " + what + ", " + ours.name,
                       .ours = mine,
                       .against = against_name,
                       .underneath = theirs,
                       .unit = unit,
                       .better = better});
    };
    row("calls/s with 1 in flight", a.one_in_flight, b.one_in_flight, "calls/s", bench::Better::higher);
    row("calls/s with 64 in flight", a.many_in_flight, b.many_in_flight, "calls/s", bench::Better::higher);
    row("one call p50", a.p50_us, b.p50_us, "us", bench::Better::lower);
    row("one call p99", a.p99_us, b.p99_us, "us", bench::Better::lower);
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = bench::quick_from_command_line(argc, argv);
    const Sizes& sizes = quick ? quick_sizes : full_sizes;
    std::printf("%s: %zu B echoed; %d calls one at a time, then %d with %d in flight (the median of %d run(s))\n",
                quick ? "quick" : "full", payload_bytes, sizes.one_by_one, sizes.in_flight, window, sizes.runs);
    std::fflush(stdout);
    try {
        const Side raw{"raw cppzmq DEALER/ROUTER, tcp://", "", "raw zmq", {through_raw_zmq(sizes), ""}};
        const Side nats{"NATS, " + bench::nats::client(), "", "NATS", through_nats(sizes)};
        const std::vector<Side> acemq{
            {"acemq inproc", "inproc", "inproc", {through_acemq("inproc://request-reply-bench", sizes), ""}},
            {"acemq zmq, acemq-broker process", "zmq (acemq-broker process, tcp://)", "zmq",
             through_acemq_at("ACEMQ_BENCH_ZMQ_URL",
                              "bench/run starts an acemq-broker and sets it (zmq+tcp://127.0.0.1:PORT)", sizes)},
            {"acemq amqp, RabbitMQ", "amqp (RabbitMQ)", "amqp",
             through_acemq_at("ACEMQ_TEST_AMQP_URL", "source scripts/servers.sh; start_rabbitmq sets it", sizes)},
        };
        std::printf("\n  %-40s %12s %12s %10s %10s\n", "", "calls/s", "calls/s", "p50 us", "p99 us");
        std::printf("  %-40s %12s %12s %10s %10s\n", "", "1 in flight", "64 in flight", "one call", "one call");
        print_side(raw);
        print_side(nats);
        for (const Side& side : acemq) print_side(side);
        std::printf("\n  %-40s %12s %12s %10s %10s\n", "ratios", "1 in flight", "64 in flight", "p50", "p99");
        print_ratios(nats, raw);
        for (const Side& side : acemq) {
            print_ratios(side, raw);
            print_ratios(side, nats);
        }
        for (const Side& side : acemq) {
            record_against(side, raw, "raw cppzmq DEALER/ROUTER echo, tcp://");
            record_against(side, nats, "NATS request/reply, " + bench::nats::client() + " on nats-server");
        }
    } catch (const std::exception& error) {
        std::fprintf(stderr, "request_reply_bench: %s\n", error.what());
        return 1;
    }
    bench::nats::close();
    return 0;
}
