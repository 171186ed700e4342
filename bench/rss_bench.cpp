// Whether memory stays flat as messages go through: an inproc bus, one consumer accepting
// each message, messages sent in send_all batches of 1,000, a batch only while at most 2,000
// wait to be handled (so never more than 3,000 wait), so that what grows is what the engine
// keeps, not a backlog. The consumer holds its first message until 3,000 wait, so the largest
// backlog of the run is already paid for in the first figure: VmRSS (from
// /proc/self/status) after the first 10,000 messages, when everything is warm, and again
// after 1,000,000 (200,000 with --quick); the aim is that the second is at most 1.1 times
// the first. A figure, never asserted on.
//
// Then what a message held costs: 1,000,000 messages of 64 B (200,000 with --quick) queued in
// an embedded broker that nobody consumes, a memory broker (a non-durable queue, transient
// messages) and a durable one (inproc://NAME?data=FILE, FILE in a temporary directory; a
// durable queue, persistent messages: what the broker keeps in memory beside its file shows
// as it is), sent in send_all batches of 1,000 with BytesCodec so a body is exactly 64 B.
// The figure is (VmRSS after - VmRSS before) / messages, before being once the bus is open,
// the queue declared and 1,000 sent: bytes of RSS a message, beside its 64 B of payload; the
// aim is at most 200 B of overhead a message, i.e. at most (64 + 200) / 64 = 4.125 times the
// payload. Beside it, the heap in use a message (glibc's mallinfo2: bytes malloc has handed out
// and not had back, mmapped blocks included): what the messages keep alive, without the holes
// between them, so that the two together say whether a change moved the live bytes or only
// the heap's layout. Each broker is measured in a process of its own, forked before this one starts a
// thread, so that neither sees the heap the other (or the flow above) left behind.
//
//   build/bench/rss_bench [--quick]   (or ACEMQ_BENCH_QUICK=1)
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <acemq/acemq.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

constexpr std::size_t held_payload = 64;
constexpr double overhead_aim = 200;  // bytes a message beyond its payload

// The bytes malloc has handed out and not had back, mmapped blocks included.
double heap_in_use() {
    const struct mallinfo2 info = mallinfo2();
    return static_cast<double>(info.uordblks + info.hblkhd);
}

// Queues `count` 64 B messages in an embedded broker at `url` that nobody consumes; prints
// and records the RSS a message.
void measure_held(const std::string& kind, const std::string& url, bool durable, std::uint64_t count,
                  const std::string& count_text) {
    acemq::Bus bus = acemq::connect(url, {.origin = "bench@local", .codec = std::make_shared<acemq::BytesCodec>()});
    bus.declare(acemq::Topology{}.queue("bench.held", {.type = acemq::QueueType::classic, .durable = durable}));
    const acemq::Publisher publisher = bus.publisher_to_queue("bench.held", {.persistent = durable});
    const std::vector<acemq::Bytes> batch(chunk, acemq::Bytes(held_payload, std::byte{'x'}));
    bench::keep(publisher.send_all(batch));  // the paths' first allocations, before the first figure
    const double before = vm_rss_kib();
    const double heap_before = heap_in_use();
    for (std::uint64_t sent = 0; sent < count; sent += chunk) bench::keep(publisher.send_all(batch));
    const double after = vm_rss_kib();
    const double per_message = (after - before) * 1024 / static_cast<double>(count);
    const double heap_per_message = (heap_in_use() - heap_before) / static_cast<double>(count);
    std::printf(
        "  %s broker, %s messages of %zu B held: VmRSS %.0f -> %.0f KiB, %.0f B a message, %.0f B over the "
        "payload (aim <= %.0f B); heap in use %.0f B a message\n",
        kind.c_str(), count_text.c_str(), held_payload, before, after, per_message,
        per_message - static_cast<double>(held_payload), overhead_aim, heap_per_message);
    bench::record(
        {.name = "RSS per queued 64 B message, " + kind + " embedded broker, " + count_text + " held, none consumed",
         .ours = per_message,
         .against = "its payload",
         .underneath = static_cast<double>(held_payload),
         .unit = "B",
         .aim = (static_cast<double>(held_payload) + overhead_aim) / static_cast<double>(held_payload)});
    bus.close();
}

// measure_held in a child process, so that its heap starts as this process's did at fork
// (before any thread: the child may start its own). The durable broker's file goes in a
// temporary directory removed afterwards. Whether the child succeeded.
bool held_in_child(bool durable, std::uint64_t count, const std::string& count_text) {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child < 0) throw std::runtime_error("fork failed: cannot measure the held messages in a process of their own");
    if (child == 0) {
        int code = 0;
        std::string directory;
        try {
            if (durable) {
                std::string pattern = (std::filesystem::temp_directory_path() / "acemq-rss-bench.XXXXXX").string();
                if (mkdtemp(pattern.data()) == nullptr)
                    throw std::runtime_error("cannot make a temporary directory for the durable broker's data file");
                directory = pattern;
                measure_held("durable", "inproc://rss-bench-held?data=" + directory + "/held.db", true, count,
                             count_text);
            } else {
                measure_held("memory", "inproc://rss-bench-held", false, count, count_text);
            }
        } catch (const std::exception& error) {
            std::fprintf(stderr, "rss_bench, the %s broker's held messages: %s\n", durable ? "durable" : "memory",
                         error.what());
            code = 1;
        }
        if (!directory.empty()) std::filesystem::remove_all(directory);
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(code);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child) throw std::runtime_error("waitpid failed on the held messages' process");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = bench::quick_from_command_line(argc, argv);
    const std::uint64_t total = quick ? 200'000 : 1'000'000;
    const std::string total_text = quick ? "200 k (quick)" : "1 M";
    bool held = true;
    try {
        std::printf("queued, nobody consuming, send_all batches of %llu:\n", static_cast<unsigned long long>(chunk));
        for (const bool durable : {false, true}) held = held_in_child(durable, total, total_text) && held;
        std::printf("\n");
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
    return held ? 0 : 1;
}
