// The delivery tags a client hands to Delivery: the session's generation in the top 16 bits,
// the broker's tag below, so that a settlement of a delivery from before a reconnect can be
// told apart and dropped (the broker has already given that message back to its queue, and
// its tag may now mean another message). Internal.
#pragma once

#include <cstdint>

namespace acemq::session {

inline constexpr int generation_shift = 48;

inline std::uint64_t tag_for(std::uint64_t generation, std::uint64_t broker_tag) {
    return (generation << generation_shift) | broker_tag;
}
inline std::uint64_t generation_of(std::uint64_t tag) { return tag >> generation_shift; }
inline std::uint64_t broker_tag_of(std::uint64_t tag) { return tag & ((std::uint64_t{1} << generation_shift) - 1); }

// The generation of each new session: 1 to 65535 and round again, never 0 (which stands for
// "no session"), so that the tags of one session are not taken for the next one's.
class Generations {
public:
    std::uint64_t next() {
        current_ = current_ % 0xffff + 1;
        return current_;
    }

private:
    std::uint64_t current_ = 0;
};

}  // namespace acemq::session
