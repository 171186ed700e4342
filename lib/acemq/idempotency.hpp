// Handling a message once when the broker delivers it more than once (docs/patterns.md §1).
//
// A broker delivers at least once: a consumer that dies before its ack, a publisher that
// resends after a lost confirm, a retry republish all hand the same message (the same
// x-acemq-id) to a handler again. idempotent() remembers, in a store, which messages were
// handled and answers a repeat with accept() without running the handler:
//
//   acemq::InMemoryIdempotencyStore seen;                        // <acemq/stores/memory_idempotency_store.hpp>
//   acemq::Consumer consumer = bus.consume<Payment>("payments.new", acemq::idempotent(seen, take_payment),
//                                                   {.retry = acemq::fixed_retry(3, 200ms)});
//
// A store claims a key before the handler runs and confirms it once the handler accepted,
// so a redelivery that arrives while the first delivery is still being handled is put back
// (in_progress) instead of being run twice or accepted unhandled. A claim is a lease: a
// consumer that dies holding one, or a handler that throws (the work may have happened),
// blocks that message until the lease runs out, then the next delivery claims it again.
// Only a handler that returns a decision other than accept has its claim released.
//
// It is a guard, not exactly-once: a crash after the handler's work and before the confirm
// lets a redelivery run the handler again. To close that gap, claim and confirm with the
// SQL store inside the transaction that does the work (<acemq/stores/sql_idempotency_store.hpp>).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <acemq/ack.hpp>
#include <acemq/consumer.hpp>
#include <acemq/detail/idempotency.hpp>
#include <acemq/message.hpp>
#include <acemq/middleware.hpp>

namespace acemq {

// What a store answers when asked to claim a key.
enum class Claim {
    claimed,      // nobody held it, or the last holder's lease ran out: run the handler
    duplicate,    // handled and confirmed: accept without running it
    in_progress,  // someone holds a live claim: neither run nor accept; look again later
};

// "claimed", "duplicate", "in_progress".
std::string_view to_string(Claim claim) noexcept;

// Where handled keys are remembered. The family's protocol makes claim and confirm
// optional and looks them up at run time; here every store has all three, and a store that
// can only tell first-time from seen answers claimed/duplicate from claim() and does
// nothing in confirm().
//
// Every member must be atomic across everyone sharing the store (a check followed by a
// write is not) and must throw, never answer duplicate, when it cannot tell: a store error
// becomes a retry of the message, a false duplicate loses it. Implementations are
// thread-safe.
class IdempotencyStore {
public:
    virtual ~IdempotencyStore() = default;

    // Claims `key` for the caller (see Claim).
    virtual Claim claim(const std::string& key) = 0;
    // The handler accepted: from now on `key` is a duplicate.
    virtual void confirm(const std::string& key) = 0;
    // The handler returned a decision other than accept: release the claim so a redelivery
    // runs it again. (A handler that throws keeps its claim: forget is not called.)
    virtual void forget(const std::string& key) = 0;
    // How long the live claim on `key` still holds, for the line idempotent() logs when a
    // delivery meets one; nullopt when there is none or the store cannot tell (the default).
    // Asked only after claim() answered in_progress, once per key.
    virtual std::optional<std::chrono::milliseconds> lease_left(const std::string& key);

