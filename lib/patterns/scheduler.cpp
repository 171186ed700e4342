#include <acemq/scheduler.hpp>

#include <atomic>
#include <mutex>
#include <stop_token>

#include <acemq/ack.hpp>
#include <acemq/naming.hpp>
#include <acemq/uuid.hpp>
#include "publish_failure.hpp"
#include "quoted_text.hpp"
#include "text_header.hpp"

namespace acemq {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds shortest_rung = schedule_rungs.back();

bool is_schedule_header(std::string_view name) noexcept { return name.starts_with("x-schedule-"); }

// What the broker writes on a message each time it dead-letters it. A hop is a new publish
// and a delivery a new message, so neither carries the rungs' history on.
bool is_death_header(std::string_view name) noexcept {
    return name == "x-death" || name.starts_with("x-first-death-") || name.starts_with("x-last-death-");
}

template <class Drop>
Headers without(const Headers& headers, Drop drop) {
    Headers kept;
    for (const auto& [name, value] : headers)
        if (!drop(name)) kept.insert_or_assign(name, value);
    return kept;
}

// Where a scheduled message goes and when, as its x-schedule-* headers say.
struct Target {
    std::string exchange;
    std::string routing_key;
    EpochMillis due;
    std::string content_type;
};

}  // namespace

std::string schedule_rung_queue(milliseconds rung) {
    return std::string(schedule_exchange) + "." + rung_delay_name(rung);
}

std::optional<milliseconds> schedule_rung_for(milliseconds remaining) {
    // Exactly 1 s is delivered, as the family's pinned "≤1 s delivered immediately" says (its
    // wire contract writes "< 1 s"; with millisecond time the two differ at that one point only).
    if (remaining <= shortest_rung) return std::nullopt;
    for (milliseconds rung : schedule_rungs)
        if (rung <= remaining) return rung;
    return std::nullopt;
}

Topology scheduler_topology() {
    Topology topology;
    topology.exchange(schedule_exchange, ExchangeKind::direct, {.durable = true});
    for (milliseconds rung : schedule_rungs)
        topology.queue(schedule_rung_queue(rung),
                       {.type = QueueType::classic,
                        .arguments = FieldTable{
                            {std::string(argument::message_ttl), FieldValue(static_cast<std::int64_t>(rung.count()))},
                            {std::string(argument::dead_letter_exchange), FieldValue(schedule_exchange)},
                            {std::string(argument::dead_letter_routing_key), FieldValue(schedule_due_queue)},
                        }});
    topology.queue(schedule_due_queue, {.type = QueueType::classic});
    for (milliseconds rung : schedule_rungs) {
        const std::string queue = schedule_rung_queue(rung);
        topology.bind(queue, schedule_exchange, queue);
    }
    topology.bind(schedule_due_queue, schedule_exchange, schedule_due_queue);
    return topology;
}

namespace detail {

// What the control queue's handler shares with the Scheduler: everything but the consumer,
// so that a handler still running as the Scheduler goes keeps it alive.
class ScheduleLadder {
public:
    ScheduleLadder(Bus& bus, std::shared_ptr<const Codec> codec)
        : transport_(bus.transport()), origin_(bus.origin()), codec_(std::move(codec)), clock_(bus.clock()),
          real_time_(clock_ == system_clock()), wall_anchor_(epoch_millis_now()), clock_anchor_(clock_->now()) {}

    const std::shared_ptr<const Codec>& codec() const noexcept { return codec_; }
    const std::string& origin() const noexcept { return origin_; }

    EpochMillis now() const {
        if (real_time_) return epoch_millis_now();
        return wall_anchor_ + std::chrono::duration_cast<milliseconds>(clock_->now() - clock_anchor_);
    }

    // Sends a message on its way: to a rung while more than a second is left, else to its
    // destination, with `envelope` (its x-schedule-* headers included) minus the headers
    // no hop carries on.
    SendResult route(Envelope envelope, const Target& target, const Bytes& body, const std::string& reply_to) {
        const EpochMillis now = this->now();
        const milliseconds remaining = target.due > now ? target.due - now : milliseconds(0);
        envelope.headers = without(envelope.headers, is_death_header);
        if (const std::optional<milliseconds> rung = schedule_rung_for(remaining)) {
            const std::string queue = schedule_rung_queue(*rung);
            SendResult result = publish(envelope, std::string(schedule_exchange), queue, body,
                                        std::string(content_types::octet_stream), reply_to);
            ++hops_;
            return result;
        }
        return deliver(std::move(envelope), target, body, reply_to);
    }

