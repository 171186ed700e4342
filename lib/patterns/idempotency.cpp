#include <acemq/idempotency.hpp>

#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_set>

#include <acemq/log.hpp>
#include "quoted_text.hpp"
#include "rfc3339.hpp"

namespace acemq {

std::string_view to_string(Claim claim) noexcept {
    switch (claim) {
    case Claim::claimed: return "claimed";
    case Claim::duplicate: return "duplicate";
    case Claim::in_progress: return "in_progress";
    }
    return "unknown";
}

namespace {

// Runs one store step after the handler decided. A failure never changes the decision: it
// is logged, saying what it leaves behind, and the decision stands.
template <class Step>
void quietly(Step step, std::string_view failed, std::string_view when, std::string_view consequence,
             const std::string& key, const std::string& message_id) noexcept {
    try {
        step();
    } catch (...) {
        try {
            log(LogLevel::warning, "idempotency",
                "acemq: could not " + std::string(failed) + " the idempotency key " + detail::in_quotes(key) +
                    " of message " + detail::shown_text(message_id) + std::string(when) + ": " +
                    describe(Failure::of(std::current_exception())) + "; " + std::string(consequence));
        } catch (const std::bad_alloc&) {
            // Out of memory while building the line: drop the line, keep the decision.
        }
    }
}

// Releases the claim after a handler answered something other than accept: it said it did
// not do the work. A store that cannot forget leaves the claim to run out (redeliveries are
// in_progress until then).
void forget_quietly(IdempotencyStore& store, const std::string& key, const std::string& message_id) noexcept {
    quietly([&] { store.forget(key); }, "forget", " after a failure",
            "its claim stays until it expires and redeliveries wait until then", key, message_id);
}

// Turns the claim into a fact after the handler accepted: the work is done, and at worst a
// redelivery runs it again.
void confirm_quietly(IdempotencyStore& store, const std::string& key, const std::string& message_id) noexcept {
    quietly([&] { store.confirm(key); }, "confirm", "", "its claim will expire and a redelivery may be handled again",
            key, message_id);
}

}  // namespace

std::optional<std::chrono::milliseconds> IdempotencyStore::lease_left(const std::string&) { return std::nullopt; }

namespace detail {

// What one idempotent() handler has said already, so that it says each thing once: per
// queue, that its messages without an id cannot be deduplicated (a warning); per key, that a
// delivery met a live claim and when its lease ends (info: after a consumer died inside the
// handler the message waits that long, which would otherwise look like a hang). The keys
// remembered are bounded: past that many the memory starts over. Thread-safe.
class IdempotentNotes {
public:
    void message_without_id(const std::string& queue, const std::string& message_id) noexcept;
    void live_claim(IdempotencyStore& store, const std::string& key, const std::string& message_id,
                    const std::string& queue, std::chrono::milliseconds in_progress_delay) noexcept;

    static constexpr std::size_t keys_remembered = 1024;

private:
    // True the first time `value` is put into `seen`.
    bool first(std::unordered_set<std::string>& seen, const std::string& value);

    std::mutex lock_;
    std::unordered_set<std::string> queues_;
    std::unordered_set<std::string> keys_;
};

std::shared_ptr<IdempotentNotes> new_idempotent_notes() { return std::make_shared<IdempotentNotes>(); }

void note_message_without_id(IdempotentNotes& notes, const std::string& queue, const std::string& message_id) noexcept {
    notes.message_without_id(queue, message_id);
}

bool IdempotentNotes::first(std::unordered_set<std::string>& seen, const std::string& value) {
    std::lock_guard guard(lock_);
    if (seen.size() >= keys_remembered && !seen.contains(value)) seen.clear();
    return seen.insert(value).second;
}

void IdempotentNotes::message_without_id(const std::string& queue, const std::string& message_id) noexcept {
    try {
        if (!log_enabled(LogLevel::warning) || !first(queues_, queue)) return;
        log(LogLevel::warning, "idempotency",
            "acemq: message " + shown_text(message_id) + " from " + shown_text(queue) +
                " came with no id (no x-acemq-id header, no message-id property) and was given a fresh one, which "
                "a redelivery of it will not share: idempotent() cannot recognise its redeliveries and runs the "
                "handler for every one. Have its publisher set an id (every AceMQ publisher does) or give idempotent() "
                "a key function; said once per queue, counted in acemq.messages.without.id.total");
    } catch (...) {
        // A line that could not be written (out of memory) changes nothing about the message.
    }
}

void IdempotentNotes::live_claim(IdempotencyStore& store, const std::string& key, const std::string& message_id,
                                 const std::string& queue, std::chrono::milliseconds in_progress_delay) noexcept {
    try {
        if (!log_enabled(LogLevel::info) || !first(keys_, key)) return;
        std::optional<std::chrono::milliseconds> left;
        try {
            left = store.lease_left(key);
        } catch (...) {
            // Only a detail of a log line: the line goes without it.
        }
        const std::string lease_end =
            left ? "ends in " + std::to_string(std::chrono::ceil<std::chrono::seconds>(*left).count()) + " s (at " +
                       rfc3339(std::chrono::system_clock::now() + *left, SecondFraction::none) + ")"
                 : "runs out (the store's claim timeout or ttl)";
        log(LogLevel::info, "idempotency",
            "acemq: message " + shown_text(message_id) + " from " + shown_text(queue) +
                " met a live claim on its idempotency key " + in_quotes(key) +
                ": another delivery of it is being handled, or one ended without a decision (its consumer died, or "
                "the handler threw). It is put back every " +
                std::to_string(in_progress_delay.count()) + " ms until that claim is confirmed or its lease " +
                lease_end + "; said once per key");
    } catch (...) {
        // As above: the message's fate does not depend on this line.
    }
}

std::chrono::milliseconds checked_in_progress_delay(std::chrono::milliseconds delay) {
    if (delay.count() < 0)
        throw InvalidArgument("acemq: an in-progress delay cannot be negative, got " + std::to_string(delay.count()) +
                              " ms; give zero or more (the default is 5 s)");
    return delay;
}

Ack run_idempotently(IdempotencyStore& store, const std::string& key, const std::string& message_id,
                     const std::string& queue, std::chrono::milliseconds in_progress_delay, IdempotentNotes& notes,
                     const std::function<Ack()>& handle) {
    if (key.empty())
        return reject(FatalError("acemq: message " + shown_text(message_id) + " produced an empty idempotency key"));

    Claim claim;
    try {
        claim = store.claim(key);
    } catch (...) {
        // The store is broken, not the message: try again later, and never read a store
        // failure as "seen before".
        return retry(Failure::of(std::current_exception()));
    }
    switch (claim) {
    case Claim::duplicate: return accept();
    case Claim::in_progress:
        notes.live_claim(store, key, message_id, queue, in_progress_delay);
        return in_progress(in_progress_delay);
    case Claim::claimed: break;
    }

    // Not caught: a handler that throws may have done the work before the throw (charged the
    // card, then the receipt service failed), so its claim stays and runs out as a lease.
    Ack decision = handle();
    if (decision.kind() == AckKind::accept)
        confirm_quietly(store, key, message_id);
    else
        forget_quietly(store, key, message_id);
    return decision;
}

}  // namespace detail

}  // namespace acemq
