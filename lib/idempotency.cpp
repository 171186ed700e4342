#include <acemq/idempotency.hpp>

#include <exception>
#include <new>

#include <acemq/log.hpp>

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
            log(LogLevel::warning, "acemq: could not " + std::string(failed) + " the idempotency key \"" + key +
                                       "\" of message " + message_id + std::string(when) + ": " +
                                       describe(Failure::of(std::current_exception())) + "; " +
                                       std::string(consequence));
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

namespace detail {

std::chrono::milliseconds checked_in_progress_delay(std::chrono::milliseconds delay) {
    if (delay.count() < 0)
        throw InvalidArgument("acemq: an in-progress delay cannot be negative, got " + std::to_string(delay.count()) +
                              " ms; give zero or more (the default is 5 s)");
    return delay;
}

Ack run_idempotently(IdempotencyStore& store, const std::string& key, const std::string& message_id,
                     std::chrono::milliseconds in_progress_delay, const std::function<Ack()>& handle) {
    if (key.empty()) return reject(FatalError("acemq: message " + message_id + " produced an empty idempotency key"));

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
    case Claim::in_progress: return in_progress(in_progress_delay);
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
