// Internal: what idempotent() of <acemq/idempotency.hpp> runs on, compiled into the
// library. Included by <acemq/idempotency.hpp>; do not include it yourself, nothing in it
// is API.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <acemq/ack.hpp>

namespace acemq {

class IdempotencyStore;

namespace detail {

// What one idempotent() handler has said already, so that it says each thing once: per
// queue, that its messages without an id cannot be deduplicated (a warning); per key, that a
// delivery met a live claim and when its lease ends. Thread-safe.
class IdempotentNotes;
std::shared_ptr<IdempotentNotes> new_idempotent_notes();
// The warning that a message of `queue` came without an id, once per queue.
void note_message_without_id(IdempotentNotes& notes, const std::string& queue, const std::string& message_id) noexcept;

// Steps 2-9 of docs/patterns.md §1.5 for a message keyed `key`; `handle` runs the handler.
// A live claim is told to `notes`.
Ack run_idempotently(IdempotencyStore& store, const std::string& key, const std::string& message_id,
                     const std::string& queue, std::chrono::milliseconds in_progress_delay, IdempotentNotes& notes,
                     const std::function<Ack()>& handle);

// Returns `delay`; throws InvalidArgument when it is negative.
std::chrono::milliseconds checked_in_progress_delay(std::chrono::milliseconds delay);

}  // namespace detail

}  // namespace acemq