    // True when this call claimed `key` (claim(key) == Claim::claimed).
    bool first_time(const std::string& key) { return claim(key) == Claim::claimed; }
};

// How idempotent() picks the key and answers a message someone else is handling.
template <class T>
struct IdempotentOptions {
    // The key of a message; empty: its envelope id (x-acemq-id), which stays the same
    // across every redelivery and retry. Give one to treat two messages as the same, e.g.
    // [](const Message<Payment>& m) { return m.payload.payment_id; }. It must not answer
    // "": a message with an empty key is rejected. An exception from it is the consumer's
    // to retry. A message sent with no id at all (another client's, with no x-acemq-id and
    // no message-id) is given a fresh one on each delivery, so only a key function can
    // recognise its redeliveries: without one, idempotent() warns once per queue (and the
    // bus counts them, acemq.messages.without.id.total).
    std::function<std::string(const Message<T>&)> key{};
    // How long an in_progress message waits before it is looked at again.
    std::chrono::milliseconds in_progress_delay = default_in_progress_delay;
};

// `handler` run at most once per key (docs/patterns.md §1.5). For each message:
//   1. the key: options.key(message), or the envelope id (a made-up one, when the message
//      came with none: a warning once per queue, see IdempotentOptions::key);
//   2. an empty key: reject(FatalError "acemq: message <id> produced an empty idempotency
//      key"); the handler does not run (falling back to the id would dedupe nothing);
//   3. store.claim(key); if the store throws: retry(that failure), handler not run — the
//      store is broken, not the message;
//   4. duplicate: accept(); in_progress: in_progress(options.in_progress_delay), and the first
//      time a key meets a live claim, an info line saying so and when the claim's lease ends
//      (store.lease_left);
//   5. claimed: the handler runs. It accepts: store.confirm(key); it answers anything else:
//      store.forget(key), so the next delivery runs it again. Either call failing is logged
//      and swallowed: the handler's answer is returned unchanged (a failed confirm lets a
//      redelivery run the handler again once the claim expires; a failed forget leaves the
//      claim to expire, in_progress until then).
//   6. The handler throws: the claim stays and the exception goes on to the consumer, which
//      retries. The work may have happened before the throw (the card was charged, then the
//      receipt service failed), so the retries answer in_progress instead of running the
//      handler again, until the claim's lease runs out (the store's ttl or claim timeout);
//      then the next delivery runs it. A handler that did nothing and wants to run again at
//      once returns retry(...) instead of throwing. (The family's rule: docs/design.md §3.)
//
// T is deduced from a handler taking `const Message<T>&`; name it for a generic lambda:
// idempotent<Payment>(store, [](const auto& m) { ... }).
//
// The store is held by reference: it must outlive every consumer running the returned
// handler. The returned handler is as thread-safe as `handler` (stores are thread-safe).
template <class T = void, class H, class P = typename detail::chosen_payload<T, H>::type>
    requires std::invocable<H&, const Message<P>&>
Handler<P> idempotent(IdempotencyStore& store, H handler, IdempotentOptions<P> options = {}) {
    detail::checked_in_progress_delay(options.in_progress_delay);
    return [&store, handler = Handler<P>(std::move(handler)), options = std::move(options),
            notes = detail::new_idempotent_notes()](const Message<P>& message) {
        if (!options.key && message.envelope.id_generated)
            detail::note_message_without_id(*notes, message.queue, message.envelope.id);
        const std::string key = options.key ? options.key(message) : message.envelope.id;
        return detail::run_idempotently(store, key, message.envelope.id, message.queue, options.in_progress_delay,
                                        *notes, [&] { return handler(message); });
    };
}

// idempotent() as middleware for chain(), keyed by the envelope id:
//
//   bus.consume<Order>("orders.new", acemq::chain(handle, acemq::with_logging(), acemq::with_idempotency(seen)));
//
// Throws InvalidArgument for a negative delay. The store is held by reference and must
// outlive the consumer.
inline auto with_idempotency(IdempotencyStore& store,
                             std::chrono::milliseconds in_progress_delay = default_in_progress_delay) {
    return [&store, delay = detail::checked_in_progress_delay(in_progress_delay)]<class T>(Handler<T> next) {
        return idempotent<T>(store, std::move(next), {.in_progress_delay = delay});
    };
}

// The same with a key function, for one payload type:
//   acemq::with_idempotency<Order>(seen, {.key = [](const acemq::Message<Order>& m) { return m.payload.id; }})
template <class T>
Middleware<T> with_idempotency(IdempotencyStore& store, IdempotentOptions<T> options) {
    detail::checked_in_progress_delay(options.in_progress_delay);
    return [&store, options = std::move(options)](Handler<T> next) {
        return idempotent<T>(store, std::move(next), options);
    };
}

}  // namespace acemq
