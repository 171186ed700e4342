#include "zmq/call.hpp"

#include <acemq/zmq.hpp>

namespace acemq::zmq {

void Call::reply(std::vector<std::byte> frame) {
    {
        std::lock_guard lock(mutex_);
        if (result_) return;
        result_ = Result{.outcome = Outcome::replied, .frame = std::move(frame), .text = {}, .generation = generation};
    }
    cv_.notify_all();
}

void Call::confirm(PublishResult result) {
    {
        std::lock_guard lock(mutex_);
        if (result_) return;
        result_ = Result{.outcome = Outcome::replied, .frame = {}, .confirm = std::move(result), .text = {}};
    }
    cv_.notify_all();
}

void Call::fail(Outcome outcome, std::string text, wire::FailureKind kind) {
    {
        std::lock_guard lock(mutex_);
        if (result_) return;
        result_ = Result{.outcome = outcome, .frame = {}, .text = std::move(text), .kind = kind};
    }
    cv_.notify_all();
}

std::optional<Call::Result> Call::wait_until(Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_until(lock, deadline, [&] { return result_.has_value(); })) {
        abandoned_.store(true, std::memory_order_relaxed);
        return std::nullopt;
    }
    return std::move(result_);
}

void throw_failure(const Call::Result& result) {
    if (result.outcome != Call::Outcome::failed) throw ConnectionError(result.text);
    switch (result.kind) {
    case wire::FailureKind::topology: throw TopologyError(result.text);
    case wire::FailureKind::usage: throw UsageError(result.text);
    case wire::FailureKind::invalid_argument: throw InvalidArgument(result.text);
    case wire::FailureKind::error: break;
    }
    throw Error(result.text);
}

}  // namespace acemq::zmq
