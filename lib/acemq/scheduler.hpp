// Delayed delivery (docs/scheduling.md, which is also its wire contract): "publish this in ten
// minutes", on any broker, through a ladder of TTL queues the broker already knows how to run.
//
//   acemq::Scheduler scheduler{bus};
//   scheduler.after(10min, "billing", "invoice.remind", Reminder{"o-1"});
//   scheduler.at(std::chrono::sys_days{2027y / 1 / 1}, "", "greetings", Greeting{"happy new year"});
//
// The topology is the family's, byte for byte (scheduler_topology() below): the direct
// durable exchange acemq.schedule; five classic rung queues acemq.schedule.1h, .10m, .1m, .10s,
// .1s, each with exactly x-message-ttl (the rung in ms, signed 64-bit),
// x-dead-letter-exchange = acemq.schedule and x-dead-letter-routing-key = acemq.schedule.due;
// the classic control queue acemq.schedule.due without arguments; each bound to
// acemq.schedule on its own name. A scheduled message carries x-schedule-exchange,
// x-schedule-routing-key, x-schedule-due-at (integer epoch ms) and x-schedule-content-type,
// envelope type ScheduledMessage, content type application/octet-stream between rungs. It
// sits out the largest rung no longer than the time left, comes back through
// acemq.schedule.due, and goes round again until less than a rung is left; then it is
// published, body verbatim, to where it was meant to go, under its own content type
// (application/json when none was recorded) and a new ScheduledMessage envelope with the
// same id, without the x-schedule-* headers. Every scheduler publish is mandatory and
// persistent, and bypasses the publish interceptors (an engine republish, as retries are).
//
// When it arrives: never before it is due. The last part of a wait, under one second, is
// waited out in this process (the message held unacknowledged); the family delivers it
// then, up to a second early. A wait of 1 s or less from the start is not scheduled at all:
// it is published at once, as the family does. Late by however long the broker and this
// process take, and by the whole time no Scheduler consumes acemq.schedule.due.
//
// At least once: the broker holds the message throughout, so it survives a restart of the
// broker (RabbitMQ, or a durable inproc://NAME?data=FILE) and of this process; a crash
// between delivering it and acknowledging the control message delivers it twice, with the
// same message id (dedupe with the idempotency store).
//
// What cannot be scheduled or delivered, and where it goes:
//  - after()/at() whose publish fails throw PublishError: nothing was scheduled.
//  - a message on acemq.schedule.due without x-schedule-exchange, x-schedule-routing-key or
//    x-schedule-due-at, or whose due-at is not an integer, is rejected to
//    acemq.schedule.due.dlq, naming what is wrong (the control queue's consumer declares its
//    dead-letter half, as every consumer does; the family drops such messages).
//  - a due-at far in the future (the year 9999) hops the 1h rung for as long as it takes; a
//    negative one is due now.
//  - a due message its destination does not take (no queue bound, an exchange that does not
//    exist) is retried as the bus's retry policy says and then dead-lettered to
//    acemq.schedule.due.dlq with the reason; acemq::replay(bus, "acemq.schedule.due.dlq")
//    puts it back on acemq.schedule.due once the destination exists, and it is delivered.
//
// Threads: after, at and the counters are thread-safe. close() is idempotent and must not
// be called from a handler of the scheduler's own consumer.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <acemq/bus.hpp>
#include <acemq/codec.hpp>
#include <acemq/envelope.hpp>
#include <acemq/publisher.hpp>
#include <acemq/topology.hpp>

