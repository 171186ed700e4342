// The load generator's histogram against exact percentiles computed by sorting: every
// percentile within 1/2^precision_bits of the exact one, min, max and count exact, merging
// the same as recording into one, recording from several threads losing nothing.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "histogram.hpp"

namespace {

const std::vector<double> percentiles{0, 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100};

// The value at rank ceil(p/100 * n), as the histogram defines its percentile.
std::uint64_t exact_percentile(std::vector<std::uint64_t> sorted, double p) {
    if (p <= 0) return sorted.front();
    if (p >= 100) return sorted.back();
    const double wanted = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
    const std::size_t rank = wanted < 1 ? 1 : static_cast<std::size_t>(wanted);
    return sorted[rank - 1];
}

// |reported - exact| <= exact / 2^bits, in integers so that no rounding hides a miss.
bool within_error(std::uint64_t reported, std::uint64_t exact, int bits) {
    const std::uint64_t difference = reported > exact ? reported - exact : exact - reported;
    return static_cast<long double>(difference) * static_cast<long double>(std::uint64_t{1} << bits) <=
           static_cast<long double>(exact);
}

void check_against_sorting(std::vector<std::uint64_t> values, int bits) {
    load::Histogram histogram(bits);
    for (const std::uint64_t v : values) histogram.record(v);
    std::sort(values.begin(), values.end());
    REQUIRE(histogram.count() == values.size());
    REQUIRE(histogram.min() == values.front());
    REQUIRE(histogram.max() == values.back());
    for (const double p : percentiles) {
        const std::uint64_t exact = exact_percentile(values, p);
        const std::uint64_t reported = histogram.percentile(p);
        INFO("p" << p << " exact " << exact << " reported " << reported << " precision bits " << bits);
        REQUIRE(within_error(reported, exact, bits));
    }
}

}  // namespace

TEST_CASE("buckets tile every 64-bit value, each no wider than the stated error allows", "[load][histogram]") {
    for (const int bits : {1, 4, 7, 10}) {
        const load::Histogram h(bits);
        INFO("precision bits " << bits);
        REQUIRE(h.bucket_lowest(0) == 0);
        REQUIRE(h.bucket_highest(h.bucket_count() - 1) == UINT64_MAX);
        for (std::size_t i = 0; i + 1 < h.bucket_count(); ++i) {
            REQUIRE(h.bucket_highest(i) + 1 == h.bucket_lowest(i + 1));
            REQUIRE(h.bucket_of(h.bucket_lowest(i)) == i);
            REQUIRE(h.bucket_of(h.bucket_highest(i)) == i);
            // Half the width, the most the middle is from any value in the bucket, against
            // the smallest value in it.
            const std::uint64_t half_width = (h.bucket_highest(i) - h.bucket_lowest(i) + 1) / 2;
            REQUIRE(within_error(h.bucket_lowest(i) + half_width, h.bucket_lowest(i), bits));
        }
    }
}

TEST_CASE("values below 2^precision_bits are kept exactly", "[load][histogram]") {
    load::Histogram h(7);
    std::vector<std::uint64_t> values;
    for (std::uint64_t v = 0; v < 128; ++v)
        for (std::uint64_t copies = 0; copies <= v % 3; ++copies) values.push_back(v);
    for (const std::uint64_t v : values) h.record(v);
    std::sort(values.begin(), values.end());
    for (const double p : percentiles) REQUIRE(h.percentile(p) == exact_percentile(values, p));
}

