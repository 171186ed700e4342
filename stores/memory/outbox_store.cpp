#include <acemq/stores/memory_outbox_store.hpp>

#include <algorithm>
#include <string>

namespace acemq {

InMemoryOutboxStore::InMemoryOutboxStore(int max_attempts) : max_attempts_(max_attempts) {
    if (max_attempts < 1)
        throw InvalidArgument("acemq: max_attempts must be at least 1, got " + std::to_string(max_attempts));
}

void InMemoryOutboxStore::add(const OutboxRecord& record) {
    check_outbox_id(record.id);
    std::lock_guard guard(lock_);
    const bool known = std::any_of(records_.begin(), records_.end(),
                                   [&](const OutboxRecord& existing) { return existing.id == record.id; });
    if (!known) records_.push_back(record);
}

std::vector<OutboxRecord> InMemoryOutboxStore::pending(std::size_t limit) {
    std::vector<OutboxRecord> due;
    {
        std::lock_guard guard(lock_);
        std::copy_if(records_.begin(), records_.end(), std::back_inserter(due),
                     [&](const OutboxRecord& record) { return record.attempts < max_attempts_; });
    }
    std::stable_sort(due.begin(), due.end(),
                     [](const OutboxRecord& a, const OutboxRecord& b) { return a.created_at < b.created_at; });
    if (limit > 0 && due.size() > limit) due.resize(limit);
    return due;
}

void InMemoryOutboxStore::mark_published(std::string_view id) {
    std::lock_guard guard(lock_);
    std::erase_if(records_, [&](const OutboxRecord& record) { return record.id == id; });
}

void InMemoryOutboxStore::record_failure(std::string_view id, std::string_view error) {
    std::lock_guard guard(lock_);
    for (OutboxRecord& record : records_) {
        if (record.id != id) continue;
        ++record.attempts;
        record.last_error = std::string(error);
    }
}

std::vector<OutboxRecord> InMemoryOutboxStore::retired() {
    std::vector<OutboxRecord> kept;
    {
        std::lock_guard guard(lock_);
        std::copy_if(records_.begin(), records_.end(), std::back_inserter(kept),
                     [&](const OutboxRecord& record) { return record.attempts >= max_attempts_; });
    }
    std::stable_sort(kept.begin(), kept.end(),
                     [](const OutboxRecord& a, const OutboxRecord& b) { return a.created_at < b.created_at; });
    return kept;
}

std::size_t InMemoryOutboxStore::count() {
    std::lock_guard guard(lock_);
    return records_.size();
}

}  // namespace acemq
