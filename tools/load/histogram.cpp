#include "histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace load {

namespace {

void lower_to(std::atomic<std::uint64_t>& target, std::uint64_t value) noexcept {
    std::uint64_t seen = target.load(std::memory_order_relaxed);
    while (value < seen && !target.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {}
}

void raise_to(std::atomic<std::uint64_t>& target, std::uint64_t value) noexcept {
    std::uint64_t seen = target.load(std::memory_order_relaxed);
    while (value > seen && !target.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {}
}

}  // namespace

// Values below 2^bits have a bucket each. Above, a value with bit width w keeps its top
// `bits` bits: bucket width 2^s (s = w - bits) over a lowest value of at least 2^(bits-1+s),
// so the middle of a bucket is within 2^(s-1) / 2^(bits-1+s) = 1/2^bits of any value in it.
// Each shift s past the exact range adds 2^(bits-1) buckets; s reaches 64 - bits.
Histogram::Histogram(int precision_bits) : bits_(precision_bits) {
    if (precision_bits < 1 || precision_bits > 20)
        throw std::invalid_argument("load::Histogram: precision_bits must be between 1 and 20, got " +
                                    std::to_string(precision_bits));
    const std::size_t half = std::size_t{1} << (bits_ - 1);
    buckets_ = (std::size_t{1} << bits_) + static_cast<std::size_t>(64 - bits_) * half;
    counts_ = std::make_unique<std::atomic<std::uint64_t>[]>(buckets_);
    reset();
}

std::size_t Histogram::bucket_of(std::uint64_t value) const noexcept {
    const std::uint64_t exact = std::uint64_t{1} << bits_;
    if (value < exact) return static_cast<std::size_t>(value);
    const int shift = std::bit_width(value) - bits_;
    const std::uint64_t half = exact >> 1;
    const std::uint64_t mantissa = value >> shift;
    return static_cast<std::size_t>(exact + static_cast<std::uint64_t>(shift - 1) * half + (mantissa - half));
}

std::uint64_t Histogram::bucket_lowest(std::size_t bucket) const noexcept {
    const std::uint64_t exact = std::uint64_t{1} << bits_;
    if (bucket < exact) return bucket;
    const std::uint64_t half = exact >> 1;
    const std::uint64_t rest = bucket - exact;
    const int shift = static_cast<int>(rest / half) + 1;
    return (rest % half + half) << shift;
}

std::uint64_t Histogram::bucket_highest(std::size_t bucket) const noexcept {
    const std::uint64_t exact = std::uint64_t{1} << bits_;
    if (bucket < exact) return bucket;
    const int shift = static_cast<int>((bucket - exact) / (exact >> 1)) + 1;
    return bucket_lowest(bucket) + ((std::uint64_t{1} << shift) - 1);
}

// min and max before the bucket, released with it: a reader that sees the sample in its
// bucket (acquire) sees bounds that include it.
void Histogram::record(std::uint64_t value) noexcept {
    lower_to(min_, value);
    raise_to(max_, value);
    count_.fetch_add(1, std::memory_order_relaxed);
    counts_[bucket_of(value)].fetch_add(1, std::memory_order_release);
}

void Histogram::merge(const Histogram& other) {
    if (other.bits_ != bits_)
        throw std::invalid_argument("load::Histogram: cannot merge a histogram of " + std::to_string(other.bits_) +
                                    " precision bits into one of " + std::to_string(bits_));
    // The buckets first (acquire), then the bounds: those include every sample read.
    std::vector<std::uint64_t> seen(buckets_);
    std::uint64_t added = 0;
    for (std::size_t i = 0; i < buckets_; ++i) added += seen[i] = other.counts_[i].load(std::memory_order_acquire);
    if (added == 0) return;
    lower_to(min_, other.min_.load(std::memory_order_relaxed));
    raise_to(max_, other.max_.load(std::memory_order_relaxed));
    count_.fetch_add(added, std::memory_order_relaxed);
    for (std::size_t i = 0; i < buckets_; ++i)
        if (seen[i] != 0) counts_[i].fetch_add(seen[i], std::memory_order_release);
}

void Histogram::reset() noexcept {
    for (std::size_t i = 0; i < buckets_; ++i) counts_[i].store(0, std::memory_order_relaxed);
    count_.store(0, std::memory_order_relaxed);
    min_.store(UINT64_MAX, std::memory_order_relaxed);
    max_.store(0, std::memory_order_relaxed);
}

std::uint64_t Histogram::count() const noexcept { return count_.load(std::memory_order_relaxed); }

std::uint64_t Histogram::min() const noexcept { return count() == 0 ? 0 : min_.load(std::memory_order_relaxed); }

std::uint64_t Histogram::max() const noexcept { return max_.load(std::memory_order_relaxed); }

std::uint64_t Histogram::percentile(double p) const noexcept {
    // One pass reads the buckets as they are now; counting them, not count_, keeps the rank
    // consistent with what the walk below sees while other threads record.
    std::vector<std::uint64_t> seen(buckets_);
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < buckets_; ++i) total += seen[i] = counts_[i].load(std::memory_order_acquire);
    if (total == 0) return 0;
    const std::uint64_t lowest = min_.load(std::memory_order_relaxed);
    const std::uint64_t highest = max_.load(std::memory_order_relaxed);
    if (p <= 0) return lowest;
    if (p >= 100) return highest;
    const double wanted = std::ceil(p / 100.0 * static_cast<double>(total));
    const std::uint64_t rank = wanted < 1 ? 1 : static_cast<std::uint64_t>(wanted);
    std::uint64_t below = 0;
    for (std::size_t i = 0; i < buckets_; ++i) {
        below += seen[i];
        if (below < rank) continue;
        const std::uint64_t low = bucket_lowest(i);
        const std::uint64_t middle = low + (bucket_highest(i) - low + 1) / 2;
        return std::min(std::max(middle, lowest), highest);
    }
    return highest;
}

}  // namespace load
