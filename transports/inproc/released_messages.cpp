#include "inproc/released_messages.hpp"

namespace acemq::inproc::detail {

// The deleter of a message made here: it hands the node to the list instead of freeing it.
struct ReleasedMessages::Release {
    std::shared_ptr<ReleasedMessages> list;
    Node* node;

    void operator()(InboundMessage*) const noexcept { list->release(node); }
};

ReleasedMessages::~ReleasedMessages() { free_released(); }

std::shared_ptr<InboundMessage> ReleasedMessages::make(const std::shared_ptr<ReleasedMessages>& list,
                                                       InboundMessage&& message) {
    Node* node = new Node{.message = std::move(message)};
    // Owned by the deleter from here: a control block that cannot be allocated releases it.
    return std::shared_ptr<InboundMessage>(&node->message, Release{list, node});
}

std::size_t ReleasedMessages::weight_of(const InboundMessage& message) noexcept {
    return sizeof(Node) + message.body().size() + message.content_type().size() + message.exchange().size() +
           message.routing_key().size() + message.message_id().size() + message.reply_to().size() +
           message.headers().packed_size();
}

void ReleasedMessages::release(Node* node) noexcept {
    // Weighed here, off the publishing thread, and as the message is now (a dead letter's
    // x-death may have been added in place).
    node->weight = weight_of(node->message);
    if (held_bytes_.fetch_add(node->weight, std::memory_order_relaxed) + node->weight > most_held_bytes) {
        held_bytes_.fetch_sub(node->weight, std::memory_order_relaxed);
        delete node;
        return;
    }
    node->next = head_.load(std::memory_order_relaxed);
    while (!head_.compare_exchange_weak(node->next, node, std::memory_order_release, std::memory_order_relaxed)) {}
}

void ReleasedMessages::free_released() noexcept {
    if (head_.load(std::memory_order_relaxed) == nullptr) return;
    Node* node = head_.exchange(nullptr, std::memory_order_acquire);
    std::size_t freed = 0;
    while (node != nullptr) {
        Node* next = node->next;
        freed += node->weight;
        delete node;
        node = next;
    }
    held_bytes_.fetch_sub(freed, std::memory_order_relaxed);
}

}  // namespace acemq::inproc::detail
