#include <acemq/uuid.hpp>

#include <pthread.h>
#include <sys/random.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <system_error>

#include <acemq/error.hpp>

namespace acemq {

namespace {

// Random bytes are drawn from the kernel in blocks, so an id costs no system call most of
// the time. A forked child must not reuse the parent's unspent block: the fork generation
// invalidates every thread's block.
std::atomic<unsigned> fork_generation{0};
const int fork_hook_installed = pthread_atfork(nullptr, nullptr, [] { ++fork_generation; });

class RandomPool {
public:
    void fill(unsigned char* out, std::size_t count) {
        if (generation_ != fork_generation.load(std::memory_order_relaxed) || used_ + count > block_.size()) {
            refill();
        }
        std::memcpy(out, block_.data() + used_, count);
        used_ += count;
    }

private:
    void refill() {
        std::size_t filled = 0;
        while (filled < block_.size()) {
            ssize_t got = getrandom(block_.data() + filled, block_.size() - filled, 0);
            if (got < 0) {
                if (errno == EINTR) continue;
                throw Error(
                    "acemq: the kernel's random source (getrandom) failed: " + std::generic_category().message(errno) +
                    "; no message id can be made without it, so let the process call getrandom "
                    "(a seccomp filter or a container profile may forbid it)");
            }
            filled += static_cast<std::size_t>(got);
        }
        used_ = 0;
        generation_ = fork_generation.load(std::memory_order_relaxed);
    }

    std::array<unsigned char, 4096> block_{};
    std::size_t used_ = block_.size();
    unsigned generation_ = 0;
};

}  // namespace

std::string new_uuid() {
    (void)fork_hook_installed;
    thread_local RandomPool pool;
    std::array<unsigned char, 16> bytes;
    pool.fill(bytes.data(), bytes.size());
    bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0F) | 0x40);  // version 4
    bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3F) | 0x80);  // RFC 4122 variant

    // Two digits a byte from one table, the dashes where they stand: every message pays for an id.
    static constexpr auto digit_pairs = [] {
        constexpr char hex[] = "0123456789abcdef";
        std::array<char, 512> pairs{};
        for (std::size_t value = 0; value < 256; ++value) {
            pairs[2 * value] = hex[value >> 4];
            pairs[2 * value + 1] = hex[value & 0x0F];
        }
        return pairs;
    }();
    static constexpr std::array<std::uint8_t, 16> offsets{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};
    std::string text(36, '-');
    for (std::size_t i = 0; i < bytes.size(); ++i) std::memcpy(&text[offsets[i]], &digit_pairs[2 * bytes[i]], 2);
    return text;
}

bool is_canonical_uuid(std::string_view text) noexcept {
    if (text.size() != 36) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return false;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

}  // namespace acemq
