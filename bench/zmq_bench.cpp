// The ZeroMQ transport side by side with cppzmq used by hand, and with the RabbitMQ
// transport, in one run. For payloads of 64 B and 1 KB, over ipc:// and tcp://127.0.0.1,
// each figure on an endpoint of its own (a fresh ipc path, a fresh tcp port):
//   (a) raw PUSH/PULL: N messages from a sender thread to a receiver thread, msg/s. No
//       confirms, no acks: the most these sockets carry, the limit for the rest.
//   (b) raw DEALER/ROUTER: one request at a time to a ROUTER thread that echoes it; p50 and
//       p99 of a round trip, and msg/s done that way.
//   (c) acemq::zmq::serve of an embedded broker in this process and acemq::zmq::open on
//       it: publish_batch in windows of 256, every publish confirmed, one consumer
//       (prefetch 256) acking each delivery, msg/s from the first publish to the last ack;
//       and single publish(), p50 and p99 of one confirmed publish (no consumer, as (b)).
//   (d) (c)'s throughput through acemq::amqp on $ACEMQ_TEST_AMQP_URL, a non-durable
//       classic queue; a missing URL or broker leaves the row out and says why.
// The ratios read against the aims: (c)/(a) >= 0.25, (c) p50 / (b) p50 <= 1.5, (c)/(d) > 1.
// Throughputs are the median of 3 runs. Messages are not persistent on either transport:
// the embedded broker keeps nothing on disk, so neither side is asked to. Figures only,
// never asserted on; another process busy on the same cores moves them by tens of percent.
//
//   build/bench/zmq_bench [--quick]     (or ACEMQ_BENCH_QUICK=1: a tenth of the work, one run)
//   build/bench/zmq_bench --profile-acked N
//       only (c)'s confirmed + acked loop, N messages of 64 B over ipc://, for a profiler
//       (perf record -g: client and broker threads in one profile; bench/README.md).
//
// A RabbitMQ for row (d): source scripts/servers.sh; start_rabbitmq (it sets the URL).
#include <unistd.h>

#include <acemq/amqp.hpp>
#include <acemq/inproc.hpp>
#include <acemq/transport.hpp>
#include <acemq/url.hpp>
#include <acemq/zmq.hpp>

#include <zmq.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "acker.hpp"
#include "measure.hpp"
#include "raw_zmq.hpp"

using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t window = 256;
constexpr std::uint16_t prefetch = 256;
constexpr auto drain_deadline = 60s;

struct Sizes {
    int runs;              // of each throughput, the median reported
    int stream_messages;   // (a)
    int round_trips;       // (b)
    int confirmed_acked;   // (c) and (d), per run
    int single_publishes;  // (c) latency
    int warm_up;           // round trips and single publishes before the timed ones
};

