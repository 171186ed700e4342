// What acemq-load is asked to do, read from its command line. Every option has a default,
// so `acemq-load` alone runs a short in-process load; `--help` prints help_text().
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace load {

using Nanos = std::chrono::nanoseconds;

enum class QueueKind { classic, quorum };

struct Options {
    std::string url = "inproc://acemq-load";
    std::string queue = "acemq.load";
    QueueKind queue_type = QueueKind::classic;
    double rate = 1000;  // offered messages per second, over all publisher threads
    std::size_t size = 512;
    int publishers = 1;
    std::size_t window = 32;
    int consumers = 1;
    std::uint16_t prefetch = 100;
    Nanos handler_time{0};
    double failure_rate = 0;
    int attempts = 1;
    Nanos retry_delay = std::chrono::milliseconds(100);
    Nanos duration = std::chrono::seconds(30);
    Nanos warmup = std::chrono::seconds(5);
    Nanos drain = std::chrono::seconds(10);
    Nanos lag_bound = std::chrono::milliseconds(1);
    std::uint64_t min_samples = 10000;
    std::optional<std::string> json{};  // a file, or "-" for standard output
    bool keep_queue = false;
    bool progress = false;  // whole progress lines every progress_every, terminal or not
    Nanos progress_every = std::chrono::seconds(5);
    bool help = false;
};

// A command line that cannot be run as given; what() names the option and what it wants.
class UsageProblem : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The smallest message that carries the due time and the sequence number.
inline constexpr std::size_t header_bytes = 16;

// Throws UsageProblem for an unknown option, a missing or malformed value, or values that
// contradict each other.
Options parse_options(int argc, char** argv);
std::string help_text();

// "250us", "500ms", "30s", "2m", "1.5s": a number with a unit; a bare number is refused
// (which unit it meant is a guess). Throws UsageProblem naming `option`.
Nanos parse_duration(const std::string& option, const std::string& text);

}  // namespace load
