// A consumer group: `size` consumers on one queue, each with its own channel and prefetch,
// started and closed together. Where a consumer's concurrency shares one channel (and one
// prefetch) between its workers, a group's members compete for the queue as separate
// consumers would, which is what a broker balances across.
//
//   auto group = acemq::ConsumerGroup::start(bus, "orders.new", 3, handle);  // acemq-orders.new-1..3
//
// With partitioned routing (ordered.hpp's partitioned_routing_key) run one single-worker
// consumer per partition queue instead: that is what keeps a key's order across processes.
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/bus.hpp>
#include <acemq/consumer.hpp>

namespace acemq {

class ConsumerGroup {
public:
    // Starts `size` consumers of `queue`, one after another, each with `options` and the tag
    // "<base>-<n>" from 1, base being options.tag or "acemq-<queue>". All or nothing: when one
    // fails to start, the ones started are closed and the failure is rethrown. InvalidArgument
    // for a size below 1. Every member runs a copy of `handler`: copies of an Ordered share
    // their locks, so a key stays one message at a time across the group.
    template <class T = void, class H, class P = typename detail::chosen_payload<T, H>::type>
        requires std::invocable<H&, const Message<P>&>
    static ConsumerGroup start(Bus& bus, std::string_view queue, int size, H handler, ConsumerOptions options = {}) {
        Handler<P> shared(std::move(handler));
        return ConsumerGroup(std::string(queue), size, std::move(options),
                             [&](ConsumerOptions member) { return bus.consume<P>(queue, shared, std::move(member)); });
    }

    ConsumerGroup(ConsumerGroup&& other) noexcept;
    ConsumerGroup& operator=(ConsumerGroup&&) = delete;
    ConsumerGroup(const ConsumerGroup&) = delete;
    ConsumerGroup& operator=(const ConsumerGroup&) = delete;
    // Closes the consumers still running; a failure to is logged, not thrown.
    ~ConsumerGroup();

    const std::string& queue() const noexcept;
    // Consumers running: the size started with, 0 once closed.
    std::size_t size() const;
    // The running consumers' tags, in start order.
    std::vector<std::string> tags() const;

    // Closes every consumer, one after another (each drains within its drain_timeout), even
    // when some fail, then rethrows the first failure. True when every running handler
    // finished. Idempotent: once closed, it does nothing and returns true.
    bool close();

    // Every member is thread-safe.

private:
    ConsumerGroup(std::string queue, int size, ConsumerOptions options,
                  const std::function<Consumer(ConsumerOptions)>& start_member);

    std::string queue_;
    mutable std::mutex lock_;
    std::vector<Consumer> consumers_;
    std::vector<std::string> tags_;
};

}  // namespace acemq