constexpr Sizes full_sizes{3, 200'000, 10'000, 20'000, 2'000, 200};
constexpr Sizes quick_sizes{1, 20'000, 1'000, 2'000, 300, 50};

double seconds(Clock::duration elapsed) { return std::chrono::duration<double>(elapsed).count(); }
double micros(Clock::duration elapsed) { return std::chrono::duration<double, std::micro>(elapsed).count(); }

using bench::median;
using bench::percentile;
using bench::raw_zmq::bound;
using bench::raw_zmq::connected;
using bench::raw_zmq::peer_timeout_ms;
using bench::raw_zmq::receive;
using bench::raw_zmq::send;
using bench::raw_zmq::Worker;

template <class Run>
double median_of_runs(int runs, Run&& run) {
    std::vector<double> figures;
    for (int i = 0; i < runs; ++i) figures.push_back(run());
    return median(std::move(figures));
}

// ---- endpoints ------------------------------------------------------------------------------

enum class Scheme { ipc, tcp };

// Hands out a bind address no earlier figure used: a new path in a directory of this run's
// own for ipc://, port `*` (the kernel's choice) for tcp://. The directory goes at the end.
class Endpoints {
public:
    Endpoints() {
        std::string pattern = (std::filesystem::temp_directory_path() / "acemq-zmq-bench.XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr)
            throw std::runtime_error("cannot make a directory for the ipc:// endpoints under " +
                                     std::filesystem::temp_directory_path().string() +
                                     ": set TMPDIR to a writable one");
        directory_ = pattern;
    }
    ~Endpoints() {
        std::error_code ignored;  // a leftover socket file in /tmp is no reason to fail the run
        std::filesystem::remove_all(directory_, ignored);
    }
    Endpoints(const Endpoints&) = delete;
    Endpoints& operator=(const Endpoints&) = delete;

    std::string fresh(Scheme scheme) {
        if (scheme == Scheme::tcp) return "tcp://127.0.0.1:*";
        return "ipc://" + (directory_ / (std::to_string(++made_) + ".sock")).string();
    }

private:
    std::filesystem::path directory_;
    int made_ = 0;
};

// ---- (a) and (b): cppzmq by hand ------------------------------------------------------------

// (a) msg/s of `count` messages PUSHed by one thread and PULLed by another. The first
// message, outside the timing, makes sure the connection is up before the clock starts.
double push_pull(zmq::context_t& context, const std::string& bind, const acemq::Bytes& payload, int count) {
    zmq::socket_t pull = bound(context, zmq::socket_type::pull, bind);
    zmq::socket_t push = connected(context, zmq::socket_type::push, pull.get(zmq::sockopt::last_endpoint));
    zmq::message_t message;
    send(push, payload, "PUSH/PULL, the first message");
    receive(pull, message, "PUSH/PULL, the first message");

    const auto start = Clock::now();
    Worker receiver([&] {
        zmq::message_t incoming;
        std::size_t bytes = 0;
        for (int i = 0; i < count; ++i) {
            receive(pull, incoming, "PUSH/PULL");
            bytes += incoming.size();
        }
        bench::keep(bytes);
    });
    Worker sender([&] {
        for (int i = 0; i < count; ++i) send(push, payload, "PUSH/PULL");
    });
    sender.join();
    receiver.join();
    return count / seconds(Clock::now() - start);
}

struct RoundTrips {
    double p50_us, p99_us, per_second;
};

// (b) One request at a time from a DEALER to a ROUTER thread that sends each back.
RoundTrips dealer_router(zmq::context_t& context, const std::string& bind, const acemq::Bytes& payload, int count,
                         int warm_up) {
    bench::raw_zmq::Echo echo(context, bind);
    (void)bench::raw_zmq::round_trip_micros(echo, payload, warm_up);
    const auto start = Clock::now();
    const std::vector<double> samples = bench::raw_zmq::round_trip_micros(echo, payload, count);
    const double per_second = count / seconds(Clock::now() - start);
    echo.close();
    return {percentile(samples, 0.50), percentile(samples, 0.99), per_second};
}

// ---- (c) and (d): through a Transport -------------------------------------------------------

acemq::OutboundMessage message_to(const std::string& queue, const acemq::Bytes& payload) {
    return {.routing_key = queue,
            .body = payload,
            .content_type = "application/octet-stream",
            .persistent = false,
            .mandatory = true};
}

void check(const acemq::PublishResult& result, const char* how) {
    if (!result.confirmed) throw std::runtime_error(std::string(how) + " was not confirmed: " + result.return_reason);
    if (!result.routed) throw std::runtime_error(std::string(how) + " reached no queue: " + result.return_reason);
}

acemq::Topology bench_queue(const std::string& queue) {
    return acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic, .durable = false});
}

