// A bounded queue of many producers and one consumer that never blocks a producer: a push
// into a full queue fails at once. Dmitry Vyukov's bounded queue: each slot carries a
// sequence number that says whose turn it is, so a producer takes a ticket with one
// compare-and-swap and publishes its value with one store, and the consumer reads in ticket
// order without a lock. Not a public header: the JSON-lines tracer's spans go through it.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace acemq::detail {

template <class T>
class BoundedQueue {
public:
    // At least `capacity` values (rounded up to a power of two, so a ticket finds its slot
    // with a mask).
    explicit BoundedQueue(std::size_t capacity)
        : capacity_(std::bit_ceil(capacity < 2 ? std::size_t{2} : capacity)),
          slots_(std::make_unique<Slot[]>(capacity_)) {
        for (std::size_t i = 0; i < capacity_; ++i) slots_[i].turn.store(i, std::memory_order_relaxed);
    }
    BoundedQueue(const BoundedQueue&) = delete;
    BoundedQueue& operator=(const BoundedQueue&) = delete;

    std::size_t capacity() const noexcept { return capacity_; }

    // Any thread. The ticket the value took (they count from 0, one per value pushed), or
    // `full` when the queue is full and `value` was left alone.
    static constexpr std::uint64_t full = ~std::uint64_t{0};
    std::uint64_t try_push(T& value) noexcept {
        std::uint64_t ticket = tail_.load(std::memory_order_relaxed);
        for (;;) {
            Slot& slot = slots_[ticket & (capacity_ - 1)];
            const std::uint64_t turn = slot.turn.load(std::memory_order_acquire);
            const auto lead = static_cast<std::int64_t>(turn - ticket);
            if (lead == 0) {
                if (tail_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_relaxed)) {
                    slot.value = std::move(value);
                    // Sequentially consistent, as the consumer's going idle is: a producer that
                    // then sees it idle wakes it, one that does not was seen by it.
                    slot.turn.store(ticket + 1, std::memory_order_seq_cst);
                    return ticket;
                }
            } else if (lead < 0) {
                return full;  // the slot still holds the value of a lap ago
            } else {
                ticket = tail_.load(std::memory_order_relaxed);
            }
        }
    }

    // The one consumer thread. False when the next value is not there yet.
    bool try_pop(T& out) noexcept {
        Slot& slot = slots_[head_ & (capacity_ - 1)];
        if (slot.turn.load(std::memory_order_seq_cst) != head_ + 1) return false;
        out = std::move(slot.value);
        slot.turn.store(head_ + capacity_, std::memory_order_release);
        ++head_;
        return true;
    }

    // The one consumer thread: whether try_pop would find a value.
    bool ready() const noexcept {
        return slots_[head_ & (capacity_ - 1)].turn.load(std::memory_order_seq_cst) == head_ + 1;
    }

    // Tickets handed out so far: every value pushed before this call has one below it.
    std::uint64_t pushed() const noexcept { return tail_.load(std::memory_order_seq_cst); }

private:
    struct Slot {
        std::atomic<std::uint64_t> turn;
        T value;
    };

    const std::size_t capacity_;
    std::unique_ptr<Slot[]> slots_;
    // On cache lines of their own (64 bytes on the machines we build for), so that producers
    // taking tickets do not slow the consumer's reads.
    alignas(64) std::atomic<std::uint64_t> tail_{0};
    alignas(64) std::uint64_t head_ = 0;
};

}  // namespace acemq::detail
