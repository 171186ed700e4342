// A small timing harness for side-by-side benchmarks: each figure is the median of several
// timed runs of a loop, so one noisy run does not decide it. Benchmarks print figures;
// they never assert on them (speed is a measurement, not a test).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace bench {

// Keeps the optimiser from deleting work whose result nobody reads.
template <class T>
inline void keep(const T& value) {
    asm volatile("" : : "g"(&value) : "memory");
}

// The value `fraction` of the way through `values` in order (0.5: the median, 0.99: p99),
// the nearest sample; 0 for none.
// ACEMQ_BENCH_QUICK set (and not "0"): the short run, as --quick asks.
inline bool quick_from_environment() {
    const char* quick = std::getenv("ACEMQ_BENCH_QUICK");
    return quick != nullptr && *quick != '\0' && std::string(quick) != "0";
}

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

// Nanoseconds per call of `body`, the median of `runs` runs of about `run_time` each.
template <class Body>
double ns_per_op(Body&& body, int runs = 7, std::chrono::milliseconds run_time = std::chrono::milliseconds(150)) {
    using clock = std::chrono::steady_clock;
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

}  // namespace bench
