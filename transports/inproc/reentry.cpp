#include "inproc/reentry.hpp"

#include <string>

#include <acemq/error.hpp>

namespace acemq::inproc::detail {

namespace {

// How many DeliverFns are running on this thread.
thread_local int deliveries_in_progress = 0;

}  // namespace

void refuse_reentry(std::string_view action) {
    if (deliveries_in_progress > 0)
        throw UsageError("acemq: cannot " + std::string(action) +
                         " from inside a DeliverFn of the inproc broker: a DeliverFn must only queue the delivery "
                         "and return; settle, publish and subscribe from the thread that takes it off that queue");
}

DeliveringScope::DeliveringScope() noexcept { ++deliveries_in_progress; }
DeliveringScope::~DeliveringScope() { --deliveries_in_progress; }

}  // namespace acemq::inproc::detail
