#include "amqp/open_deliveries.hpp"

#include <algorithm>

namespace acemq::amqp {

std::vector<SettlementFrame> OpenDeliveries::settle(std::vector<Settlement> waiting) {
    std::sort(waiting.begin(), waiting.end(),
              [](const Settlement& a, const Settlement& b) { return a.broker_tag < b.broker_tag; });
    std::vector<SettlementFrame> frames;
    auto next = waiting.begin();
    // Past what no longer is (or never was) open below the lowest open tag.
    const auto skip_closed = [&] {
        while (next != waiting.end() && !open_.empty() && next->broker_tag < open_.front()) ++next;
    };
    // The bottom of the channel: each run of one outcome is one frame.
    for (skip_closed(); next != waiting.end() && !open_.empty() && next->broker_tag == open_.front(); skip_closed()) {
        SettlementFrame frame{.outcome = next->outcome, .broker_tag = next->broker_tag};
        open_.pop_front();
        for (++next, skip_closed(); next != waiting.end() && !open_.empty() && next->broker_tag == open_.front() &&
                                    next->outcome == frame.outcome;
             ++next, skip_closed()) {
            frame.broker_tag = next->broker_tag;
            frame.multiple = true;
            open_.pop_front();
        }
        frames.push_back(frame);
    }
    // Above an unsettled delivery: one by one.
    for (; next != waiting.end(); ++next) {
        const auto at = std::lower_bound(open_.begin(), open_.end(), next->broker_tag);
        if (at == open_.end() || *at != next->broker_tag) continue;
        open_.erase(at);
        frames.push_back({.outcome = next->outcome, .broker_tag = next->broker_tag});
    }
    return frames;
}

}  // namespace acemq::amqp
