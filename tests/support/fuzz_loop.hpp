// The seeded, time-bounded loop of the reliability suite's fuzz tests (tests/reliability/
// test_fuzz.cpp, test_zmq_frames.cpp): each runs for ACEMQ_FUZZ_SECONDS (default 2) from
// ACEMQ_FUZZ_SEED (default fixed, so CI repeats itself); the seed and the count are
// printed, and a finding prints its input in hex.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace testing_support {

using FuzzBytes = std::vector<std::byte>;

inline std::uint64_t fuzz_setting(const char* name, std::uint64_t fallback) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    return std::stoull(text);
}

inline std::string hex(const FuzzBytes& input) {
    std::ostringstream out;
    for (std::byte b : input)
        out << "0123456789abcdef"[std::to_integer<int>(b) >> 4] << "0123456789abcdef"[std::to_integer<int>(b) & 15];
    return out.str();
}

class Loop {
public:
    explicit Loop(std::string_view what) : what_(what), seed_(fuzz_setting("ACEMQ_FUZZ_SEED", 20261201)), rng_(seed_) {
        std::cout << "fuzz " << what_ << ": seed " << seed_ << " (ACEMQ_FUZZ_SEED)\n";
    }
    ~Loop() { std::cout << "fuzz " << what_ << ": " << count_ << " inputs\n"; }

    std::mt19937_64& rng() { return rng_; }
    std::size_t below(std::size_t n) { return n == 0 ? 0 : rng_() % n; }

    // Runs `one` on inputs from `next` until the time is up (at least 200 inputs, so a slow
    // sanitizer build still fuzzes something), reporting the input that escapes.
    void run(const std::function<FuzzBytes()>& next, const std::function<void(const FuzzBytes&)>& one) {
        const auto until =
            std::chrono::steady_clock::now() + std::chrono::seconds(fuzz_setting("ACEMQ_FUZZ_SECONDS", 2));
        while (count_ < 200 || std::chrono::steady_clock::now() < until) {
            const FuzzBytes input = next();
            ++count_;
            try {
                one(input);
            } catch (const std::exception& e) {
                FAIL("input " << count_ << " from seed " << seed_ << " threw " << e.what() << "; input " << hex(input));
            } catch (...) {  // reported as a finding, like the std::exception above
                FAIL("input " << count_ << " from seed " << seed_ << " threw a non-standard exception; input "
                              << hex(input));
            }
        }
        CHECK(count_ >= 200);
    }

    FuzzBytes random_bytes(std::size_t max) {
        FuzzBytes out(below(max + 1));
        for (auto& b : out) b = static_cast<std::byte>(rng_());
        return out;
    }

    // A few bytes changed, dropped, added, repeated, set to a length-like 0xff, or the tail cut.
    FuzzBytes mutated(FuzzBytes body) {
        static constexpr std::string_view interesting =
            "\x00\xff\xc0\xc1\xdc\xdd\xde\xdf\xdb\xc6\xc9\x7f\x80\x90\x9f{}[]\":,\\-0e";
        for (std::size_t k = 1 + below(4); k > 0 && !body.empty(); --k) {
            const std::size_t at = below(body.size());
            const auto where = body.begin() + static_cast<std::ptrdiff_t>(at);
            switch (below(6)) {
            case 0: body[at] = static_cast<std::byte>(rng_()); break;
            case 1: body[at] = static_cast<std::byte>(interesting[below(interesting.size())]); break;
            case 2: body.erase(where); break;
            case 3: body.insert(where, static_cast<std::byte>(rng_())); break;
            case 4: {
                const std::size_t n = 1 + below(std::min<std::size_t>(16, body.size() - at));
                const FuzzBytes slice(where, where + static_cast<std::ptrdiff_t>(n));
                body.insert(where, slice.begin(), slice.end());
                break;
            }
            default: body.resize(at); break;
            }
        }
        return body;
    }

private:
    std::string what_;
    std::uint64_t seed_;
    std::mt19937_64 rng_;
    std::size_t count_ = 0;
};

}  // namespace testing_support
