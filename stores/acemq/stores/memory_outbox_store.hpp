// An outbox in a std::vector, for tests and examples. Not for production: it has none of
// the outbox's point, which is that the message commits or rolls back with your business
// rows in one database transaction; here a record exists as soon as add() returns and is
// gone when the process ends.
//
// Behaves as the family's in-memory store: add keeps the first record of an id, pending is
// oldest first (created_at; ties in the order added) without the retired, record_failure
// keeps the record with one more attempt. No leases (one process, one relay is the use).
//
// Thread-safe: every member may be called from any thread.
#pragma once

#include <cstddef>
#include <mutex>
#include <string_view>
#include <vector>

#include <acemq/outbox.hpp>

namespace acemq {

class InMemoryOutboxStore final : public OutboxStore {
public:
    static constexpr int default_max_attempts = 10;  // the same ten Ruby uses

    // Throws InvalidArgument when max_attempts < 1.
    explicit InMemoryOutboxStore(int max_attempts = default_max_attempts);

    // Insert-if-absent: a record whose id is already here is dropped, the first one kept.
    // Throws InvalidArgument for an empty id.
    void add(const OutboxRecord& record);

    std::vector<OutboxRecord> pending(std::size_t limit) override;
    void mark_published(std::string_view id) override;
    void record_failure(std::string_view id, std::string_view error) override;
    std::vector<OutboxRecord> retired() override;
    std::size_t count() override;

private:
    const int max_attempts_;
    std::mutex lock_;
    std::vector<OutboxRecord> records_;  // in the order added
};

}  // namespace acemq
