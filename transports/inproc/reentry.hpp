// The broker's one rule against deadlock: a DeliverFn runs with the broker's lock held, so
// a call into any inproc broker from inside one is refused instead of waiting forever.
// Internal to the inproc broker; both parts count per thread, so they are thread-safe.
#pragma once

#include <string_view>

namespace acemq::inproc::detail {

// Throws acemq::Error naming `action` when this thread is inside a DeliverFn.
void refuse_reentry(std::string_view action);

// Marks this thread as inside a DeliverFn for its lifetime.
class DeliveringScope {
public:
    DeliveringScope() noexcept;
    ~DeliveringScope();
    DeliveringScope(const DeliveringScope&) = delete;
    DeliveringScope& operator=(const DeliveringScope&) = delete;
};

}  // namespace acemq::inproc::detail
