// acemq-broker over zmq+tcp:// side by side with NATS JetStream, the peer an edge or desktop
// team would pick instead of it (issue 32), each through its public client API, in one run:
//   acemq  an acemq::Bus (BytesCodec, so a body is exactly the payload) on an acemq-broker
//          process: in memory at $ACEMQ_BENCH_ZMQ_URL, a non-durable classic queue and
//          transient messages; on disk at $ACEMQ_BENCH_ZMQ_DATA_URL (a broker with --data),
//          a durable queue and persistent messages, each synced before its confirm.
//          Publisher::send_all in batches of 256 (the bus's window, max_outstanding_publishes
//          256) and one consume<acemq::Bytes> consumer, prefetch 256, accepting each.
//   NATS   libnats on a nats-server -js at $ACEMQ_BENCH_JETSTREAM_URL: a work-queue stream
//          (an acked message leaves it, as from a queue) with memory storage, or file storage
//          as it ships (the server syncs its files every 2 minutes, not before an ack).
//          js_PublishAsync with 256 pending at most (jsOptions.PublishAsync.MaxPending) and
//          js_PublishAsyncComplete at the end; one pull consumer, natsSubscription_Fetch of
//          256 and natsMsg_Ack of each. The connection keeps libnats's defaults (its flusher
//          gathers what is written, its best for many in flight).
// For 100,000 messages of 64 B and of 1 KiB (a tenth with --quick), published and consumed
// at once: msg/s from the first publish to the last ack, three rounds, each side in turn
// (acemq, NATS, acemq, NATS, ...). Then one confirmed publish at a time, no consumer:
// acemq's Publisher::send against js_Publish (on a connection with natsOptions_SetSendAsap,
// libnats's low-latency setting), p50 and p99 of 2,000 (200 with --quick) in each round.
// Beside them, each round, the floor under acemq's lone publish: cppzmq by hand, a DEALER's
// 64 B request echoed by a ROUTER thread over tcp loopback, one at a time (p50; recorded
// against NATS's js_Publish p50 in memory: the part of our latency ZeroMQ itself takes).
// Recorded ratios: acemq / NATS, the median of the rounds' ratios. A server that is not there
// leaves its rows out and says why; only a failure of a side that is there fails the bench.
// Figures only, never asserted on.
//
//   build/bench/jetstream_bench [--quick]     (or ACEMQ_BENCH_QUICK=1: one round, a tenth)
//   build/bench/jetstream_bench --profile-acemq N [--disk]
//       only acemq's memory (or on-disk) 64 B row, N messages, once, for a profiler on this process or
//       on the broker's (perf record -g -p PID)
//
// bench/run starts the three servers; alone, e.g.
//   build/tools/acemq-broker --listen tcp://127.0.0.1:5680 &
//   build/tools/acemq-broker --listen tcp://127.0.0.1:5681 --data /tmp/jetstream-bench.db &
//   nats-server -js -a 127.0.0.1 -p 4222 --store_dir /tmp/jetstream-bench &
//   export ACEMQ_BENCH_ZMQ_URL=zmq+tcp://127.0.0.1:5680 ACEMQ_BENCH_ZMQ_DATA_URL=zmq+tcp://127.0.0.1:5681
//   ACEMQ_BENCH_JETSTREAM_URL=nats://127.0.0.1:4222 build/bench/jetstream_bench
#include <acemq/acemq.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "measure.hpp"
#include "nats_client.hpp"
#include "raw_zmq.hpp"

using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t window = 256;
constexpr std::uint16_t prefetch = 256;
constexpr std::array<std::size_t, 2> payloads{64, 1024};
// A side that moves nothing for this long has failed; every wait is bounded by it.
constexpr auto stalled_after = 30s;