    // The control queue's handler.
    Ack handle(const RawMessage& message) {
        std::optional<Target> target = read_target(message);
        if (!target) return reject(last_refusal(message));
        const EpochMillis now = this->now();
        if (target->due > now && target->due - now <= shortest_rung) {
            // Under a second left: no rung is that short, so the rest is waited out here.
            // Stopped by close(), which delivers it now rather than hold it back.
            clock_->wait_until(clock_->now() + (target->due - now), stop_.get_token());
        }
        route(message.envelope, *target, message.payload, message.reply_to);
        return accept();
    }

    void stop() { stop_.request_stop(); }

    std::atomic<std::uint64_t> scheduled_{0};
    std::atomic<std::uint64_t> delivered_{0};
    std::atomic<std::uint64_t> hops_{0};

private:
    SendResult deliver(Envelope envelope, const Target& target, const Bytes& body, const std::string& reply_to) {
        envelope.headers = without(
            envelope.headers, [](std::string_view name) { return is_schedule_header(name) || is_death_header(name); });
        envelope.type = std::string(scheduled_message_type);
        envelope.attempt = 1;
        envelope.first_seen = now();
        envelope.error.clear();
        SendResult result = publish(envelope, target.exchange, target.routing_key, body, target.content_type, reply_to);
        ++delivered_;
        return result;
    }

    SendResult publish(const Envelope& envelope, const std::string& exchange, const std::string& routing_key,
                       const Bytes& body, const std::string& content_type, const std::string& reply_to) {
        const PublishResult published = transport_.publish(OutboundMessage{.exchange = exchange,
                                                                           .routing_key = routing_key,
                                                                           .body = body,
                                                                           .content_type = content_type,
                                                                           .message_id = envelope.id,
                                                                           .headers = pack_headers(envelope),
                                                                           .reply_to = reply_to,
                                                                           .persistent = true,
                                                                           .mandatory = true});
        if (auto failure = detail::publish_failure(published, {envelope.id, exchange, routing_key, true}))
            throw *failure;
        return SendResult{.message_id = envelope.id, .confirmed = published.confirmed, .routed = published.routed};
    }

    // The message's x-schedule-* headers, or nullopt when they are missing or unreadable.
    static std::optional<Target> read_target(const RawMessage& message) {
        const Headers& headers = message.envelope.headers;
        std::optional<std::string> exchange = detail::text_header(headers, header::schedule_exchange);
        std::optional<std::string> routing_key = detail::text_header(headers, header::schedule_routing_key);
        const auto due = headers.find(header::schedule_due_at);
        if (!exchange || !routing_key || due == headers.end()) return std::nullopt;
        const std::optional<std::int64_t> due_ms = due->second.as_integer();
        if (!due_ms) return std::nullopt;
        std::optional<std::string> content_type = detail::text_header(headers, header::schedule_content_type);
        return Target{.exchange = std::move(*exchange),
                      .routing_key = std::move(*routing_key),
                      .due = EpochMillis(milliseconds(*due_ms)),
                      .content_type = content_type && !content_type->empty() ? std::move(*content_type)
                                                                             : std::string(content_types::json)};
    }

    // Why read_target refused `message`, in words for x-acemq-error.
    static FatalError last_refusal(const RawMessage& message) {
        const Headers& headers = message.envelope.headers;
        std::string missing;
        for (std::string_view name :
             {header::schedule_exchange, header::schedule_routing_key, header::schedule_due_at}) {
            const auto found = headers.find(name);
            const bool readable =
                found != headers.end() && (name == header::schedule_due_at ? found->second.as_integer().has_value()
                                                                           : found->second.as_text().has_value());
            if (found == headers.end() || !readable)
                missing += (missing.empty() ? "" : ", ") + std::string(name) +
                           (found == headers.end()
                                ? " is missing"
                                : " is " + detail::in_quotes(found->second.to_string()) +
                                      (name == header::schedule_due_at ? ", not an integer of epoch milliseconds"
                                                                       : ", not text"));
        }
        return FatalError("acemq: message " + detail::shown_text(message.envelope.id) + " on " +
                          std::string(schedule_due_queue) + " is not a scheduled message it can deliver: " + missing +
                          ". Schedule messages with acemq::Scheduler");
    }

    Transport& transport_;
    std::string origin_;
    std::shared_ptr<const Codec> codec_;
    std::shared_ptr<Clock> clock_;
    bool real_time_;
    EpochMillis wall_anchor_;
    Clock::time_point clock_anchor_;
    std::stop_source stop_;
};

}  // namespace detail

class Scheduler::State {
public:
    std::shared_ptr<detail::ScheduleLadder> ladder;
    std::mutex lock;  // guards consumer
    std::optional<Consumer> consumer;
    std::atomic<bool> closed{false};
};

