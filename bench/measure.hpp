// A small timing harness for side-by-side benchmarks: each figure is the median of several
// timed runs of a loop, so one noisy run does not decide it. Benchmarks print figures;
// they never assert on them (speed is a measurement, not a test). Each also records its
// comparisons (record() below) for bench/run's table.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <acemq/json_codec.hpp>

namespace bench {

// Keeps the optimiser from deleting work whose result nobody reads.
template <class T>
inline void keep(const T& value) {
    asm volatile("" : : "g"(&value) : "memory");
}

// ACEMQ_BENCH_QUICK set (and not "0"): the short run, as --quick asks.
inline bool quick_from_environment() {
    const char* quick = std::getenv("ACEMQ_BENCH_QUICK");
    return quick != nullptr && *quick != '\0' && std::string(quick) != "0";
}

// For a bench whose one option is --quick: whether it or ACEMQ_BENCH_QUICK asks for the
// short run. Anything else on the command line prints the usage and exits with 2.
inline bool quick_from_command_line(int argc, char** argv) {
    bool quick = quick_from_environment();
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) != "--quick") {
            std::fprintf(stderr, "usage: %s [--quick]   (or ACEMQ_BENCH_QUICK=1)\n", argv[0]);
            std::exit(2);
        }
        quick = true;
    }
    return quick;
}

// The value `fraction` of the way through `values` in order (0.5: the median, 0.99: p99),
// the nearest sample; 0 for none.
inline double percentile(std::vector<double> values, double fraction) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const auto index = static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1) + 0.5);
    return values[std::min(index, values.size() - 1)];
}

// The median, halfway between the two middle values when there is an even number.
inline double median(std::vector<double> values) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const std::size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// Nanoseconds per call of `body`, the median of `runs` runs of about `run_time` each; the
// quick run (ACEMQ_BENCH_QUICK) does at most 3 runs of a third of that.
template <class Body>
double ns_per_op(Body&& body, int runs = 7, std::chrono::milliseconds run_time = std::chrono::milliseconds(150)) {
    using clock = std::chrono::steady_clock;
    if (quick_from_environment()) {
        runs = std::min(runs, 3);
        run_time /= 3;
    }
    std::size_t batch = 1;
    for (;;) {  // grow the batch until one batch takes about a tenth of a run
        const auto start = clock::now();
        for (std::size_t i = 0; i < batch; ++i) body();
        if (clock::now() - start > run_time / 10) break;
        batch *= 2;
    }
    std::vector<double> figures;
    for (int run = 0; run < runs; ++run) {
        std::size_t done = 0;
        const auto start = clock::now();
        auto elapsed = clock::duration::zero();
        while (elapsed < run_time) {
            for (std::size_t i = 0; i < batch; ++i) body();
            done += batch;
            elapsed = clock::now() - start;
        }
        figures.push_back(std::chrono::duration<double, std::nano>(elapsed).count() / static_cast<double>(done));
    }
    std::nth_element(figures.begin(), figures.begin() + runs / 2, figures.end());
    return figures[static_cast<std::size_t>(runs / 2)];
}

inline void report(const std::string& what, double ns) { std::printf("  %-52s %9.1f ns/op\n", what.c_str(), ns); }

inline void report_ratio(const std::string& what, double ours_ns, double raw_ns) {
    std::printf("  %-52s %9.2f x raw\n", what.c_str(), ours_ns / raw_ns);
}

// ---- the machine-readable seam: what bench/run reads ------------------------------------

// Which way the ratio ours / underneath should go to be better.
enum class Better { lower, higher };

// One comparison: a figure of ours against the figure of what lies underneath (or the
// baseline), measured in the same run, in the same unit.
struct Row {
    std::string name;                          // the path measured, as bench/run's table names it
    double ours;                               // its figure
    std::string against;                       // what underneath (or the baseline) is
    double underneath;                         // its figure
    std::string unit;                          // of both figures: "ns/op", "us", "ms", "msg/s", "KiB"
    std::optional<double> aim = std::nullopt;  // the aim for ours / underneath; none: shown, not judged
    Better better = Better::lower;             // lower: aim is "<=", higher: aim is ">="
    // The ratio as the bench judges it when that is not ours / underneath: the median of
    // per-round ratios, which a shift of the machine's speed between rounds moves less.
    std::optional<double> ratio = std::nullopt;
};

namespace detail {

// JSON has no NaN or infinity: a figure that is not finite (a ratio over zero) is null.
inline std::string json_number(double value) {
    if (!std::isfinite(value)) return "null";
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

// This process's command line, from /proc/self/cmdline (arguments separated by NULs).
inline std::string command_line() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    while (!text.empty() && text.back() == '\0') text.pop_back();
    std::replace(text.begin(), text.end(), '\0', ' ');
    return text;
}

// Appends one JSON object as a line to $ACEMQ_BENCH_JSON; nothing when it is not set.
inline void append_json_line(const std::string& fields) {
    const char* path = std::getenv("ACEMQ_BENCH_JSON");
    if (path == nullptr || *path == '\0') return;
    std::ofstream out(path, std::ios::app);
    out << "{" << fields << ", \"command\": " << acemq::json_quoted(command_line()) << "}\n";
    out.flush();
    if (!out)
        throw std::runtime_error(std::string("cannot append to ") + path +
                                 " (ACEMQ_BENCH_JSON): check that its directory exists and is writable");
}

}  // namespace detail

// Records `row` for bench/run as a JSON line in the file $ACEMQ_BENCH_JSON names, when it is
// set; the human-readable prints are the bench's own. The ratio is row.ratio when given,
// else ours / underneath.
inline void record(const Row& row) {
    detail::append_json_line(
        "\"kind\": \"row\", \"name\": " + acemq::json_quoted(row.name) +
        ", \"ours\": " + detail::json_number(row.ours) + ", \"against\": " + acemq::json_quoted(row.against) +
        ", \"underneath\": " + detail::json_number(row.underneath) + ", \"unit\": " + acemq::json_quoted(row.unit) +
        ", \"ratio\": " + detail::json_number(row.ratio.value_or(row.ours / row.underneath)) +
        ", \"aim\": " + (row.aim ? detail::json_number(*row.aim) : std::string("null")) +
        ", \"better\": " + acemq::json_quoted(row.better == Better::lower ? "lower" : "higher"));
}

// Records one figure alone under `key`, for a comparison another program completes
// (bench/pika_bench.py reads amqp_bench's figures to set python3-pika beside them).
inline void record_figure(const std::string& key, double value, const std::string& unit) {
    detail::append_json_line("\"kind\": \"figure\", \"key\": " + acemq::json_quoted(key) +
                             ", \"value\": " + detail::json_number(value) + ", \"unit\": " + acemq::json_quoted(unit));
}

}  // namespace bench
