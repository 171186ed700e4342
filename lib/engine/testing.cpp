#include <acemq/testing.hpp>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace acemq::testing {

class Harness::Recorder final : public Observer {
public:
    void published(const PublishedEvent& event) override {
        {
            std::lock_guard guard(lock_);
            published_.push_back(
                PublishedRecord{std::string(event.exchange), std::string(event.routing_key), event.envelope});
        }
        changed_.notify_all();
    }

    void settled(const SettledEvent& event) override {
        {
            std::lock_guard guard(lock_);
            settled_.push_back(SettledRecord{std::string(event.queue), event.envelope, event.settlement});
        }
        changed_.notify_all();
    }

    bool wait_settled(std::string_view queue, std::size_t count, std::chrono::milliseconds timeout,
                      const std::function<bool(const Settlement&)>& matches) const {
        std::unique_lock guard(lock_);
        return changed_.wait_for(guard, timeout, [&] {
            return static_cast<std::size_t>(std::count_if(settled_.begin(), settled_.end(), [&](const auto& record) {
                       return record.queue == queue && matches(record.settlement);
                   })) >= count;
        });
    }

    bool wait_published(std::string_view routing_key, std::size_t count, std::chrono::milliseconds timeout) const {
        std::unique_lock guard(lock_);
        return changed_.wait_for(guard, timeout, [&] {
            return static_cast<std::size_t>(
                       std::count_if(published_.begin(), published_.end(),
                                     [&](const auto& record) { return record.routing_key == routing_key; })) >= count;
        });
    }

    std::vector<SettledRecord> settled_on(std::string_view queue) const {
        std::lock_guard guard(lock_);
        std::vector<SettledRecord> out;
        std::copy_if(settled_.begin(), settled_.end(), std::back_inserter(out),
                     [&](const auto& record) { return record.queue == queue; });
        return out;
    }

    std::vector<PublishedRecord> all_published() const {
        std::lock_guard guard(lock_);
        return published_;
    }

private:
    mutable std::mutex lock_;
    mutable std::condition_variable changed_;
    std::vector<SettledRecord> settled_;
    std::vector<PublishedRecord> published_;
};

Harness::Harness(Bus& bus) : recorder_(std::make_shared<Recorder>()) { bus.add_observer(recorder_); }

bool Harness::wait_consumed(std::string_view queue, std::size_t count, std::chrono::milliseconds timeout) const {
    return recorder_->wait_settled(queue, count, timeout, [](const Settlement&) { return true; });
}

bool Harness::wait_settled(std::string_view queue, Outcome outcome, std::size_t count,
                           std::chrono::milliseconds timeout) const {
    return recorder_->wait_settled(queue, count, timeout,
                                   [outcome](const Settlement& settlement) { return settlement.outcome == outcome; });
}

bool Harness::wait_dead_lettered(std::string_view queue, std::size_t count, std::chrono::milliseconds timeout) const {
    return recorder_->wait_settled(queue, count, timeout,
                                   [](const Settlement& settlement) { return settlement.dead_lettered(); });
}

bool Harness::wait_parked(std::string_view queue, std::size_t count, std::chrono::milliseconds timeout) const {
    return wait_settled(queue, Outcome::parked, count, timeout);
}

bool Harness::wait_published(std::string_view routing_key, std::size_t count, std::chrono::milliseconds timeout) const {
    return recorder_->wait_published(routing_key, count, timeout);
}

std::vector<SettledRecord> Harness::settled(std::string_view queue) const { return recorder_->settled_on(queue); }

std::vector<PublishedRecord> Harness::published() const { return recorder_->all_published(); }

}  // namespace acemq::testing