// (c) and (d): msg/s of `count` messages published in windows of confirmed publish_batch
// calls while one consumer acks each, from the first publish to the last ack.
double confirmed_acked(acemq::Transport& transport, const std::string& queue, const acemq::Bytes& payload, int count) {
    bench::Acker acker;
    auto subscription = transport.consume(queue, acemq::ConsumeSpec{.prefetch = prefetch},
                                          [&acker](acemq::Delivery delivery) { acker.hand(std::move(delivery)); });
    const auto start = Clock::now();
    for (int sent = 0; sent < count;) {
        const std::size_t size = std::min(window, static_cast<std::size_t>(count - sent));
        std::vector<acemq::OutboundMessage> messages;
        messages.reserve(size);
        for (std::size_t i = 0; i < size; ++i) messages.push_back(message_to(queue, payload));
        for (const acemq::PublishResult& result : transport.publish_batch(std::move(messages)))
            check(result, "a publish of the batch");
        sent += static_cast<int>(size);
    }
    acker.wait_for(count, drain_deadline);
    const double per_second = count / seconds(Clock::now() - start);
    subscription->close();
    return per_second;
}

struct Publishes {
    double p50_us, p99_us;
};

// (c) One confirmed publish() at a time with nobody consuming, as (b) has nobody but the
// echo; the queue is emptied (deleted and declared again) afterwards.
Publishes single_publishes(acemq::Transport& transport, const std::string& queue, const acemq::Bytes& payload,
                           int count, int warm_up) {
    for (int i = 0; i < warm_up; ++i) check(transport.publish(message_to(queue, payload)), "a warm-up publish");
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        acemq::OutboundMessage message = message_to(queue, payload);
        const auto start = Clock::now();
        const acemq::PublishResult result = transport.publish(std::move(message));
        samples.push_back(micros(Clock::now() - start));
        check(result, "a single publish");
    }
    transport.delete_queue(queue);
    transport.declare(bench_queue(queue));
    return {percentile(samples, 0.50), percentile(samples, 0.99)};
}

std::string unique_name(const std::string& what) {
    static int made = 0;
    return "acemq.bench.zmq." + what + "." + std::to_string(getpid()) + "." + std::to_string(++made);
}

struct AcemqFigures {
    double per_second;
    Publishes single;
};

// (c) A broker of its own, served on a fresh endpoint, reached by a transport of its own.
AcemqFigures over_zmq(const std::string& bind, const acemq::Bytes& payload, const Sizes& sizes) {
    const std::string queue = unique_name("queue");
    auto server = acemq::zmq::serve(acemq::inproc::broker(unique_name("broker")), {bind});
    auto transport = acemq::zmq::open("zmq+" + server->endpoints().front(), {.session = {.name = "zmq_bench"}});
    transport->declare(bench_queue(queue));
    AcemqFigures figures{};
    figures.single = single_publishes(*transport, queue, payload, sizes.single_publishes, sizes.warm_up);
    confirmed_acked(*transport, queue, payload, sizes.warm_up);
    figures.per_second =
        median_of_runs(sizes.runs, [&] { return confirmed_acked(*transport, queue, payload, sizes.confirmed_acked); });
    transport->close();
    return figures;
}

// (d) nullopt, and `missing` says why, when there is no RabbitMQ to ask.
std::optional<double> over_amqp(const acemq::Bytes& payload, const Sizes& sizes, std::string& missing) {
    const char* url = std::getenv("ACEMQ_TEST_AMQP_URL");
    if (url == nullptr || *url == '\0') {
        missing = "ACEMQ_TEST_AMQP_URL is not set (source scripts/servers.sh; start_rabbitmq sets it)";
        return std::nullopt;
    }
    std::shared_ptr<acemq::Transport> transport;
    try {
        transport = acemq::amqp::open(url, {.session = {.connect_timeout = 5s, .recover = false, .name = "zmq_bench"}});
    } catch (const acemq::Error& error) {
        missing = std::string("no RabbitMQ to use at ") + acemq::redacted_url(url) + ": " + error.what();
        return std::nullopt;
    }
    const std::string queue = unique_name("amqp");
    std::optional<double> per_second;
    try {
        transport->declare(bench_queue(queue));
        confirmed_acked(*transport, queue, payload, sizes.warm_up);
        per_second = median_of_runs(sizes.runs,
                                    [&] { return confirmed_acked(*transport, queue, payload, sizes.confirmed_acked); });
    } catch (const std::exception& error) {
        missing = std::string("RabbitMQ at ") + acemq::redacted_url(url) + " failed: " + error.what();
    }
    try {
        transport->delete_queue(queue);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "zmq_bench: could not delete queue %s on RabbitMQ: %s\n", queue.c_str(), error.what());
    }
    transport->close();
    return per_second;
}