namespace acemq {

inline constexpr std::string_view schedule_exchange = "acemq.schedule";
inline constexpr std::string_view schedule_due_queue = "acemq.schedule.due";
inline constexpr std::string_view scheduled_message_type = "ScheduledMessage";
inline constexpr std::uint16_t default_schedule_prefetch = 50;
// Longest first, as the family declares them.
inline constexpr std::array<std::chrono::milliseconds, 5> schedule_rungs{
    std::chrono::hours(1), std::chrono::minutes(10), std::chrono::minutes(1), std::chrono::seconds(10),
    std::chrono::seconds(1)};

namespace header {
inline constexpr std::string_view schedule_exchange = "x-schedule-exchange";
inline constexpr std::string_view schedule_routing_key = "x-schedule-routing-key";
inline constexpr std::string_view schedule_due_at = "x-schedule-due-at";
inline constexpr std::string_view schedule_content_type = "x-schedule-content-type";
}  // namespace header

// "acemq.schedule.1h", "acemq.schedule.10m", ...: whole hours Nh, whole minutes Nm, else Ns.
std::string schedule_rung_queue(std::chrono::milliseconds rung);
// The rung a message with `remaining` to wait rides: the largest no longer than it; nullopt
// for 1 s or less, which is delivered rather than sent round again.
std::optional<std::chrono::milliseconds> schedule_rung_for(std::chrono::milliseconds remaining);
// What a Scheduler declares: the exchange, the rungs then the control queue, their bindings.
Topology scheduler_topology();

struct SchedulerOptions {
    std::shared_ptr<const Codec> codec{};                // encodes after()/at() payloads; default: the bus's
    std::uint16_t prefetch = default_schedule_prefetch;  // of the control queue's consumer
};

class Scheduler {
public:
    // Declares the topology and starts consuming acemq.schedule.due. Keeps a reference to
    // `bus`, which must outlive the scheduler. "Now" is the bus's clock: the system's wall
    // clock on real time; with a test's ManualClock, the wall time at construction plus how
    // far that clock has moved since, so a test can run the ladder in milliseconds.
    explicit Scheduler(Bus& bus, SchedulerOptions options = {});
    Scheduler(Scheduler&&) noexcept;
    Scheduler& operator=(Scheduler&&) noexcept;
    ~Scheduler();  // close()

    // Publishes `payload` to `exchange` with `routing_key` once `delay` has passed. Returns
    // the message id and what the broker said of the first publish (a rung, or the
    // destination when 1 s or less is left). Throws EncodeError, PublishError, and
    // InvalidArgument for options a scheduled message cannot carry (type, attempt,
    // first_seen: the family types it ScheduledMessage and delivers it as a new message).
    template <class T, class Rep, class Period>
    SendResult after(std::chrono::duration<Rep, Period> delay, std::string exchange, std::string routing_key,
                     const T& payload, const SendOptions& options = {}) {
        return after_raw(std::chrono::ceil<std::chrono::milliseconds>(delay), std::move(exchange),
                         std::move(routing_key), encode(*codec(), payload), options);
    }
    // The same at an instant. A sys_time is UTC by definition (Unix time), so the family's
    // "naive time" refusal has no C++ case: a wall-clock reading without a zone is a
    // std::chrono::local_time, which at() does not take; convert it with a time zone
    // (std::chrono::zoned_time) first. Rounded up to the millisecond.
    template <class T, class Duration>
    SendResult at(std::chrono::sys_time<Duration> when, std::string exchange, std::string routing_key, const T& payload,
                  const SendOptions& options = {}) {
        return at_raw(std::chrono::ceil<std::chrono::milliseconds>(when), std::move(exchange), std::move(routing_key),
                      encode(*codec(), payload), options);
    }
    template <class T, class Duration>
    SendResult at(std::chrono::local_time<Duration>, std::string, std::string, const T&, const SendOptions& = {}) {
        static_assert(!std::is_same_v<T, T>,
                      "Scheduler::at needs a std::chrono::sys_time (UTC); give a local time its zone first, "
                      "e.g. std::chrono::zoned_time{zone, local}.get_sys_time()");
        return {};
    }

    // Bytes already encoded, with their content type.
    SendResult after_raw(std::chrono::milliseconds delay, std::string exchange, std::string routing_key, Encoded body,
                         const SendOptions& options = {});
    SendResult at_raw(EpochMillis when, std::string exchange, std::string routing_key, Encoded body,
                      const SendOptions& options = {});

    // Since construction: after()/at() calls that succeeded, messages published to their
    // destination (at once or once due), publishes to a rung (the first one included).
    std::uint64_t scheduled() const noexcept;
    std::uint64_t delivered() const noexcept;
    std::uint64_t hops() const noexcept;

    // "Scheduler(rungs=['1h', '10m', '1m', '10s', '1s'], scheduled=1, delivered=0, hops=1)"
    std::string to_string() const;

    // Stops consuming acemq.schedule.due; deletes nothing (what waits on the rungs stays there
    // for the next Scheduler). A message held for its last second is delivered at once
    // rather than kept. Throws UsageError from after()/at() once closed.
    void close();

    class State;  // not API

private:
    const std::shared_ptr<const Codec>& codec() const;
    std::shared_ptr<State> state_;
};

}  // namespace acemq
