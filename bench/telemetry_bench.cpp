// What telemetry costs a publish and a delivery through a Bus on the embedded broker, in one
// run. Four buses, each on an inproc broker of its own, differ only in what they observe:
//   none     no metrics, no tracer
//   metrics  BusOptions::metrics, an InMemoryMetrics
//   tracing  BusOptions::tracer, the JSON-lines tracer writing into a sink that discards the
//            lines: what a span costs the sending thread (its record, its queueing) is
//            measured; the JSON is rendered on the tracer's writer thread, beside it, and I/O
//            is not measured. Spans the writer could not keep up with are dropped, which
//            would flatter the figure: the run prints how many.
//   both     the two together
//   (a) Publisher::send of a small struct to a declared queue nobody consumes, µs per send;
//       the queue is deleted and declared again after every 1,000, untimed, so it stays small.
//   (b) N sends to a queue a Consumer (concurrency 1) accepts from, µs per message from the
//       first send to the last settlement, none against both. Both buses carry the same
//       counting Observer to hear the settlements, so it costs them alike.
// The configurations take turns in rounds, in a new order each round, so the machine's
// drift (it is shared, its speed moves by tens of percent) falls on all of them; each figure
// is the median of its rounds and the ratios come from the same run. Figures only, never
// asserted on.
//
//   build/bench/telemetry_bench [--quick]   (or ACEMQ_BENCH_QUICK=1)
//   build/bench/telemetry_bench --only CONFIG  (only (a) with CONFIG, to profile it beside none)
#include <acemq/ack.hpp>
#include <acemq/bus.hpp>
#include <acemq/error.hpp>
#include <acemq/metrics.hpp>
#include <acemq/observer.hpp>
#include <acemq/topology.hpp>
#include <acemq/tracing.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "measure.hpp"

using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

struct Payment {
    std::string id;
    std::int64_t cents;
};

struct Sizes {
    int rounds;     // of each figure, the median reported
    int sends;      // (a) per round and configuration
    int delivered;  // (b) per round and configuration
};

constexpr Sizes full_sizes{9, 20'000, 10'000};
constexpr Sizes quick_sizes{3, 5'000, 2'000};

constexpr auto settle_deadline = 60s;

enum class Config { none, metrics, tracing, both };
constexpr std::array<Config, 4> all_configs{Config::none, Config::metrics, Config::tracing, Config::both};

const char* name_of(Config config) {
    switch (config) {
    case Config::none: return "none";
    case Config::metrics: return "metrics";
    case Config::tracing: return "tracing";
    case Config::both: return "both";
    }
    return "?";
}

// The family's Java member on the same path, µs per send, for reference.
double java_us(Config config) {
    switch (config) {
    case Config::none: return 1.21;
    case Config::metrics: return 1.41;
    case Config::tracing: return 1.64;
    case Config::both: return 2.06;
    }
    return 0;
}

// Every tracer the configurations made, for their dropped spans.
std::vector<std::shared_ptr<acemq::JsonLinesTracer>> tracers;

acemq::BusOptions options_for(Config config) {
    acemq::BusOptions options;
    if (config == Config::metrics || config == Config::both)
        options.metrics = std::make_shared<acemq::InMemoryMetrics>();
    if (config == Config::tracing || config == Config::both) {
        tracers.push_back(acemq::json_lines_tracer([](std::string_view) {}));
        options.tracer = tracers.back();
    }
    return options;
}

void print_dropped() {
    std::uint64_t dropped = 0;
    for (const auto& tracer : tracers) dropped += tracer->dropped();
    std::printf("\nspans dropped by the tracers' full queues: %llu\n", static_cast<unsigned long long>(dropped));
}

int made = 0;
std::string fresh_url() { return "inproc://telemetry-bench-" + std::to_string(++made); }

// (a): a bus, its queue and a publisher to it.
class Sender {
public:
    explicit Sender(Config config)
        : bus_(acemq::connect(fresh_url(), options_for(config))), publisher_(bus_.publisher_to_queue(queue_)) {
        bus_.declare(topology());
    }
    ~Sender() { bus_.close(); }
    Sender(const Sender&) = delete;
    Sender& operator=(const Sender&) = delete;