// ---- the table ------------------------------------------------------------------------------

struct Column {
    double push_pull;
    RoundTrips round_trips;
    AcemqFigures acemq;
};

void print_line(const char* what, const char* unit, double ipc, double tcp, const char* format = "%16.0f") {
    std::printf("  %-44s %-6s", what, unit);
    std::printf(format, ipc);
    std::printf(format, tcp);
    std::printf("\n");
}

void print_table(std::size_t payload, const Column& ipc, const Column& tcp, const std::optional<double>& amqp,
                 const std::string& amqp_missing, const Sizes& sizes) {
    const std::string title = "payload " + std::to_string(payload) + " B";
    std::printf("\n%-53s%16s%16s\n", title.c_str(), "ipc://", "tcp://127.0.0.1");
    const std::string stream = "(a) raw PUSH/PULL, " + std::to_string(sizes.stream_messages) + " messages";
    print_line(stream.c_str(), "msg/s", ipc.push_pull, tcp.push_pull);
    print_line("(b) raw DEALER/ROUTER echo, round trip p50", "us", ipc.round_trips.p50_us, tcp.round_trips.p50_us,
               "%16.1f");
    print_line("                                       p99", "us", ipc.round_trips.p99_us, tcp.round_trips.p99_us,
               "%16.1f");
    print_line("    one at a time", "msg/s", ipc.round_trips.per_second, tcp.round_trips.per_second);
    print_line("(c) acemq zmq, confirmed + acked", "msg/s", ipc.acemq.per_second, tcp.acemq.per_second);
    print_line("    one confirmed publish() p50", "us", ipc.acemq.single.p50_us, tcp.acemq.single.p50_us, "%16.1f");
    print_line("                            p99", "us", ipc.acemq.single.p99_us, tcp.acemq.single.p99_us, "%16.1f");
    if (amqp)
        std::printf("  %-44s %-6s%16.0f  (one RabbitMQ over tcp, for both columns)\n",
                    "(d) acemq amqp, confirmed + acked", "msg/s", *amqp);
    else
        std::printf("  %-44s missing: %s\n", "(d) acemq amqp, confirmed + acked", amqp_missing.c_str());
    std::printf("  ratios\n");
    print_line("(c) / (a) throughput          (aim >= 0.25)", "x", ipc.acemq.per_second / ipc.push_pull,
               tcp.acemq.per_second / tcp.push_pull, "%16.3f");
    print_line("(c) publish p50 / (b) p50     (aim <= 1.5)", "x", ipc.acemq.single.p50_us / ipc.round_trips.p50_us,
               tcp.acemq.single.p50_us / tcp.round_trips.p50_us, "%16.3f");
    if (amqp)
        print_line("(c) / (d) throughput          (aim > 1)", "x", ipc.acemq.per_second / *amqp,
                   tcp.acemq.per_second / *amqp, "%16.3f");
    else
        std::printf("  %-44s missing with (d)\n", "(c) / (d) throughput          (aim > 1)");
}

