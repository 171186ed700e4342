// Where the embedded broker's messages are freed: on the thread that publishes, not on the
// consumer's worker that drops the last reference. A message is several heap blocks (itself,
// body, its texts, the header table and the strings of its longer headers), and
// glibc's malloc takes the lock of the arena a block came from when another thread frees
// it; with a publisher and a consumer each at a message every microsecond or two, that lock
// was the busiest in the process (perf, engine_bench's consumer row: 77 % of all futex
// calls, on the publisher's arena). Freed where they were made, the blocks go back to that
// thread's cache, and its next message takes them from there without a lock.
//
// make() gives a message whose last release hands it to this list (a lock-free push);
// free_released(), called by the broker before each publish, frees what is there. Messages
// of at most `most_held_bytes` in all wait: past that a release frees its message itself,
// so a broker that nobody publishes to any more keeps no more than that. The bound is in
// bytes, not messages, for large bodies; it is as large as it is because Publisher::send_all
// encodes a whole batch before it publishes any, and the consumer goes on releasing
// meanwhile (with 256 messages, most of a batch of 1,000 was freed by the consumer again).
// Internal to the inproc broker.
//
// Threads: every member is safe to call from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include <acemq/transport.hpp>

namespace acemq::inproc::detail {

class ReleasedMessages final {
public:
    static constexpr std::size_t most_held_bytes = std::size_t{4} << 20;

    ReleasedMessages() = default;
    ReleasedMessages(const ReleasedMessages&) = delete;
    ReleasedMessages& operator=(const ReleasedMessages&) = delete;
    // Frees what is still held; the last message holds the list, so none is left outside.
    ~ReleasedMessages();

    // `message`, shared; when its last reference drops it waits in `list` to be freed.
    static std::shared_ptr<InboundMessage> make(const std::shared_ptr<ReleasedMessages>& list,
                                                InboundMessage&& message);

    // Frees every message released so far, on the calling thread. One atomic load when none is.
    void free_released() noexcept;

    // What the released messages waiting to be freed weigh, in bytes (for tests).
    std::size_t held_bytes() const noexcept { return held_bytes_.load(std::memory_order_relaxed); }

    // What a message made here counts for against the bound: its heap blocks, roughly.
    static std::size_t weight_of(const InboundMessage& message) noexcept;

private:
    struct Node {
        InboundMessage message;
        std::size_t weight = 0;  // set when released
        Node* next = nullptr;
    };
    struct Release;

    void release(Node* node) noexcept;

    std::atomic<Node*> head_{nullptr};
    std::atomic<std::size_t> held_bytes_{0};
};

}  // namespace acemq::inproc::detail
