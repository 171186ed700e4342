#include <acemq/ordered.hpp>

#include <cstdint>
#include <utility>

#include "handout.hpp"

namespace acemq {

namespace detail {

KeyLines::Turn::Turn(Turn&& other) noexcept : lines_(std::exchange(other.lines_, nullptr)), line_(other.line_) {}

KeyLines::Turn::~Turn() {
    if (lines_ != nullptr) lines_->leave(line_);
}

KeyLines::Turn KeyLines::wait_turn(std::string_view key) {
    const Handout* handout = current_handout();
    if (key.empty()) {
        // Nothing to keep in order: let later deliveries on.
        if (handout != nullptr) handout->order->pass(handout->number);
        return {};
    }
    // A worker that got here first waits for the deliveries handed out before its own to take
    // their places in the lines; then joining in this order is arrival order.
    if (handout != nullptr) handout->order->wait_for_earlier(handout->number);
    std::unique_lock guard(lock_);
    const auto line = lines_.try_emplace(std::string(key)).first;
    const std::uint64_t ticket = line->second.joined++;
    ++line->second.present;
    if (handout != nullptr) handout->order->pass(handout->number);
    line->second.turn.wait(guard, [&] { return line->second.serving == ticket; });
    return Turn(this, line);
}

void KeyLines::leave(Lines::iterator line) {
    std::lock_guard guard(lock_);
    ++line->second.serving;
    if (--line->second.present == 0)
        lines_.erase(line);
    else
        // Every waiter wakes and the one whose ticket is up goes on; a line is as long as the
        // messages of one key in flight, at most the consumer's prefetch.
        line->second.turn.notify_all();
}

std::size_t KeyLines::keys() const {
    std::lock_guard guard(lock_);
    return lines_.size();
}

std::string header_text(const Envelope& envelope, std::string_view name) {
    const auto found = envelope.headers.find(name);
    if (found == envelope.headers.end() || found->second.is_void()) return {};
    return found->second.to_string();
}

}  // namespace detail

int partition(std::string_view key, int count) noexcept {
    if (count <= 1) return 0;
    std::uint32_t hash = 2166136261U;
    for (const char byte : key) {
        hash ^= static_cast<unsigned char>(byte);
        hash *= 16777619U;
    }
    return static_cast<int>(hash % static_cast<std::uint32_t>(count));
}

std::string partitioned_routing_key(std::string_view base, std::string_view key, int count) {
    return std::string(base) + "." + std::to_string(partition(key, count));
}

}  // namespace acemq