    // µs per send of `count` sends, timed in batches; the queue is emptied after each, untimed,
    // so it never holds more than a batch and no round inherits a large heap to free.
    double round(const Payment& payment, int count) {
        auto elapsed = Clock::duration::zero();
        for (int done = 0; done < count; done += batch) {
            const int sends = std::min(batch, count - done);
            const auto start = Clock::now();
            for (int i = 0; i < sends; ++i) bench::keep(publisher_.send(payment));
            elapsed += Clock::now() - start;
            bus_.transport().delete_queue(queue_);
            bus_.declare(topology());
        }
        return std::chrono::duration<double, std::micro>(elapsed).count() / count;
    }

private:
    acemq::Topology topology() const { return acemq::Topology{}.queue(queue_, {.durable = false}); }

    static constexpr int batch = 1'000;
    const std::string queue_ = "telemetry_bench";
    acemq::Bus bus_;
    acemq::Publisher publisher_;
};

// Hears every settlement and wakes whoever waits for a number of them.
class Settlements final : public acemq::Observer {
public:
    void settled(const acemq::SettledEvent&) override {
        std::lock_guard lock(mutex_);
        ++count_;
        changed_.notify_all();
    }
    void wait_for(std::uint64_t count) {
        std::unique_lock lock(mutex_);
        if (!changed_.wait_for(lock, settle_deadline, [&] { return count_ >= count; }))
            throw acemq::Error("settlements did not arrive in time: " + std::to_string(count_) + " of " +
                               std::to_string(count));
    }
    std::uint64_t count() {
        std::lock_guard lock(mutex_);
        return count_;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::uint64_t count_ = 0;
};

// (b): a bus, its queue, a consumer on it that accepts everything, and a publisher to it.
class RoundTrip {
public:
    explicit RoundTrip(Config config)
        : settlements_(std::make_shared<Settlements>()), bus_(connect_observed(config)),
          publisher_(bus_.publisher_to_queue(queue_)) {
        bus_.declare(acemq::Topology{}.queue(queue_, {.durable = false}));
        consumer_.emplace(
            bus_.consume<Payment>(queue_, [](const acemq::Message<Payment>&) { return acemq::accept(); }));
    }
    ~RoundTrip() {
        consumer_.reset();
        bus_.close();
    }
    RoundTrip(const RoundTrip&) = delete;
    RoundTrip& operator=(const RoundTrip&) = delete;

    // µs per message from the first of `count` sends to the last of their settlements.
    double round(const Payment& payment, int count) {
        const std::uint64_t target = settlements_->count() + static_cast<std::uint64_t>(count);
        const auto start = Clock::now();
        for (int i = 0; i < count; ++i) bench::keep(publisher_.send(payment));
        settlements_->wait_for(target);
        return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / count;
    }

private:
    acemq::Bus connect_observed(Config config) {
        acemq::BusOptions options = options_for(config);
        options.observer = settlements_;
        return acemq::connect(fresh_url(), std::move(options));
    }