struct Sizes {
    int rounds;
    int messages;    // published and consumed at once, per figure
    int one_by_one;  // confirmed publishes one at a time, per round: p50, p99
    int warm_up;     // publishes before the timed ones
};
constexpr Sizes full_sizes{3, 100'000, 2'000, 100};
constexpr Sizes quick_sizes{1, 10'000, 200, 20};

enum class Storage { memory, disk };
constexpr std::array<Storage, 2> storages{Storage::memory, Storage::disk};
const char* name_of(Storage storage) { return storage == Storage::memory ? "memory" : "on disk"; }

std::string size_name(std::size_t bytes) {
    return bytes >= 1024 ? std::to_string(bytes / 1024) + " KiB" : std::to_string(bytes) + " B";
}

double seconds(Clock::duration elapsed) { return std::chrono::duration<double>(elapsed).count(); }
double micros(Clock::duration elapsed) { return std::chrono::duration<double, std::micro>(elapsed).count(); }

// One side's measurements; std::nullopt from make() when it is not there, with why.
class Side {
public:
    virtual ~Side() = default;
    // msg/s, `messages` published (window 256) and consumed (prefetch 256, an ack each) at once.
    virtual double confirmed_and_acked(Storage storage, std::size_t payload, int messages) = 0;
    // Microseconds of each of `count` confirmed publishes, one at a time, after `warm_up`.
    virtual std::vector<double> one_at_a_time(Storage storage, std::size_t payload, int count, int warm_up) = 0;
};

// ---- acemq ----------------------------------------------------------------------------------

const std::string acemq_queue = "acemq.bench.jetstream";

class AcemqSide final : public Side {
public:
    AcemqSide(const std::string& memory_url, const std::string& disk_url)
        : memory_(connect(memory_url)), disk_(connect(disk_url)) {}

    double confirmed_and_acked(Storage storage, std::size_t payload, int messages) override {
        acemq::Bus& bus = bus_for(storage);
        declare(bus, storage);
        std::mutex mutex;
        std::condition_variable finished;
        std::atomic<int> handled{0};
        Clock::time_point last_ack{};  // under mutex
        acemq::Consumer consumer =
            bus.consume<acemq::Bytes>(acemq_queue,
                                      [&](const acemq::Message<acemq::Bytes>&) {
                                          if (handled.fetch_add(1, std::memory_order_relaxed) + 1 == messages) {
                                              std::lock_guard lock(mutex);
                                              last_ack = Clock::now();
                                              finished.notify_one();
                                          }
                                          return acemq::accept();
                                      },
                                      {.prefetch = prefetch, .declare = false});
        const acemq::Publisher publisher =
            bus.publisher_to_queue(acemq_queue, {.persistent = storage == Storage::disk});
        const std::vector<acemq::Bytes> batch(window, acemq::Bytes(payload, std::byte{'x'}));
        const auto started = Clock::now();
        for (int sent = 0; sent < messages; sent += static_cast<int>(window)) {
            const std::size_t count = std::min(window, static_cast<std::size_t>(messages - sent));
            bench::keep(publisher.send_all(std::span(batch).first(count)));
        }
        {
            std::unique_lock lock(mutex);
            int seen = -1;
            while (last_ack == Clock::time_point{}) {
                const int now = handled.load();
                if (now == seen)
                    throw std::runtime_error("acemq: the consumer handled nothing for " +
                                             std::to_string(stalled_after.count()) + " s, at " + std::to_string(now) +
                                             " of " + std::to_string(messages));
                seen = now;
                finished.wait_for(lock, stalled_after, [&] { return last_ack != Clock::time_point{}; });
            }
        }
        consumer.close();
        bus.transport().delete_queue(acemq_queue);
        return messages / seconds(last_ack - started);
    }

    std::vector<double> one_at_a_time(Storage storage, std::size_t payload, int count, int warm_up) override {
        acemq::Bus& bus = bus_for(storage);
        declare(bus, storage);
        const acemq::Publisher publisher =
            bus.publisher_to_queue(acemq_queue, {.persistent = storage == Storage::disk});
        const acemq::Bytes body(payload, std::byte{'x'});
        for (int i = 0; i < warm_up; ++i) bench::keep(publisher.send(body));
        std::vector<double> samples;
        samples.reserve(static_cast<std::size_t>(count));
        for (int i = 0; i < count; ++i) {
            const auto sent = Clock::now();
            bench::keep(publisher.send(body));
            samples.push_back(micros(Clock::now() - sent));
        }
        bus.transport().delete_queue(acemq_queue);
        return samples;
    }

private:
    static acemq::Bus connect(const std::string& url) {
        return acemq::connect(url, {.origin = "jetstream_bench@local",
                                    .codec = std::make_shared<acemq::BytesCodec>(),
                                    .max_outstanding_publishes = window});
    }
    acemq::Bus& bus_for(Storage storage) { return storage == Storage::memory ? memory_ : disk_; }
    static void declare(acemq::Bus& bus, Storage storage) {
        bus.declare(acemq::Topology{}.queue(acemq_queue,
                                            {.type = acemq::QueueType::classic, .durable = storage == Storage::disk}));
    }

    acemq::Bus memory_;
    acemq::Bus disk_;
};

// ---- NATS -----------------------------------------------------------------------------------

#if ACEMQ_BENCH_NATS

constexpr const char* stream_name = "ACEMQ_BENCH";
constexpr const char* subject = "acemq.bench.jetstream";

using bench::nats::ok;

// JetStream calls also give an error code of their own; it goes into the message.
void js_ok(natsStatus status, jsErrCode code, const std::string& what) {
    if (status != NATS_OK)
        throw std::runtime_error("libnats, " + what + ": " + natsStatus_GetText(status) +
                                 (code != 0 ? " (JetStream error " + std::to_string(code) + ")" : ""));
}

struct DestroyContext {
    void operator()(jsCtx* context) const { jsCtx_Destroy(context); }
};
using Context = std::unique_ptr<jsCtx, DestroyContext>;

// The stream, deleted (with its consumers and messages) when this goes.
class Stream {
public:
    Stream(jsCtx* context, Storage storage) : context_(context) {
        jsStreamConfig config;
        ok(jsStreamConfig_Init(&config), "initialising a stream's configuration");
        const char* subjects[] = {subject};
        config.Name = stream_name;
        config.Subjects = subjects;
        config.SubjectsLen = 1;
        config.Retention = js_WorkQueuePolicy;
        config.Storage = storage == Storage::memory ? js_MemoryStorage : js_FileStorage;
        jsStreamInfo* info = nullptr;
        jsErrCode code = static_cast<jsErrCode>(0);
        js_ok(js_AddStream(&info, context_, &config, nullptr, &code), code,
              std::string("adding the stream (") + name_of(storage) + ")");
        jsStreamInfo_Destroy(info);
    }
    ~Stream() { js_DeleteStream(context_, stream_name, nullptr, nullptr); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

private:
    jsCtx* context_;
};

class NatsSide final : public Side {
public:
    explicit NatsSide(const std::string& url)
        : many_(bench::nats::connect(url, false)), one_(bench::nats::connect(url, true)) {
        jsOptions options;
        ok(jsOptions_Init(&options), "initialising the JetStream options");
        options.PublishAsync.MaxPending = static_cast<int64_t>(window);
        // Stalled at 256 pending, js_PublishAsync waits this long for a slot before it fails.
        options.PublishAsync.StallWait = std::chrono::milliseconds(stalled_after).count();
        options.PublishAsync.ErrHandler = &NatsSide::failed;
        options.PublishAsync.ErrHandlerClosure = this;
        jsCtx* context = nullptr;
        ok(natsConnection_JetStream(&context, many_.get(), &options), "the JetStream context");
        many_context_.reset(context);
        ok(natsConnection_JetStream(&context, one_.get(), nullptr), "the JetStream context");
        one_context_.reset(context);
    }

    double confirmed_and_acked(Storage storage, std::size_t payload, int messages) override {
        const Stream stream(many_context_.get(), storage);
        natsSubscription* made = nullptr;
        jsErrCode code = static_cast<jsErrCode>(0);
        js_ok(js_PullSubscribe(&made, many_context_.get(), subject, "bench", nullptr, nullptr, &code), code,
              "the pull consumer");
        const bench::nats::Subscription subscription(made);
        failures_ = 0;
        const std::string body(payload, 'x');
        const auto started = Clock::now();
        auto consumed = std::async(std::launch::async, [&] { return consume(subscription.get(), messages); });
        for (int i = 0; i < messages; ++i)
            ok(js_PublishAsync(many_context_.get(), subject, body.data(), static_cast<int>(body.size()), nullptr),
               "js_PublishAsync");
        jsPubOptions wait;
        ok(jsPubOptions_Init(&wait), "initialising the publish options");
        wait.MaxWait = std::chrono::milliseconds(stalled_after).count();
        ok(js_PublishAsyncComplete(many_context_.get(), &wait), "waiting for the publish acks");
        if (failures_ > 0)
            throw std::runtime_error("NATS: " + std::to_string(failures_.load()) + " publishes were not acked");
        return messages / seconds(consumed.get() - started);
    }

    std::vector<double> one_at_a_time(Storage storage, std::size_t payload, int count, int warm_up) override {
        const Stream stream(one_context_.get(), storage);
        const std::string body(payload, 'x');
        const auto publish = [&] {
            jsPubAck* ack = nullptr;
            jsErrCode code = static_cast<jsErrCode>(0);
            js_ok(js_Publish(&ack, one_context_.get(), subject, body.data(), static_cast<int>(body.size()), nullptr,
                             &code),
                  code, "js_Publish");
            jsPubAck_Destroy(ack);
        };
        for (int i = 0; i < warm_up; ++i) publish();
        std::vector<double> samples;
        samples.reserve(static_cast<std::size_t>(count));
        for (int i = 0; i < count; ++i) {
            const auto sent = Clock::now();
            publish();
            samples.push_back(micros(Clock::now() - sent));
        }
        return samples;
    }

private:
    // Fetches 256 at a time and acks each, until `messages` are in; when the last was acked.
    static Clock::time_point consume(natsSubscription* subscription, int messages) {
        auto progress = Clock::now();
        for (int received = 0; received < messages;) {
            natsMsgList list{};
            jsErrCode code = static_cast<jsErrCode>(0);
            const natsStatus status =
                natsSubscription_Fetch(&list, subscription, static_cast<int>(prefetch), 1000, &code);
            if (status == NATS_TIMEOUT) {
                if (Clock::now() - progress > stalled_after)
                    throw std::runtime_error("NATS: the pull consumer got nothing for " +
                                             std::to_string(stalled_after.count()) + " s, at " +
                                             std::to_string(received) + " of " + std::to_string(messages));
                continue;
            }
            js_ok(status, code, "natsSubscription_Fetch");
            natsStatus acked = NATS_OK;
            for (int i = 0; i < list.Count; ++i)
                if (acked == NATS_OK) acked = natsMsg_Ack(list.Msgs[i], nullptr);
            received += list.Count;
            natsMsgList_Destroy(&list);
            ok(acked, "natsMsg_Ack");
            progress = Clock::now();
        }
        return Clock::now();
    }

    static void failed(jsCtx*, jsPubAckErr*, void* closure) { ++static_cast<NatsSide*>(closure)->failures_; }

    bench::nats::Connection many_;  // libnats's defaults: js_PublishAsync and the pull consumer
    bench::nats::Connection one_;   // each publish sent at once: js_Publish, one at a time
    Context many_context_;          // after its connection: destroyed before it
    Context one_context_;
    std::atomic<int> failures_{0};
};

#endif

// ---- the rounds -----------------------------------------------------------------------------

struct Made {
    std::unique_ptr<Side> side;
    std::string missing;
};

Made make_acemq() {
    const char* memory = std::getenv("ACEMQ_BENCH_ZMQ_URL");
    const char* disk = std::getenv("ACEMQ_BENCH_ZMQ_DATA_URL");
    for (const auto& [variable, url] : {std::pair{"ACEMQ_BENCH_ZMQ_URL", memory}, {"ACEMQ_BENCH_ZMQ_DATA_URL", disk}})
        if (url == nullptr || *url == '\0')
            return {nullptr, std::string(variable) +
                                 " is not set: bench/run starts two acemq-brokers, one with --data, and sets "
                                 "ACEMQ_BENCH_ZMQ_URL and ACEMQ_BENCH_ZMQ_DATA_URL (zmq+tcp://127.0.0.1:PORT)"};
    try {
        return {std::make_unique<AcemqSide>(memory, disk), ""};
    } catch (const acemq::Error& error) {
        return {nullptr, std::string("no acemq-broker to use: ") + error.what()};
    }
}

Made make_nats() {
#if ACEMQ_BENCH_NATS
    const char* url = std::getenv("ACEMQ_BENCH_JETSTREAM_URL");
    if (url == nullptr || *url == '\0')
        return {nullptr,
                "ACEMQ_BENCH_JETSTREAM_URL is not set: bench/run sets it to the nats-server -js it starts, when "
                "Debian's nats-server is installed (scripts/setup --servers installs it)"};
    try {
        return {std::make_unique<NatsSide>(url), ""};
    } catch (const std::exception& error) {
        return {nullptr, std::string("NATS JetStream at ") + acemq::redacted_url(url) + " failed: " + error.what()};
    }
#else
    return {nullptr, bench::nats::missing_from_build};
#endif
}

// Each figure's values over the rounds, per side.
struct Figures {
    std::vector<double> acemq, nats;
};

// The last round's figures alone.
Figures latest(const Figures& figures) {
    Figures last;
    if (!figures.acemq.empty()) last.acemq.push_back(figures.acemq.back());
    if (!figures.nats.empty()) last.nats.push_back(figures.nats.back());
    return last;
}

// The median of the rounds' ratios acemq / NATS.
double ratio_of(const Figures& figures) {
    std::vector<double> ratios;
    for (std::size_t i = 0; i < figures.acemq.size() && i < figures.nats.size(); ++i)
        ratios.push_back(figures.acemq[i] / figures.nats[i]);
    return bench::median(std::move(ratios));
}

// A side's median, or "-" when it is missing.
std::string shown(const std::vector<double>& values) {
    if (values.empty()) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", bench::median(values));
    return text;
}

void print(const std::string& what, const Figures& figures, const char* unit) {
    std::printf("  %-44s acemq %10s  NATS %10s %-5s", what.c_str(), shown(figures.acemq).c_str(),
                shown(figures.nats).c_str(), unit);
    if (!figures.nats.empty() && !figures.acemq.empty()) std::printf("  %.2fx", ratio_of(figures));
    std::printf("\n");
}

void record(const std::string& name, const Figures& figures, const std::string& against, const char* unit,
            std::optional<double> aim, bench::Better better) {
    if (figures.acemq.empty() || figures.nats.empty()) return;
    bench::record({.name = name,
                   .ours = bench::median(figures.acemq),
                   .against = against,
                   .underneath = bench::median(figures.nats),
                   .unit = unit,
                   .aim = aim,
                   .better = better,
                   .ratio = ratio_of(figures)});
}

// What --profile-acemq N [--disk] asks for alone.
struct Profiled {
    int messages;
    Storage storage;
};

// --profile-acemq's row, or nothing for the whole bench; exits with the usage for anything else.
std::optional<Profiled> profiled_row(int argc, char** argv) {
    if ((argc == 3 || (argc == 4 && std::string_view(argv[3]) == "--disk")) &&
        std::string_view(argv[1]) == "--profile-acemq") {
        const int count = std::atoi(argv[2]);
        if (count > 0) return Profiled{count, argc == 4 ? Storage::disk : Storage::memory};
    }
    if (argc == 1 || (argc == 2 && std::string_view(argv[1]) == "--quick")) return std::nullopt;
    std::fprintf(stderr, "usage: %s [--quick | --profile-acemq N [--disk]]   (or ACEMQ_BENCH_QUICK=1)\n", argv[0]);
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    const std::optional<Profiled> profiled = profiled_row(argc, argv);
    const bool quick = bench::quick_from_environment() || (argc == 2 && std::string_view(argv[1]) == "--quick");
    const Sizes& sizes = quick ? quick_sizes : full_sizes;
    try {
        const Made acemq = make_acemq();
        if (profiled) {
            if (!acemq.side) throw std::runtime_error(acemq.missing);
            std::printf("acemq, %s, 64 B: %.0f msg/s\n", name_of(profiled->storage),
                        acemq.side->confirmed_and_acked(profiled->storage, payloads[0], profiled->messages));
            return 0;
        }
        const Made nats = make_nats();
        std::printf(
            "%s: %d messages published (window %zu) and consumed (prefetch %u, an ack each) at once, %d "
            "round(s); then %d confirmed publishes one at a time\n",
            quick ? "quick" : "full", sizes.messages, window, static_cast<unsigned>(prefetch), sizes.rounds,
            sizes.one_by_one);
        if (!acemq.side) std::printf("  acemq rows missing: %s\n", acemq.missing.c_str());
        if (!nats.side) std::printf("  NATS rows missing: %s\n", nats.missing.c_str());
        std::fflush(stdout);
        if (!acemq.side && !nats.side) return 0;

        std::map<std::pair<Storage, std::size_t>, Figures> throughput;
        std::map<Storage, Figures> p50, p99;
        Figures raw_round_trip;  // acemq: raw cppzmq's round trip p50; NATS: its in-memory js_Publish p50
        zmq::context_t raw_context;
        for (int round = 1; round <= sizes.rounds; ++round) {
            for (const Storage storage : storages) {
                for (const std::size_t payload : payloads) {
                    Figures& figures = throughput[{storage, payload}];
                    if (acemq.side)
                        figures.acemq.push_back(acemq.side->confirmed_and_acked(storage, payload, sizes.messages));
                    if (nats.side)
                        figures.nats.push_back(nats.side->confirmed_and_acked(storage, payload, sizes.messages));
                    print("round " + std::to_string(round) + ", " + name_of(storage) + ", " + size_name(payload),
                          latest(figures), "msg/s");
                    std::fflush(stdout);
                }
            }
            for (const Storage storage : storages) {
                for (Side* side : {acemq.side.get(), nats.side.get()}) {
                    if (side == nullptr) continue;
                    const std::vector<double> samples =
                        side->one_at_a_time(storage, payloads[0], sizes.one_by_one, sizes.warm_up);
                    const bool ours = side == acemq.side.get();
                    (ours ? p50[storage].acemq : p50[storage].nats).push_back(bench::percentile(samples, 0.50));
                    (ours ? p99[storage].acemq : p99[storage].nats).push_back(bench::percentile(samples, 0.99));
                }
                print("round " + std::to_string(round) + ", one confirmed publish p50, " + name_of(storage),
                      latest(p50[storage]), "us");
                std::fflush(stdout);
            }
            bench::raw_zmq::Echo echo(raw_context, "tcp://127.0.0.1:*");
            const acemq::Bytes payload(payloads[0], std::byte{'r'});
            (void)bench::raw_zmq::round_trip_micros(echo, payload, sizes.warm_up);
            raw_round_trip.acemq.push_back(
                bench::percentile(bench::raw_zmq::round_trip_micros(echo, payload, sizes.one_by_one), 0.50));
            echo.close();
            if (!p50[Storage::memory].nats.empty()) raw_round_trip.nats.push_back(p50[Storage::memory].nats.back());
            print("round " + std::to_string(round) + ", raw cppzmq round trip p50 (acemq column)",
                  latest(raw_round_trip), "us");
            std::fflush(stdout);
        }

        std::printf("\n  the median of %d round(s); the ratio acemq / NATS is the median of the rounds' ratios\n",
                    sizes.rounds);
        const std::string client = bench::nats::client();
        for (const Storage storage : storages) {
            const std::string stream = std::string("NATS JetStream, ") +
                                       (storage == Storage::memory ? "memory" : "file") + " storage, " + client;
            for (const std::size_t payload : payloads) {
                const std::string what = std::string(name_of(storage)) + ", " + size_name(payload);
                const Figures& figures = throughput[{storage, payload}];
                print("confirmed + acked, " + what, figures, "msg/s");
                record("acemq-broker (zmq+tcp) confirmed + acked, " + what, figures,
                       stream + ": js_PublishAsync (256 pending) + pull Fetch 256, ack each", "msg/s", 2.0,
                       bench::Better::higher);
            }
            print(std::string("one confirmed publish p50, ") + name_of(storage) + ", 64 B", p50[storage], "us");
            print(std::string("one confirmed publish p99, ") + name_of(storage) + ", 64 B", p99[storage], "us");
            // On disk we sync before each confirm and NATS does not before its ack: shown, not judged.
            const std::optional<double> aim = storage == Storage::memory ? std::optional(1.0) : std::nullopt;
            record(std::string("acemq-broker (zmq+tcp) one confirmed publish p50, ") + name_of(storage) + ", 64 B",
                   p50[storage], stream + ": js_Publish", "us", aim, bench::Better::lower);
            record(std::string("acemq-broker (zmq+tcp) one confirmed publish p99, ") + name_of(storage) + ", 64 B",
                   p99[storage], stream + ": js_Publish", "us", std::nullopt, bench::Better::lower);
        }
        // What ZeroMQ itself takes of a lone publish: four zmq I/O-thread hand-offs and two
        // TCP writes, before our client's and broker's own threads add theirs.
        print("raw cppzmq round trip p50, 64 B (acemq column)", raw_round_trip, "us");
        record("raw cppzmq DEALER/ROUTER round trip p50, tcp loopback, 64 B (the floor under acemq's lone publish)",
               raw_round_trip, std::string("NATS JetStream, memory storage, ") + client + ": js_Publish p50", "us",
               std::nullopt, bench::Better::lower);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "jetstream_bench: %s\n", error.what());
        return 1;
    }
    bench::nats::close();
    return 0;
}
