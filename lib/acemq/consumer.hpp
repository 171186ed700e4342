// A running consumer: `concurrency` workers taking deliveries of one queue, each settled
// the family's way (settlement.hpp). Made by Bus::consume; closes (drains) when destroyed.
//
// A message the consumer sets aside ({queue}.dlq or {queue}.parked) that cannot be published
// there (no such queue, e.g. with declare = false; refused; lost) is never dropped: it goes
// back to its queue (nack with requeue), the observers hear set_aside_failed (the bus's
// Metrics count acemq.messages.set.aside.failed), and the worker pauses before its next delivery,
// 100 ms doubling to 5 s while the failures go on, so such a queue does not spin a core.
//
// Closing stops new deliveries, hands back the ones that arrived but did not start, waits
// for running handlers up to a deadline (default 20 s), then cancels the stragglers' waits
// and leaves what they hold unsettled, so the broker delivers it again.
//
// A copy the transport refuses as too large to encode (PublishResult too_large) never comes
// round again: a retry or in-progress copy parks the message instead, the refusal its reason;
// a set-aside copy refused so is sent once more without its application headers and its
// message-id property (the id stays in x-acemq-id), its error cut to 1 KiB. A delivery whose
// headers the transport could not read (InboundMessage::decode_failure) is parked as
// undecodable, its handler never run.
//
// close() is thread-safe and idempotent. Called from inside one of the consumer's own
// handlers (or the Consumer destroyed there), it does not wait for that handler: it stops
// deliveries, hands back the unstarted ones and returns false at once; the handler's
// delivery is settled as usual when it returns, and the last worker to finish completes the
// close (releases the subscription, ends the threads).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <acemq/codec.hpp>
#include <acemq/detail/cores.hpp>
#include <acemq/interceptor.hpp>
#include <acemq/message.hpp>
#include <acemq/retry.hpp>

namespace acemq {

inline constexpr std::chrono::milliseconds default_drain_timeout{20000};
inline constexpr std::chrono::milliseconds default_stall_after{60000};
// The most workers a consumer runs: each is a thread. More messages in flight come from the
// prefetch, not from more threads.
inline constexpr int max_concurrency = 1024;

struct ConsumerOptions {
    std::optional<RetryPolicy> retry{};    // default: the bus's policy
    std::uint16_t prefetch = 0;            // 0: the bus's (20 unless changed)
    int concurrency = 0;                   // 0: the bus's (1, which keeps order); at most max_concurrency
    std::shared_ptr<const Codec> codec{};  // default: the bus's codec
    std::string tag{};                     // default: acemq-{queue}, then acemq-{queue}-2, ...
    // Consumer arguments for the broker, e.g. x-stream-offset (stream.hpp's read_stream sets it).
    // With x-stream-offset the consumer reads a stream, which no delivery leaves and which
    // takes no nack: what it would hand back it acks instead, and a set-aside that cannot be
    // published is tried again in place (paused as above) until it goes or the consumer closes.
    FieldTable arguments{};
    // Declare where failures go ({queue}.dlq, {queue}.parked, acemq.dlx, the policy's rungs
    // and acemq.retry) once the queue is known to exist (none for a missing one, whose consume
    // fails). Off without configure permission, or for one-off readers of a .dlq (else .dlq.dlq).
    bool declare = true;
    std::chrono::milliseconds drain_timeout = default_drain_timeout;
    // Bus::health reports the consumer as stopped reading (degraded) when deliveries have
    // waited this long and no worker started one: every worker is stuck in a handler.
    std::chrono::milliseconds stall_after = default_stall_after;
};

template <class T>
using Handler = std::function<Ack(const Message<T>&)>;

class Consumer {
public:
    Consumer(Consumer&&) noexcept;
    Consumer& operator=(Consumer&&) noexcept;
    Consumer(const Consumer&) = delete;
    Consumer& operator=(const Consumer&) = delete;
    ~Consumer();

    const std::string& queue() const noexcept;
    // Drains within the consumer's drain_timeout; true when every running handler finished.
    bool close();
    bool close(std::chrono::milliseconds timeout);

private:
    friend class Bus;
    explicit Consumer(std::shared_ptr<detail::ConsumerCore> core);
    std::shared_ptr<detail::ConsumerCore> core_;
};

}  // namespace acemq

// What Bus::consume needs to hand a typed handler to the engine; not API.
#include <acemq/detail/handler.hpp>
