#include "handout.hpp"

namespace acemq::detail {

namespace {
thread_local const Handout* current = nullptr;
}  // namespace

std::uint64_t HandoutOrder::take() {
    std::lock_guard guard(lock_);
    return taken_++;
}

void HandoutOrder::wait_for_earlier(std::uint64_t number) {
    std::unique_lock guard(lock_);
    passed_.wait(guard, [&] { return passed_below_ >= number; });
}

void HandoutOrder::pass(std::uint64_t number) {
    {
        std::lock_guard guard(lock_);
        if (number < passed_below_) return;
        passed_out_of_turn_.insert(number);
        // Deliveries pass in any order; the watermark moves over each run of passed numbers.
        auto first = passed_out_of_turn_.begin();
        while (first != passed_out_of_turn_.end() && *first == passed_below_) {
            first = passed_out_of_turn_.erase(first);
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
