// A log-bucketed latency histogram in the manner of HdrHistogram (Debian packages no C++
// one): values are nanoseconds, each bucket keeps `precision_bits` significant bits, so a
// percentile is within 1/2^precision_bits of the exact one (values below 2^precision_bits
// are kept exactly), and min, max and count are exact.
//
//   load::Histogram e2e;                     // precision_bits 10: within 0.1 %
//   e2e.record(latency_ns);                  // lock-free, from any number of threads
//   total.merge(e2e);                        // the same samples as if recorded into total
//   total.percentile(99.9);                  // the value at rank ceil(p/100 * count)
//
// Recording is a relaxed atomic increment, so threads may record into one histogram, and a
// reader (the progress line) may read it while they do: what it sees is a moment's view,
// possibly missing samples being recorded, never torn.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace load {

class Histogram {
public:
    static constexpr int default_precision_bits = 10;

    // Throws std::invalid_argument unless 1 <= precision_bits <= 20.
    explicit Histogram(int precision_bits = default_precision_bits);
    Histogram(const Histogram&) = delete;
    Histogram& operator=(const Histogram&) = delete;

    void record(std::uint64_t value) noexcept;
    // Adds every sample of `other`; both must have the same precision (std::invalid_argument).
    void merge(const Histogram& other);
    void reset() noexcept;

    std::uint64_t count() const noexcept;
    std::uint64_t min() const noexcept;  // 0 when empty
    std::uint64_t max() const noexcept;  // 0 when empty
    // The smallest recorded value v such that at least p % of the samples are <= v, as the
    // middle of its bucket (clamped to [min, max]): within max_relative_error() of the
    // exact one. percentile(0) is min(), percentile(100) is max(); 0 when empty.
    std::uint64_t percentile(double p) const noexcept;

    int precision_bits() const noexcept { return bits_; }
    double max_relative_error() const noexcept { return 1.0 / static_cast<double>(std::uint64_t{1} << bits_); }

    // The bucket layout, for the tests: which bucket a value falls in, and that bucket's bounds.
    std::size_t bucket_of(std::uint64_t value) const noexcept;
    std::uint64_t bucket_lowest(std::size_t bucket) const noexcept;
    std::uint64_t bucket_highest(std::size_t bucket) const noexcept;
    std::size_t bucket_count() const noexcept { return buckets_; }

private:
    int bits_;
    std::size_t buckets_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;
    std::atomic<std::uint64_t> count_{0};
    std::atomic<std::uint64_t> min_{UINT64_MAX};
    std::atomic<std::uint64_t> max_{0};
};

}  // namespace load