void record_rows(std::size_t payload, const Column& column, const char* scheme, const std::optional<double>& amqp) {
    const std::string where = std::string(", ") + scheme + ", " + std::to_string(payload) + " B";
    bench::record({.name = "ZeroMQ transport, confirmed + acked" + where,
                   .ours = column.acemq.per_second,
                   .against = "raw cppzmq PUSH/PULL, no confirms",
                   .underneath = column.push_pull,
                   .unit = "msg/s",
                   .aim = 0.25,
                   .better = bench::Better::higher});
    bench::record({.name = "ZeroMQ transport, one confirmed publish p50" + where,
                   .ours = column.acemq.single.p50_us,
                   .against = "raw cppzmq DEALER/ROUTER round trip p50",
                   .underneath = column.round_trips.p50_us,
                   .unit = "us",
                   .aim = 1.5});
    if (amqp)
        bench::record({.name = "ZeroMQ transport, confirmed + acked" + where,
                       .ours = column.acemq.per_second,
                       .against = "the AMQP transport on RabbitMQ, the same",
                       .underneath = *amqp,
                       .unit = "msg/s",
                       .aim = 1,
                       .better = bench::Better::higher});
}

Column measure(zmq::context_t& context, Endpoints& endpoints, Scheme scheme, const acemq::Bytes& payload,
               const Sizes& sizes) {
    Column column{};
    column.push_pull = median_of_runs(
        sizes.runs, [&] { return push_pull(context, endpoints.fresh(scheme), payload, sizes.stream_messages); });
    column.round_trips = dealer_router(context, endpoints.fresh(scheme), payload, sizes.round_trips, sizes.warm_up);
    column.acemq = over_zmq(endpoints.fresh(scheme), payload, sizes);
    return column;
}

// --profile-acked N: (c)'s confirmed + acked loop alone, its figure printed.
int profile_acked(int count) {
    Endpoints endpoints;
    const std::string queue = unique_name("queue");
    auto server = acemq::zmq::serve(acemq::inproc::broker(unique_name("broker")), {endpoints.fresh(Scheme::ipc)});
    auto transport = acemq::zmq::open("zmq+" + server->endpoints().front(), {.session = {.name = "zmq_bench"}});
    transport->declare(bench_queue(queue));
    const double per_second = confirmed_acked(*transport, queue, acemq::Bytes(64, std::byte{'x'}), count);
    std::printf("confirmed + acked, ipc://, 64 B: %d messages, %.0f msg/s\n", count, per_second);
    transport->close();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::string_view(argv[1]) == "--profile-acked") {
        try {
            return profile_acked(std::stoi(argv[2]));
        } catch (const std::exception& error) {
            std::fprintf(stderr, "zmq_bench: %s\n", error.what());
            return 1;
        }
    }
    const bool quick = bench::quick_from_command_line(argc, argv);
    const Sizes& sizes = quick ? quick_sizes : full_sizes;
    int major = 0, minor = 0, patch = 0;
    zmq_version(&major, &minor, &patch);
    std::printf(
        "libzmq %d.%d.%d, cppzmq %d.%d; %s: throughputs the median of %d run(s), %d confirmed+acked per run, "
        "%d single publishes, %d round trips\n",
        major, minor, patch, CPPZMQ_VERSION_MAJOR, CPPZMQ_VERSION_MINOR, quick ? "quick" : "full", sizes.runs,
        sizes.confirmed_acked, sizes.single_publishes, sizes.round_trips);
    std::fflush(stdout);
    try {
        zmq::context_t context;
        Endpoints endpoints;
        for (const std::size_t size : {std::size_t{64}, std::size_t{1024}}) {
            const acemq::Bytes payload(size, std::byte{'x'});
            const Column ipc = measure(context, endpoints, Scheme::ipc, payload, sizes);
            const Column tcp = measure(context, endpoints, Scheme::tcp, payload, sizes);
            std::string amqp_missing;
            const std::optional<double> amqp = over_amqp(payload, sizes, amqp_missing);
            print_table(size, ipc, tcp, amqp, amqp_missing, sizes);
            record_rows(size, ipc, "ipc://", amqp);
            record_rows(size, tcp, "tcp://", amqp);
            std::fflush(stdout);
        }
    } catch (const std::exception& error) {
        std::fprintf(stderr, "zmq_bench: %s\n", error.what());
        return 1;
    }
    return 0;
}
