#include "handout.hpp"

#include <utility>

namespace acemq::detail {

namespace {
thread_local const Handout* current = nullptr;
}  // namespace

std::uint64_t HandoutOrder::take(std::uint64_t count) {
    std::lock_guard guard(lock_);
    const std::uint64_t first = taken_;
    taken_ += count;
    return first;
}

void HandoutOrder::wait_for_earlier(std::uint64_t number) {
    std::unique_lock guard(lock_);
    passed_.wait(guard, [&] { return passed_below_ >= number; });
}

void HandoutOrder::pass(std::uint64_t number) {
    {
        std::lock_guard guard(lock_);
        if (number < passed_below_) return;
        if (number > passed_below_) {
            // An earlier delivery is still on its way: nobody behind it can go on yet.
            passed_out_of_turn_.insert(number);
            return;
        }
        ++passed_below_;
        auto next = passed_out_of_turn_.begin();
        while (next != passed_out_of_turn_.end() && *next == passed_below_) {
            next = passed_out_of_turn_.erase(next);
            ++passed_below_;
        }
    }
    passed_.notify_all();
}

const Handout* current_handout() noexcept { return current; }

HandoutScope::HandoutScope(Handout handout) : handout_(std::move(handout)), previous_(current) { current = &handout_; }

HandoutScope::~HandoutScope() {
    current = previous_;
    handout_.order->pass(handout_.number);
}

}  // namespace acemq::detail