Scheduler::Scheduler(Bus& bus, SchedulerOptions options) : state_(std::make_shared<State>()) {
    state_->ladder =
        std::make_shared<detail::ScheduleLadder>(bus, options.codec ? std::move(options.codec) : bus.codec());
    bus.declare(scheduler_topology());
    state_->consumer.emplace(bus.consume_raw(
        schedule_due_queue, [ladder = state_->ladder](const RawMessage& message) { return ladder->handle(message); },
        ConsumerOptions{.prefetch = options.prefetch}));
}

Scheduler::Scheduler(Scheduler&&) noexcept = default;
Scheduler& Scheduler::operator=(Scheduler&& other) noexcept {
    if (this != &other) {
        close();
        state_ = std::move(other.state_);
    }
    return *this;
}

Scheduler::~Scheduler() { close(); }

void Scheduler::close() {
    if (!state_) return;
    std::lock_guard guard(state_->lock);
    if (state_->closed.exchange(true)) return;
    state_->ladder->stop();
    if (state_->consumer) state_->consumer->close();
    state_->consumer.reset();
}

const std::shared_ptr<const Codec>& Scheduler::codec() const {
    if (!state_) throw UsageError("acemq: this Scheduler was moved from; use the one it was moved to");
    return state_->ladder->codec();
}

SendResult Scheduler::after_raw(milliseconds delay, std::string exchange, std::string routing_key, Encoded body,
                                const SendOptions& options) {
    codec();  // refuses a moved-from scheduler before its ladder is read
    return at_raw(state_->ladder->now() + delay, std::move(exchange), std::move(routing_key), std::move(body), options);
}

SendResult Scheduler::at_raw(EpochMillis when, std::string exchange, std::string routing_key, Encoded body,
                             const SendOptions& options) {
    codec();
    if (state_->closed) throw UsageError("acemq: this Scheduler is closed; make a new one to schedule messages");
    const auto refuse = [](std::string_view field) {
        return InvalidArgument("acemq: a scheduled message cannot be given SendOptions::" + std::string(field) +
                               ": the family types it ScheduledMessage and delivers it as a new message (attempt 1, "
                               "first seen when it is delivered); put what it is in a header of your own");
    };
    if (!options.type.empty()) throw refuse("type");
    if (options.attempt) throw refuse("attempt");
    if (options.first_seen) throw refuse("first_seen");

    detail::ScheduleLadder& ladder = *state_->ladder;
    Envelope envelope;
    envelope.id = options.message_id.empty() ? new_uuid() : options.message_id;
    envelope.type = std::string(scheduled_message_type);
    envelope.version = options.version;
    envelope.correlation = options.correlation.empty() ? envelope.id : options.correlation;
    envelope.causation = options.causation;
    envelope.origin = options.origin.empty() ? ladder.origin() : options.origin;
    envelope.first_seen = ladder.now();
    envelope.claim = options.claim;
    for (const auto& [name, value] : options.headers) {
        if (is_schedule_header(name))
            throw InvalidArgument("acemq: the header " + name +
                                  " is the scheduler's own; the scheduler writes every x-schedule-* header itself");
        set_header(envelope, name, value);
    }
    const Target target{.exchange = std::move(exchange),
                        .routing_key = std::move(routing_key),
                        .due = when,
                        .content_type = std::move(body.content_type)};
    set_header(envelope, std::string(header::schedule_exchange), target.exchange);
    set_header(envelope, std::string(header::schedule_routing_key), target.routing_key);
    set_header(envelope, std::string(header::schedule_due_at),
               static_cast<std::int64_t>(when.time_since_epoch().count()));
    set_header(envelope, std::string(header::schedule_content_type), target.content_type);

    SendResult result = ladder.route(std::move(envelope), target, body.body, options.reply_to);
    ++ladder.scheduled_;
    return result;
}

std::uint64_t Scheduler::scheduled() const noexcept { return state_ ? state_->ladder->scheduled_.load() : 0; }
std::uint64_t Scheduler::delivered() const noexcept { return state_ ? state_->ladder->delivered_.load() : 0; }
std::uint64_t Scheduler::hops() const noexcept { return state_ ? state_->ladder->hops_.load() : 0; }

std::string Scheduler::to_string() const {
    std::string rungs;
    for (milliseconds rung : schedule_rungs) rungs += (rungs.empty() ? "'" : ", '") + rung_delay_name(rung) + "'";
    return "Scheduler(rungs=[" + rungs + "], scheduled=" + std::to_string(scheduled()) +
           ", delivered=" + std::to_string(delivered()) + ", hops=" + std::to_string(hops()) + ")";
}

}  // namespace acemq
