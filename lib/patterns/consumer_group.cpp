#include <acemq/consumer_group.hpp>

#include <exception>
#include <utility>

#include <acemq/error.hpp>
#include <acemq/log.hpp>

namespace acemq {

ConsumerGroup::ConsumerGroup(std::string queue, int size, ConsumerOptions options,
                             const std::function<Consumer(ConsumerOptions)>& start_member)
    : queue_(std::move(queue)) {
    if (size < 1)
        throw InvalidArgument("acemq: a consumer group needs at least one consumer, got " + std::to_string(size) +
                              " for " + queue_);
    const std::string base = options.tag.empty() ? "acemq-" + queue_ : options.tag;
    // All or nothing: when a start throws, the members started so far are closed (drained)
    // as consumers_ goes with this half-made group, and the failure goes on.
    for (int n = 1; n <= size; ++n) {
        ConsumerOptions member = options;
        member.tag = base + "-" + std::to_string(n);
        consumers_.push_back(start_member(member));
        tags_.push_back(std::move(member.tag));
    }
}

ConsumerGroup::ConsumerGroup(ConsumerGroup&& other) noexcept : queue_(std::move(other.queue_)) {
    std::lock_guard guard(other.lock_);
    consumers_ = std::move(other.consumers_);
    tags_ = std::move(other.tags_);
}

ConsumerGroup::~ConsumerGroup() {
    try {
        close();
    } catch (const std::exception& error) {
        log(LogLevel::warning, "engine", "consumer group of " + queue_ + " closed with a failure: " + error.what());
    }
}

const std::string& ConsumerGroup::queue() const noexcept { return queue_; }

std::size_t ConsumerGroup::size() const {
    std::lock_guard guard(lock_);
    return consumers_.size();
}

std::vector<std::string> ConsumerGroup::tags() const {
    std::lock_guard guard(lock_);
    return tags_;
}

bool ConsumerGroup::close() {
    std::vector<Consumer> closing;
    {
        std::lock_guard guard(lock_);
        closing.swap(consumers_);
        tags_.clear();
    }
    bool drained = true;
    std::exception_ptr first_failure;
    for (Consumer& consumer : closing) {
        try {
            drained = consumer.close() && drained;
        } catch (...) {
            if (!first_failure) first_failure = std::current_exception();
        }
    }
    if (first_failure) std::rethrow_exception(first_failure);
    return drained;
}

}  // namespace acemq
