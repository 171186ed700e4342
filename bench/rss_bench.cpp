// Whether memory stays flat as messages go through: an inproc bus, one consumer accepting
// each message, messages sent in send_all batches of 1,000, a batch only while at most 2,000
// wait to be handled (so never more than 3,000 wait), so that what grows is what the engine
// keeps, not a backlog. The consumer holds its first message until 3,000 wait, so the largest
// backlog of the run is already paid for in the first figure: VmRSS (from
// /proc/self/status) after the first 10,000 messages, when everything is warm, and again
// after 1,000,000 (200,000 with --quick); the aim is that the second is at most 1.1 times
// the first. A figure, never asserted on.
//
//   build/bench/rss_bench [--quick]   (or ACEMQ_BENCH_QUICK=1)
#include <acemq/acemq.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "measure.hpp"

using namespace std::chrono_literals;

namespace {

struct Order {
    std::string order_id;
    std::int64_t total_cents;
};

constexpr std::uint64_t chunk = 1'000;
constexpr std::uint64_t most_waiting = 2'000;
constexpr std::uint64_t largest_backlog = most_waiting + chunk;
constexpr std::uint64_t first_count = 10'000;

// This process's resident set, in KiB.
double vm_rss_kib() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6));
    throw std::runtime_error("no VmRSS line in /proc/self/status: this bench reads Linux's /proc");
}

// Waits until the consumer has handled `count` messages; throws when it stops making progress.
void wait_until(const std::atomic<std::uint64_t>& handled, std::uint64_t count) {
    auto last_progress = std::chrono::steady_clock::now();
    std::uint64_t seen = handled.load();
    while (seen < count) {
        std::this_thread::sleep_for(100us);
        const std::uint64_t now = handled.load();
        if (now != seen) {
            seen = now;
            last_progress = std::chrono::steady_clock::now();
        } else if (std::chrono::steady_clock::now() - last_progress > 30s) {
            throw std::runtime_error("the consumer handled nothing for 30 s, at " + std::to_string(seen) + " of " +
                                     std::to_string(count));
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = bench::quick_from_command_line(argc, argv);
    const std::uint64_t total = quick ? 200'000 : 1'000'000;
    try {
        acemq::Bus bus = acemq::connect("inproc://rss-bench", {.origin = "bench@local"});
        bus.declare(acemq::Topology{}.queue("bench.rss", {.type = acemq::QueueType::classic}));
        std::atomic<std::uint64_t> handled{0};
        std::promise<void> backlog_filled;
        std::atomic<bool> backlog_was_filled{false};
        const std::shared_future<void> backlog_filled_once = backlog_filled.get_future().share();
        // The handler's wait is bounded, so that a bench gone wrong ends (with the figure of
        // a smaller backlog).
        acemq::Consumer consumer = bus.consume<Order>("bench.rss",
                                                      [&](const acemq::Message<Order>&) {
                                                          if (!backlog_was_filled.load(std::memory_order_acquire))
                                                              backlog_filled_once.wait_for(30s);
                                                          handled.fetch_add(1, std::memory_order_relaxed);
                                                          return acemq::accept();
                                                      },
                                                      {.prefetch = 200});
        acemq::Publisher publisher = bus.publisher_to_queue("bench.rss");
        const std::vector<Order> batch(chunk, Order{"o-1", 4250});
        std::uint64_t sent = 0;
        auto send_until = [&](std::uint64_t count) {
            while (sent < count) {
                if (sent >= largest_backlog && !backlog_was_filled.exchange(true)) backlog_filled.set_value();
                if (sent >= most_waiting) wait_until(handled, sent - most_waiting);
                bench::keep(publisher.send_all(batch));
                sent += chunk;
            }
            wait_until(handled, count);
        };
        std::printf("inproc bus, one consumer, send_all batches of %llu, at most %llu waiting (the first %llu held)\n",
                    static_cast<unsigned long long>(chunk), static_cast<unsigned long long>(largest_backlog),
                    static_cast<unsigned long long>(largest_backlog));
        // The points between show whether the growth levels off (warming up) or keeps on (a leak).
        double first = 0, last = 0;
        for (const std::uint64_t point : {first_count, total / 10, total / 4, total / 2, total}) {
            if (sent > 0 && point <= sent) continue;
            send_until(point);
            last = vm_rss_kib();
            if (point == first_count) first = last;
            std::printf("  VmRSS after %8llu messages %35.0f KiB\n", static_cast<unsigned long long>(point), last);
        }
        consumer.close();
        bus.close();

        const std::string total_text = quick ? "200 k (quick)" : "1 M";
        std::printf("  %-52s %9.2f x\n", ("after " + total_text + " / after 10 k").c_str(), last / first);
        bench::record({.name = "RSS after " + total_text + " in-process messages",
                       .ours = last,
                       .against = "RSS after 10 k",
                       .underneath = first,
                       .unit = "KiB",
                       .aim = 1.1});
    } catch (const std::exception& error) {
        std::fprintf(stderr, "rss_bench: %s\n", error.what());
        return 1;
    }
    return 0;
}