    const std::string queue_ = "telemetry_bench";
    std::shared_ptr<Settlements> settlements_;
    acemq::Bus bus_;
    acemq::Publisher publisher_;
    std::optional<acemq::Consumer> consumer_;
};

// Runs every configuration's round `rounds` times, taking turns in an order shuffled afresh
// each round (a fixed seed, so runs compare): rotating alone kept who follows whom, and a
// round may pay for the heap the previous one left, which moved a figure by 20%. The
// median of each configuration's rounds, in the order of `configs`.
template <class Side, std::size_t N>
std::array<double, N> interleaved(const std::array<Config, N>& configs, int rounds, int count, const Payment& payment) {
    std::vector<std::unique_ptr<Side>> sides;
    for (const Config config : configs) sides.push_back(std::make_unique<Side>(config));
    for (auto& side : sides) side->round(payment, count / 10 + 1);  // warm-up: caches, pools, instruments
    std::array<std::vector<double>, N> figures;
    std::array<std::size_t, N> order{};
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937 shuffler(20261202);
    for (int round = 0; round < rounds; ++round) {
        std::shuffle(order.begin(), order.end(), shuffler);
        for (const std::size_t which : order) figures[which].push_back(sides[which]->round(payment, count));
    }
    std::array<double, N> medians{};
    for (std::size_t i = 0; i < N; ++i) medians[i] = bench::median(figures[i]);
    return medians;
}

void print_send_table(const std::array<double, 4>& us, const Sizes& sizes) {
    std::printf("\n**(a) Publisher::send, µs per send, median of %d rounds of %d**\n\n", sizes.rounds, sizes.sends);
    std::printf("| config | µs per send | × none | Java µs | Java × none |\n|---|---:|---:|---:|---:|\n");
    for (std::size_t i = 0; i < all_configs.size(); ++i) {
        const Config config = all_configs[i];
        std::printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", name_of(config), us[i], us[i] / us[0], java_us(config),
                    java_us(config) / java_us(Config::none));
    }
    const double both = us[3] / us[0];
    std::printf("\naim: both ≤ 1.15× none: %.2f×, %s\n", both, both <= 1.15 ? "met" : "not met");
    for (std::size_t i = 1; i < all_configs.size(); ++i)
        bench::record({.name = std::string("inproc Publisher::send with telemetry: ") + name_of(all_configs[i]),
                       .ours = us[i],
                       .against = "no telemetry",
                       .underneath = us[0],
                       .unit = "us",
                       .aim = all_configs[i] == Config::both ? std::optional<double>(1.15) : std::nullopt});
}

void print_round_trip_table(const std::array<double, 2>& us, const Sizes& sizes) {
    std::printf(
        "\n**(b) send, consume (accept), settle: µs per message, first send to last settlement, median of %d "
        "rounds of %d**\n\n",
        sizes.rounds, sizes.delivered);
    std::printf("| config | µs per message | × none |\n|---|---:|---:|\n");
    std::printf("| none | %.2f | 1.00 |\n| both | %.2f | %.2f |\n", us[0], us[1], us[1] / us[0]);
    bench::record({.name = "inproc send, consume, settle with telemetry: both",
                   .ours = us[1],
                   .against = "no telemetry",
                   .underneath = us[0],
                   .unit = "us/msg"});
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = bench::quick_from_environment();
    std::optional<Config> only;
    for (int i = 1; i < argc; ++i) {
        const std::string argument = argv[i];
        const auto named = std::find_if(all_configs.begin(), all_configs.end(), [&](Config config) {
            return i + 1 < argc && argv[i + 1] == std::string_view(name_of(config));
        });
        if (argument == "--quick") {
            quick = true;
        } else if (argument == "--only" && named != all_configs.end()) {
            only = *named;
            ++i;
        } else {
            std::fprintf(stderr, "usage: %s [--quick] [--only none|metrics|tracing|both]   (or ACEMQ_BENCH_QUICK=1)\n",
                         argv[0]);
            return 2;
        }
    }
    const Sizes& sizes = quick ? quick_sizes : full_sizes;
    const Payment payment{"p-000042", 4250};
    try {
        std::printf("inproc broker, %s: %d rounds, configurations interleaved\n", quick ? "quick" : "full",
                    sizes.rounds);
        std::fflush(stdout);
        if (only) {
            const auto us = interleaved<Sender>(std::array{*only}, sizes.rounds, sizes.sends, payment);
            std::printf("%s: %.2f µs per send\n", name_of(*only), us[0]);
            print_dropped();
            return 0;
        }
        print_send_table(interleaved<Sender>(all_configs, sizes.rounds, sizes.sends, payment), sizes);
        std::fflush(stdout);
        print_round_trip_table(
            interleaved<RoundTrip>(std::array{Config::none, Config::both}, sizes.rounds, sizes.delivered, payment),
            sizes);
        print_dropped();
    } catch (const std::exception& error) {
        std::fprintf(stderr, "telemetry_bench: %s\n", error.what());
        return 1;
    }
    return 0;
}
