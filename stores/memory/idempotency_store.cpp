#include <acemq/stores/memory_idempotency_store.hpp>

#include <algorithm>

#include <acemq/error.hpp>

namespace acemq {

namespace {

std::chrono::milliseconds positive_ttl(std::chrono::milliseconds ttl) {
    if (ttl.count() <= 0)
        throw InvalidArgument("acemq: an idempotency window must be positive, got " + std::to_string(ttl.count()) +
                              " ms; the default is one hour");
    return ttl;
}

}  // namespace

InMemoryIdempotencyStore::InMemoryIdempotencyStore(std::chrono::milliseconds ttl, std::shared_ptr<Clock> clock)
    : ttl_(positive_ttl(ttl)), clock_(clock ? std::move(clock) : system_clock()) {}

Claim InMemoryIdempotencyStore::claim(const std::string& key) {
    std::lock_guard guard(lock_);
    const Clock::time_point now = clock_->now();  // read under the lock, so entries stay in time order
    sweep(now);
    if (const auto found = index_.find(key); found != index_.end())
        return found->second->confirmed ? Claim::duplicate : Claim::in_progress;
    entries_.push_back(Entry{key, now, false});
    index_.emplace(key, std::prev(entries_.end()));
    return Claim::claimed;
}

void InMemoryIdempotencyStore::confirm(const std::string& key) {
    std::lock_guard guard(lock_);
    if (const auto found = index_.find(key); found != index_.end()) found->second->confirmed = true;
}

void InMemoryIdempotencyStore::forget(const std::string& key) {
    std::lock_guard guard(lock_);
    if (const auto found = index_.find(key); found != index_.end()) {
        entries_.erase(found->second);
        index_.erase(found);
    }
}

std::optional<std::chrono::milliseconds> InMemoryIdempotencyStore::lease_left(const std::string& key) {
    std::lock_guard guard(lock_);
    const auto found = index_.find(key);
    if (found == index_.end() || found->second->confirmed) return std::nullopt;
    const auto left = found->second->claimed_at + ttl_ - clock_->now();
    return std::max(std::chrono::ceil<std::chrono::milliseconds>(left), std::chrono::milliseconds(0));
}

std::size_t InMemoryIdempotencyStore::size() const {
    std::lock_guard guard(lock_);
    return entries_.size();
}

void InMemoryIdempotencyStore::sweep(Clock::time_point now) {
    // Entries are in claim order, so the first one still inside the window ends the walk.
    while (!entries_.empty() && entries_.front().claimed_at <= now - ttl_) {
        index_.erase(entries_.front().key);
        entries_.pop_front();
    }
}

}  // namespace acemq
