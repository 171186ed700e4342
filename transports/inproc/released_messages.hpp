// Where the embedded broker's messages are freed: on the thread that publishes, not on the
// consumer's worker that drops the last reference. A message is a heap block (two with a
// body past 2 KiB: detail/message_block.hpp), and glibc's malloc takes the lock of the arena
// a block came from when another thread frees it; with a publisher and a consumer each at a
// message every microsecond or two, that lock was the busiest in the process (perf,
// engine_bench's consumer row: 77 % of all futex calls, on the publisher's arena). Freed
// where they were made, the blocks go back to that thread's cache, and its next message takes
// them from there without a lock.
//
// make() gives a message whose last release hands its block to this list (a lock-free push);
// free_released(), called by the broker before each publish, frees what is there. Messages
// of at most `most_held_bytes` in all wait: past that a release frees its message itself,
// so a broker that nobody publishes to any more keeps no more than that. The bound is in
// bytes, not messages, for large bodies; it is as large as it is because Publisher::send_all
// encodes a whole batch before it publishes any, and the consumer goes on releasing
// meanwhile (with 256 messages, most of a batch of 1,000 was freed by the consumer again).
// The list lives as long as its owner (the broker) or any message it made, whichever is last:
// a message a handler still holds when the broker goes is freed when it is released.
// Internal to the inproc broker.
//
// Threads: every member is safe to call from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include <acemq/transport.hpp>

namespace acemq::inproc::detail {

class ReleasedMessages final : public acemq::detail::MessageReleaser {
public:
    static constexpr std::size_t most_held_bytes = std::size_t{4} << 20;

    // The owner's hold: dropping it frees what is held now, and the list itself once every
    // message it made has been released.
    struct Drop {
        void operator()(ReleasedMessages* list) const noexcept;
    };
    using Owned = std::unique_ptr<ReleasedMessages, Drop>;
    static Owned create() { return Owned(new ReleasedMessages); }

    ReleasedMessages(const ReleasedMessages&) = delete;
    ReleasedMessages& operator=(const ReleasedMessages&) = delete;

    // The delivery of `message` as published: when its last copy goes, its block waits here
    // to be freed.
    InboundMessage make(OutboundMessage&& message);

    // Frees every message released so far, on the calling thread. One atomic load when none is.
    void free_released() noexcept;

    // What the released messages waiting to be freed weigh, in bytes (for tests).
    std::size_t held_bytes() const noexcept { return held_bytes_.load(std::memory_order_relaxed); }
    // How many lists exist in the process (for tests: one outliving its owner goes with its
    // last message).
    static std::size_t lists() noexcept { return lists_.load(std::memory_order_relaxed); }

    // MessageReleaser: the last release of a block made here (any thread).
    void release(acemq::detail::MessageBlock* block) noexcept override;

private:
    ReleasedMessages() noexcept { lists_.fetch_add(1, std::memory_order_relaxed); }
    ~ReleasedMessages();
    // One hold fewer (the owner's or a message's); the last one deletes the list.
    void drop() noexcept;

    std::atomic<acemq::detail::MessageBlock*> head_{nullptr};
    std::atomic<std::size_t> held_bytes_{0};
    std::atomic<std::size_t> holds_{1};  // the owner's, and one for each message not yet released
    static std::atomic<std::size_t> lists_;
};

}  // namespace acemq::inproc::detail
