// The order in which a consumer handed its deliveries to its workers (not a public header).
// Workers take deliveries in arrival order, but with concurrency above 1 a later worker may
// reach a handler before an earlier one; the ordered handler (<acemq/ordered.hpp>) waits here
// until every earlier delivery has reached it, or finished without it, so that per-key order
// is arrival order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>

namespace acemq::detail {

// Thread-safe.
class HandoutOrder {
public:
    // The first of the next `count` numbers, from 0: taken where the consumer hands
    // deliveries out, under its lock, for `count` deliveries taken together.
    std::uint64_t take(std::uint64_t count = 1);
    // Returns once every number taken before `number` has passed.
    void wait_for_earlier(std::uint64_t number);
    // `number` has reached its ordering point (or its handling ended). Idempotent.
    void pass(std::uint64_t number);

private:
    std::mutex lock_;
    std::condition_variable passed_;
    std::uint64_t taken_ = 0;
    std::uint64_t passed_below_ = 0;              // every number below it has passed
    std::set<std::uint64_t> passed_out_of_turn_;  // passed, above passed_below_
};

struct Handout {
    std::shared_ptr<HandoutOrder> order;
    std::uint64_t number = 0;
};

// The delivery the calling thread handles for a consumer, or null outside one.
const Handout* current_handout() noexcept;

// Makes `handout` the thread's current one until destroyed, then passes it (whatever the
// handler did) and restores the one before.
class HandoutScope {
public:
    explicit HandoutScope(Handout handout);
    ~HandoutScope();
    HandoutScope(const HandoutScope&) = delete;
    HandoutScope& operator=(const HandoutScope&) = delete;

private:
    Handout handout_;
    const Handout* previous_;
};

}  // namespace acemq::detail