TEST_CASE("random distributions: percentiles within the stated error of sorting", "[load][histogram]") {
    std::mt19937_64 random(20261202);
    const std::size_t n = 200000;
    auto draw = [&](auto distribution) {
        std::vector<std::uint64_t> values(n);
        for (auto& v : values) v = static_cast<std::uint64_t>(std::max(0.0, static_cast<double>(distribution(random))));
        return values;
    };
    for (const int bits : {4, 7, 10}) {
        SECTION("uniform over a second, precision bits " + std::to_string(bits)) {
            check_against_sorting(draw(std::uniform_int_distribution<std::uint64_t>(0, 1'000'000'000)), bits);
        }
        SECTION("log-normal around 200 us, precision bits " + std::to_string(bits)) {
            check_against_sorting(draw(std::lognormal_distribution<double>(std::log(200'000.0), 1.0)), bits);
        }
        SECTION("exponential, mean 1 ms, precision bits " + std::to_string(bits)) {
            check_against_sorting(draw(std::exponential_distribution<double>(1e-6)), bits);
        }
        SECTION("uniform over all 64 bits, precision bits " + std::to_string(bits)) {
            check_against_sorting(draw(std::uniform_int_distribution<std::uint64_t>(0, UINT64_MAX)), bits);
        }
    }
}

TEST_CASE("adversarial distributions", "[load][histogram]") {
    const load::Histogram layout(10);
    SECTION("one value, many times: every percentile is that value exactly") {
        load::Histogram h(10);
        for (int i = 0; i < 1000; ++i) h.record(123'456'789);
        for (const double p : percentiles) REQUIRE(h.percentile(p) == 123'456'789);
    }
    SECTION("a single sample") {
        load::Histogram h(10);
        h.record(987'654'321'000);
        REQUIRE(h.count() == 1);
        for (const double p : percentiles) REQUIRE(h.percentile(p) == 987'654'321'000);
    }
    SECTION("only the edges of buckets") {
        std::vector<std::uint64_t> values;
        for (std::size_t i = 1000; i < layout.bucket_count(); i += 997) {
            values.push_back(layout.bucket_lowest(i));
            values.push_back(layout.bucket_highest(i));
        }
        check_against_sorting(values, 10);
    }
    SECTION("powers of two and their neighbours, up to the largest value") {
        std::vector<std::uint64_t> values{0, 1, UINT64_MAX, UINT64_MAX - 1};
        for (int shift = 1; shift < 64; ++shift) {
            const std::uint64_t power = std::uint64_t{1} << shift;
            values.insert(values.end(), {power - 1, power, power + 1});
        }
        check_against_sorting(values, 10);
        check_against_sorting(values, 1);
    }
    SECTION("a tail of 0.1 % a thousand times slower than the rest") {
        std::vector<std::uint64_t> values;
        for (int i = 0; i < 99900; ++i) values.push_back(100'000 + static_cast<std::uint64_t>(i % 50));
        for (int i = 0; i < 100; ++i) values.push_back(100'000'000 + static_cast<std::uint64_t>(i) * 7919);
        check_against_sorting(values, 10);
    }
    SECTION("values far apart: the percentile is one of them, not something between") {
        load::Histogram h(10);
        h.record(1);
        h.record(1'000'000'000'000'000);
        REQUIRE(h.percentile(50) == 1);
        REQUIRE(h.percentile(50.1) == 1'000'000'000'000'000);
    }
    SECTION("an empty histogram reports zeros") {
        const load::Histogram h(10);
        REQUIRE(h.count() == 0);
        REQUIRE(h.min() == 0);
        REQUIRE(h.max() == 0);
        REQUIRE(h.percentile(99) == 0);
    }
}

TEST_CASE("merging is the same as recording into one histogram", "[load][histogram]") {
    std::mt19937_64 random(7);
    std::lognormal_distribution<double> latency(std::log(500'000.0), 1.5);
    load::Histogram all(10), first(10), second(10), merged(10);
    for (int i = 0; i < 50000; ++i) {
        const auto v = static_cast<std::uint64_t>(latency(random));
        all.record(v);
        (i % 3 == 0 ? first : second).record(v);
    }
    const load::Histogram empty(10);
    merged.merge(first);
    merged.merge(empty);
    merged.merge(second);
    REQUIRE(merged.count() == all.count());
    REQUIRE(merged.min() == all.min());
    REQUIRE(merged.max() == all.max());
    for (const double p : percentiles) REQUIRE(merged.percentile(p) == all.percentile(p));

    load::Histogram coarse(7);
    REQUIRE_THROWS_AS(merged.merge(coarse), std::invalid_argument);
    REQUIRE_THROWS_AS(load::Histogram(0), std::invalid_argument);
    REQUIRE_THROWS_AS(load::Histogram(21), std::invalid_argument);
}

TEST_CASE("threads recording into one histogram lose no sample", "[load][histogram]") {
    load::Histogram shared(10), alone(10);
    const int threads = 4, each = 100000;
    auto value = [](int thread, int i) {
        return static_cast<std::uint64_t>(thread) * 1'000'003 + static_cast<std::uint64_t>(i) * 977;
    };
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            for (int i = 0; i < each; ++i) shared.record(value(t, i));
        });
    for (auto& worker : workers) worker.join();
    for (int t = 0; t < threads; ++t)
        for (int i = 0; i < each; ++i) alone.record(value(t, i));
    REQUIRE(shared.count() == static_cast<std::uint64_t>(threads * each));
    REQUIRE(shared.min() == alone.min());
    REQUIRE(shared.max() == alone.max());
    for (const double p : percentiles) REQUIRE(shared.percentile(p) == alone.percentile(p));
}
