// Runs a bus's interceptors around a last step (not a public header): the publish path and
// the delivery path share it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace acemq::detail {

// Calls interceptors[0], whose next calls interceptors[1], ..., whose next calls `last`.
// Returns what the chain returns (void for publishes, the Ack for deliveries). With no
// interceptors, the common case, it calls `last` straight and pays for no std::function.
// No list at all (null) is an empty one.
template <class Result, class Context, class Interceptor, class Last>
Result run_chain(const std::shared_ptr<const std::vector<Interceptor>>& list, Context& context, Last&& last) {
    if (!list || list->empty()) return last(context);
    const std::vector<Interceptor>& interceptors = *list;
    std::function<Result(std::size_t, Context&)> step = [&](std::size_t index, Context& current) -> Result {
        if (index == interceptors.size()) return last(current);
        return interceptors[index](current, [&](Context& next) -> Result { return step(index + 1, next); });
    };
    return step(0, context);
}

}  // namespace acemq::detail
