#include "inproc/released_messages.hpp"

namespace acemq::inproc::detail {

using acemq::detail::MessageBlock;

std::atomic<std::size_t> ReleasedMessages::lists_{0};

void ReleasedMessages::Drop::operator()(ReleasedMessages* list) const noexcept {
    list->free_released();
    list->drop();
}

ReleasedMessages::~ReleasedMessages() {
    free_released();
    lists_.fetch_sub(1, std::memory_order_relaxed);
}

void ReleasedMessages::drop() noexcept {
    if (holds_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

InboundMessage ReleasedMessages::make(OutboundMessage&& published) {
    InboundMessage message(std::move(published), *this);
    holds_.fetch_add(1, std::memory_order_relaxed);
    return message;
}

void ReleasedMessages::release(MessageBlock* block) noexcept {
    const std::size_t weight = acemq::detail::message_block_bytes(*block);
    if (held_bytes_.fetch_add(weight, std::memory_order_relaxed) + weight > most_held_bytes) {
        held_bytes_.fetch_sub(weight, std::memory_order_relaxed);
        acemq::detail::free_message_block(block);
    } else {
        block->next_released = head_.load(std::memory_order_relaxed);
        while (!head_.compare_exchange_weak(block->next_released, block, std::memory_order_release,
                                            std::memory_order_relaxed)) {}
    }
    drop();
}

void ReleasedMessages::free_released() noexcept {
    if (head_.load(std::memory_order_relaxed) == nullptr) return;
    MessageBlock* block = head_.exchange(nullptr, std::memory_order_acquire);
    std::size_t freed = 0;
    while (block != nullptr) {
        MessageBlock* next = block->next_released;
        freed += acemq::detail::message_block_bytes(*block);
        acemq::detail::free_message_block(block);
        block = next;
    }
    held_bytes_.fetch_sub(freed, std::memory_order_relaxed);
}

}  // namespace acemq::inproc::detail
