#include <acemq/consumer.hpp>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <system_error>

#include <acemq/log.hpp>
#include <acemq/naming.hpp>
#include <acemq/stream.hpp>
#include "consumer_core.hpp"
#include "interceptor_chain.hpp"
#include "publish_failure.hpp"
#include "quoted_text.hpp"

namespace acemq {

namespace detail {

namespace {

double unit_draw() {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(generator);
}

constexpr std::chrono::milliseconds stragglers_grace{500};
// How long a worker pauses after a set-aside that could not be published: doubled at each
// failure in a row, up to the longest, so that a queue of such messages does not spin a core
// while the broker hands each one straight back.
constexpr std::chrono::milliseconds first_set_aside_pause{100};
constexpr std::chrono::milliseconds longest_set_aside_pause{5000};

bool taken(const PublishResult& result) { return result.confirmed && result.routed; }

// Refused unwritten because the transport cannot encode it: the same copy fails every time.
bool too_large(const PublishResult& result) {
    return !result.confirmed && result.why == PublishResult::Unconfirmed::too_large;
}

// Cuts `text` to at most `size` bytes, at a UTF-8 character boundary.
// What a copy's properties take at most on any transport's wire, as TransportInfo::
// max_properties_bytes says the engine counts: each header's name and value plus 16 bytes,
// the content type and reply-to plus 16 each. A trimmed copy holds only the reserved
// headers, each a string or an integer (counted as 8).
std::size_t wire_bound(const Headers& headers, const InboundMessage& original) {
    std::size_t total = 32 + original.content_type().size() + original.reply_to().size();
    for (const auto& [name, value] : headers) {
        const auto* text = std::get_if<std::string>(&value.get());
        total += 16 + name.size() + (text != nullptr ? text->size() : 8);
    }
    return total;
}

// Cuts the envelope's own text fields (the id, correlation, type...), the longest ones to one
// common length, until the copy fits `room` bytes of properties (0: no limit), and says in
// the error what was cut. A hostile sender's 100 KB id travels twice (x-acemq-id, and
// x-acemq-correlation, which defaults to it): a copy cut only of its application headers
// would still be refused, every time. A route too long for the common length is dropped
// with its id and position, since a cut one would name steps that do not exist.
void fit(Envelope& envelope, const InboundMessage& original, std::size_t room) {
    // Room kept for the note saying what was cut (some 70 bytes a field), and the least a
    // field is cut to.
    constexpr std::size_t note_room = 640;
    constexpr std::size_t shortest_cut = 64;
    if (room == 0) return;
    if (envelope.correlation.empty()) envelope.correlation = envelope.id;  // what the copy carries anyway
    const std::size_t needed = wire_bound(render_headers(envelope), original) + note_room;
    if (needed <= room) return;
    std::string route;
    for (const std::string& step : envelope.route) route += (route.empty() ? "" : ",") + step;
    const std::pair<std::string_view, std::string*> fields[] = {
        {header::id, &envelope.id},
        {header::correlation, &envelope.correlation},
        {header::type, &envelope.type},
        {header::causation, &envelope.causation},
        {header::origin, &envelope.origin},
        {header::claim, &envelope.claim},
        {header::route_id, &envelope.route_id},
        {header::route, &route},
    };
    std::vector<std::size_t> sizes;
    for (const auto& [name, text] : fields) sizes.push_back(text->size());
    std::sort(sizes.begin(), sizes.end());
    const std::size_t texts = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
    // The longest length every field can keep with all of them within what is left.
    std::size_t left = texts > needed - room ? texts - (needed - room) : 0;
    std::size_t cut_to = sizes.back();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const std::size_t sharing = sizes.size() - i;
        if (sizes[i] * sharing > left) {
            cut_to = left / sharing;
            break;
        }
        left -= sizes[i];
    }
    cut_to = std::max(cut_to, shortest_cut);
    std::string note;
    for (const auto& [name, text] : fields) {
        if (text->size() <= cut_to) continue;
        const std::size_t was = text->size();
        if (text == &route) {
            envelope.route.clear();
            envelope.route_id.clear();
            envelope.route_position = 0;
            note += std::string(note.empty() ? "" : ", ") + std::string(name) + " (" + std::to_string(was) +
                    " bytes) dropped with its id and position";
            continue;
        }
        text->resize(detail::character_boundary(*text, cut_to));
        note += std::string(note.empty() ? "" : ", ") + std::string(name) + " cut from " + std::to_string(was) +
                " to " + std::to_string(text->size()) + " bytes";
    }
    envelope.error += " [" + note + ", so that the copy fits the " + std::to_string(room) +
                      " bytes of properties the transport carries in one message]";
}

// What is left of a set-aside copy the transport refused as too large: no application
// headers, the error cut to a size any transport carries (at a UTF-8 boundary), and the
// envelope's own fields cut to fit `room` (see fit), saying what was dropped and why.
Envelope trimmed(Envelope envelope, const std::string& refusal, const InboundMessage& original, std::size_t room) {
    constexpr std::size_t kept_error = 1024;
    envelope.headers.clear();
    std::string error = std::move(envelope.error);
    error.resize(detail::character_boundary(error, kept_error));
    std::string why = refusal;
    why.resize(detail::character_boundary(why, kept_error));
    envelope.error = error + " [set aside without its application headers and with this text cut to at most " +
                     std::to_string(kept_error) + " bytes, because the whole copy was refused: " + why + "]";
    fit(envelope, original, room);
    return envelope;
}

}  // namespace

Decoder raw_decoder(Handler<Bytes> handler) {
    auto shared = std::make_shared<Handler<Bytes>>(std::move(handler));
    return [shared](const ConsumeContext&, const Codec&, const RunStep& run) -> Ack {
        return run([handler = shared.get()](ConsumeContext& context) {
            return run_on_message(*handler, Bytes(context.body.begin(), context.body.end()), context);
        });
    };
}

std::shared_ptr<ConsumerCore> ConsumerCore::start(std::shared_ptr<BusCore> bus, std::string queue, Decoder decoder,
                                                  ConsumerOptions options) {
    if (queue.empty()) throw InvalidArgument("acemq: consume needs a queue name");
    const BusOptions& defaults = bus->options();
    RetryPolicy policy = options.retry.value_or(defaults.retry);
    if (options.prefetch == 0) options.prefetch = defaults.prefetch;
    if (options.concurrency == 0) options.concurrency = defaults.concurrency;
    if (options.concurrency < 1 || options.concurrency > max_concurrency)
        throw InvalidArgument("acemq: a consumer's concurrency must be between 1 and " +
                              std::to_string(max_concurrency) + ", got " + std::to_string(options.concurrency) +
                              ": each is a thread; for more messages in flight raise the prefetch instead");
    if (options.drain_timeout.count() < 0) throw InvalidArgument("acemq: a drain timeout cannot be negative");
    if (!options.codec) options.codec = defaults.codec;
    if (options.tag.empty()) options.tag = bus->default_tag(queue);

    // A declaration failure stops the consumer from starting: better than a consumer whose
    // failures have nowhere to go. Only for a queue that exists, though: the consume of one
    // that does not fails below with NOT_FOUND, and must leave no durable .dlq, .parked or
    // rung queues behind for it.
    const auto declare_failure_topology = [&bus](const std::string& name, const RetryPolicy& retry) {
        bus->transport().declare(consumer_topology(name, retry));
    };
    const bool declared = options.declare && bus->transport().queue_exists(queue);
    if (declared) declare_failure_topology(queue, policy);

    auto core = std::make_shared<ConsumerCore>(bus, std::move(queue), std::move(decoder), std::move(options),
                                               std::move(policy));
    bus->track(core);
    try {
        // Under the lock: a worker that finishes a close begun inside a handler reads workers_.
        std::lock_guard guard(core->lock_);
        for (int i = 0; i < core->options_.concurrency; ++i)
            core->workers_.emplace_back([self = core] { self->work(); });
    } catch (const std::system_error& error) {
        const std::size_t started = core->workers_.size();
        core->close(std::chrono::milliseconds(0));  // the workers started so far stop and are joined
        throw Error("acemq: could not start worker " + std::to_string(started + 1) + " of " +
                    std::to_string(core->options_.concurrency) + " for " + core->queue_ + ": " + error.what() +
                    "; the system has no more threads to give, so lower the consumer's concurrency");
    }
    try {
        ConsumeSpec spec{core->options_.prefetch, core->options_.tag, core->options_.arguments};
        core->subscription_ = bus->transport().consume(
            core->queue_, spec, [raw = core.get()](Delivery delivery) { raw->on_delivery(std::move(delivery)); });
        // Its owner declared the queue between the check and the consume.
        if (core->options_.declare && !declared) declare_failure_topology(core->queue_, core->policy_);
    } catch (...) {
        core->close(std::chrono::milliseconds(0));
        throw;
    }
    return core;
}

ConsumerCore::ConsumerCore(std::shared_ptr<BusCore> bus, std::string queue, Decoder decoder, ConsumerOptions options,
                           RetryPolicy policy)
    : bus_(std::move(bus)), queue_(std::move(queue)), decoder_(std::move(decoder)), options_(std::move(options)),
      policy_(std::move(policy)), codec_(options_.codec), instruments_(bus_->telemetry().consuming(queue_)),
      reads_stream_(options_.arguments.contains(argument::stream_offset)) {}

void ConsumerCore::on_delivery(Delivery delivery) {
    {
        std::lock_guard guard(lock_);
        if (waiting_.empty()) waiting_since_ = std::chrono::steady_clock::now();
        waiting_.push_back(std::move(delivery));
    }
    changed_.notify_one();
}

void ConsumerCore::work() {
    // A lone worker takes everything waiting when it wakes: one lock and one wake for many
    // deliveries, in the order they came. With more workers each takes one at a time, so
    // that no delivery waits behind a busy worker while another worker is free.
    const bool takes_all = options_.concurrency == 1;
    std::vector<Delivery> taken;
    std::unique_lock guard(lock_);
    for (;;) {
        changed_.wait(guard, [&] { return stopping_.load() || !waiting_.empty(); });
        if (stopping_) break;
        const std::size_t count = takes_all ? waiting_.size() : 1;
        for (std::size_t i = 0; i < count; ++i) {
            taken.push_back(std::move(waiting_.front()));
            waiting_.pop_front();
        }
        ++running_;
        taken_unstarted_.fetch_add(count, std::memory_order_relaxed);
        const std::uint64_t first_handout = handouts_->take(count);
        guard.unlock();
        handle(taken, first_handout);
        taken.clear();
        guard.lock();
        --running_;
        changed_.notify_all();
    }
    exited_.push_back(std::this_thread::get_id());
    changed_.notify_all();
    // A close begun inside a handler left the rest to the last worker out, unless someone
    // else is closing the consumer now (they finish it, joining this worker).
    if (!finish_when_idle_ || drained_ || exited_.size() < workers_.size()) return;
    guard.unlock();
    std::unique_lock one_at_a_time(close_lock_, std::try_to_lock);
    if (one_at_a_time) release(true, std::chrono::milliseconds(0));
}

void ConsumerCore::handle(std::vector<Delivery>& taken, std::uint64_t first_handout) {
    std::size_t next = 0;
    for (; next < taken.size() && (next == 0 || !stopping_); ++next) {
        taken_unstarted_.fetch_sub(1, std::memory_order_relaxed);
        last_started_.store(std::chrono::steady_clock::now(), std::memory_order_relaxed);
        const HandoutScope handling(Handout{handouts_, first_handout + next});
        process(taken[next]);
    }
    // Stopped: the rest go back as the ones still waiting did (stop_deliveries), passing
    // their places in the handout order.
    for (; next < taken.size(); ++next) {
        taken_unstarted_.fetch_sub(1, std::memory_order_relaxed);
        handouts_->pass(first_handout + next);
        try {
            hand_back(taken[next]);
        } catch (const std::exception& error) {
            // The connection is gone; the broker redelivers unsettled messages by itself.
            log(LogLevel::error, "engine",
                "could not hand back a delivery from " + queue_ + " that had not started: " + error.what());
        }
    }
}

void ConsumerCore::process(Delivery& delivery) {
    const InboundMessage& message = delivery.message();
    ConsumeContext context{queue_,
                           read_envelope(message),
                           message.body(),
                           message.content_type(),
                           message.routing_key(),
                           message.redelivered(),
                           message.reply_to()};
    if (instruments_) {
        instruments_->started(context.envelope.attempt);
        if (context.envelope.id_generated) instruments_->without_id();
    }
    const std::unique_ptr<Span> span = bus_->telemetry().start_process(queue_, context.envelope);
    const auto started = instruments_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    bool reached_handler = false;
    // Headers the transport could not read are as undecodable as a body no codec reads.
    const Settlement settlement = [&] {
        if (!message.decode_failure().empty()) return undecodable(DecodeError(std::string(message.decode_failure())));
        if (!span) return run_handler(context, reached_handler);
        // A publish from inside the handler continues this delivery's trace.
        const TraceScope in_this_trace(span->context());
        const SpanScope open_span(*span);
        return run_handler(context, reached_handler);
    }();
    const Seconds handled = instruments_ ? std::chrono::steady_clock::now() - started : Seconds{};
    bool carried_out = false;
    RetryWhere where = RetryWhere::consumer;
    try {
        carried_out = carry_out(delivery, context, settlement, where);
    } catch (const std::exception& error) {
        if (instruments_) instruments_->abandoned();
        log(LogLevel::error, "engine",
            "could not settle a delivery from " + queue_ + " (message " + shown_text(context.envelope.id) +
                "): " + error.what() + "; it goes back to the queue");
        if (!delivery.settled()) {
            try {
                hand_back(delivery);
            } catch (const std::exception& again) {
                // The connection is gone; the broker redelivers unsettled messages by itself.
                log(LogLevel::error, "engine", std::string("could not hand it back either: ") + again.what());
            }
        }
        return;
    }
    if (instruments_) {
        if (carried_out)
            instruments_->settled(settlement.outcome, reached_handler ? std::optional(handled) : std::nullopt, where);
        else
            instruments_->abandoned();
    }
    if (span && carried_out) Telemetry::end_process(*span, settlement);
    // Not carried out: the consumer closed under the handler and the message went back.
    if (carried_out) bus_->notify(SettledEvent{queue_, context.envelope, settlement});
}

Settlement ConsumerCore::run_handler(ConsumeContext& context, bool& reached_handler) {
    Ack ack = accept();
    try {
        // run_step throws nothing, so what leaves the decoder came from decoding.
        ack = decoder_(context, *codec_, [this, &context](const HandlerStep& step) { return run_step(context, step); });
        reached_handler = true;
    } catch (const StoreUnavailableError& error) {
        // The body may be sound and its store back by the next attempt: a retry, as the
        // handler throwing would be, and on a stream the parking a stream gives a retry.
        ack = retry(Failure::of(error));
        if (reads_stream_) ack = answer_on_stream(queue_, context.envelope, [&ack] { return ack; });
    } catch (...) {
        // Not only DecodeError: a bad_alloc, a length_error or whatever an application's codec
        // throws would otherwise end the worker and the process; the message waits in
        // {queue}.parked with the reason instead.
        return undecodable(Failure::of(std::current_exception()));
    }
    return decide(ack, context.envelope, policy_, context.envelope.age(epoch_millis_now()), unit_draw());
}

Ack ConsumerCore::run_step(ConsumeContext& context, const HandlerStep& step) const {
    try {
        return detail::run_chain<Ack>(bus_->consume_interceptors(), context, step);
    } catch (...) {
        return retry(Failure::of(std::current_exception(), "in the handler of queue " + queue_ + " (message " +
                                                               shown_text(context.envelope.id) + ")"));
    }
}

bool ConsumerCore::wait(std::chrono::milliseconds delay) {
    if (delay.count() <= 0) return true;
    return bus_->options().clock->wait_for(delay, cancel_.get_token());
}

PublishResult ConsumerCore::republish(const InboundMessage& original, const Envelope& envelope,
                                      const std::string& target, bool with_message_id) {
    OutboundMessage copy{"",
                         target,
                         Bytes(original.body().begin(), original.body().end()),
                         std::string(original.content_type()),
                         with_message_id ? envelope.id : "",
                         pack_headers(envelope),
                         std::string(original.reply_to()),
                         true,
                         true};
    return bus_->transport().publish(std::move(copy));
}

bool ConsumerCore::settle(Delivery& delivery, bool ack, bool requeue) {
    std::lock_guard guard(settle_lock_);
    if (released_) return false;
    if (ack)
        delivery.ack();
    else if (requeue)
        delivery.requeue();
    else
        delivery.reject();
    return true;
}

bool ConsumerCore::hand_back(Delivery& delivery) { return settle(delivery, reads_stream_, !reads_stream_); }

bool ConsumerCore::set_aside(Delivery& delivery, const ConsumeContext& context, const std::string& target,
                             const std::string& reason) {
    Envelope copy = context.envelope;
    copy.error = reason;
    for (;;) {
        PublishResult result = republish(delivery.message(), copy, target);
        if (too_large(result)) {
            log(LogLevel::warning, "engine",
                "message " + shown_text(copy.id) + " from " + queue_ + " is too large to set aside to " + target +
                    " as it is (" + result.return_reason +
                    "); it goes without its application headers, with its error cut short and, "
                    "where they do not fit, its own fields cut (its x-acemq-error says which)");
            // The id still travels in x-acemq-id; the message-id property may be what was too long.
            const std::size_t room = bus_->transport().describe().max_properties_bytes;
            result = republish(delivery.message(), trimmed(copy, result.return_reason, delivery.message(), room),
                               target, false);
        }
        if (taken(result)) {
            {
                std::lock_guard guard(lock_);
                set_aside_pause_ = std::chrono::milliseconds(0);
            }
            return settle(delivery, true);
        }
        // Nowhere to put it: hand it back rather than lose it (docs/wire-contract.md §6.3), and
        // slow down until a set-aside works again.
        std::chrono::milliseconds pause;
        {
            std::lock_guard guard(lock_);
            set_aside_pause_ = set_aside_pause_.count() == 0 ? first_set_aside_pause
                                                             : std::min(2 * set_aside_pause_, longest_set_aside_pause);
            pause = set_aside_pause_;
        }
        // The cause as a publish of it would be told (reached no queue, refused, lost, too large),
        // and the advice to declare the target only when it is missing. Not taken, so there is one.
        const PublishError failure = detail::publish_failure(result, {shown_text(copy.id), "", target, true}).value();
        log(LogLevel::warning, "engine",
            "message " + shown_text(copy.id) + " from " + queue_ + " could not be set aside to " + target + " (" +
                failure.what() + "): " +
                (reads_stream_
                     ? "it stays in the stream and this worker tries again in " + std::to_string(pause.count()) + " ms"
                     : "it goes back to " + queue_ + " and this worker waits " + std::to_string(pause.count()) +
                           " ms before its next delivery") +
                (failure.reason() == PublishError::Reason::unroutable
                     ? "; declare " + target +
                           " (or let the consumer declare it) so that it can leave "
                           "the queue"
                     : ""));
        if (instruments_) instruments_->set_aside_failed(target == parked_queue(queue_));
        bus_->notify_set_aside_failed(queue_, target);
        // A stream cannot take the message back (it never left), and a reader that moved past
        // it would leave a gap before its next checkpoint: it stays in this worker instead,
        // tried again after each pause until the set-aside works or the consumer closes.
        if (!reads_stream_) settle(delivery, false, true);
        std::unique_lock guard(lock_);
        const bool closing = changed_.wait_for(guard, pause, [&] { return stopping_.load(); });
        if (!reads_stream_) return false;
        if (closing) {
            guard.unlock();
            hand_back(delivery);
            return false;
        }
    }
}

bool ConsumerCore::carry_out(Delivery& delivery, const ConsumeContext& context, const Settlement& settlement,
                             RetryWhere& where) {
    switch (settlement.outcome) {
    case Outcome::acked: return settle(delivery, true);
    case Outcome::parked: return set_aside(delivery, context, parked_queue(queue_), settlement.reason);
    case Outcome::rejected:
    case Outcome::dead_lettered: return set_aside(delivery, context, dead_letter_queue(queue_), settlement.reason);
    case Outcome::in_progress:
        if (!wait(settlement.delay)) return hand_back(delivery);
        return requeue_copy(delivery, context, context.envelope);
    case Outcome::retried: break;
    }
    Envelope next = context.envelope;
    if (next.attempt < std::numeric_limits<std::int32_t>::max()) ++next.attempt;
    const RetryWait& retry_wait = *settlement.wait;
    if (retry_wait.in_broker) {
        const std::string rung = rung_queue(queue_, retry_wait.delay);
        const PublishResult to_rung = republish(delivery.message(), next, rung);
        if (taken(to_rung)) {
            where = RetryWhere::broker;
            return settle(delivery, true);
        }
        if (too_large(to_rung)) return park_unpublishable(delivery, context, to_rung);
        log(LogLevel::warning, "engine",
            "retry rung " + rung + " is missing (the publish reached no queue); message " + shown_text(next.id) +
                " waits in the consumer instead");
        if (instruments_) instruments_->rung_missing(rung);
        bus_->notify_rung_missing(queue_, rung);
    }
    where = retry_wait.delay.count() > 0 ? RetryWhere::consumer : RetryWhere::requeued;
    if (!wait(retry_wait.delay)) return hand_back(delivery);
    return requeue_copy(delivery, context, next);
}

bool ConsumerCore::requeue_copy(Delivery& delivery, const ConsumeContext& context, const Envelope& envelope) {
    const PublishResult result = republish(delivery.message(), envelope, queue_);
    if (taken(result)) return settle(delivery, true);
    if (too_large(result)) return park_unpublishable(delivery, context, result);
    return hand_back(delivery);
}

bool ConsumerCore::park_unpublishable(Delivery& delivery, const ConsumeContext& context, const PublishResult& refused) {
    // Handed back to the queue it would come round and be refused again, forever.
    return set_aside(delivery, context, parked_queue(queue_),
                     "could not be published again for another attempt: " + refused.return_reason);
}

ConsumerCore::Reading ConsumerCore::reading(bool ask_transport) {
    Reading now;
    {
        std::lock_guard guard(lock_);
        if (stopping_) return Reading{.open = false};
        const std::size_t unstarted = taken_unstarted_.load(std::memory_order_relaxed);
        now.in_flight = waiting_.size() + unstarted + running_;
        const auto quiet_since = std::max(last_started_.load(std::memory_order_relaxed), waiting_since_);
        now.stopped = (!waiting_.empty() || unstarted > 0) &&
                      std::chrono::steady_clock::now() - quiet_since > options_.stall_after;
    }
    if (!now.stopped && ask_transport) {
        try {
            now.stopped = !bus_->transport().queue_exists(queue_);
        } catch (const Error&) {
            // The transport's own check says what is wrong with the connection; a consumer
            // is only reported stopped for what is known of it.
        }
    }
    return now;
}

bool ConsumerCore::on_worker_thread() const {
    const std::thread::id me = std::this_thread::get_id();
    return std::any_of(workers_.begin(), workers_.end(),
                       [&](const std::thread& worker) { return worker.get_id() == me; });
}

void ConsumerCore::stop_deliveries() {
    std::deque<Delivery> unstarted;
    {
        std::lock_guard guard(lock_);
        if (stopping_) return;  // stopped already, by a close begun inside a handler
        stopping_ = true;
        unstarted.swap(waiting_);
    }
    changed_.notify_all();
    if (subscription_) subscription_->stop();
    {
        // Deliveries that arrived while stop() ran.
        std::lock_guard guard(lock_);
        for (Delivery& late : waiting_) unstarted.push_back(std::move(late));
        waiting_.clear();
    }
    for (Delivery& delivery : unstarted) hand_back(delivery);
}

bool ConsumerCore::close(std::chrono::milliseconds timeout) {
    bool inside = false;
    {
        std::lock_guard guard(lock_);
        inside = on_worker_thread();
    }
    if (inside) {
        // Waiting here for running handlers would wait for ourselves. Stop, and let the last
        // worker out finish; this handler's delivery is settled as usual when it returns.
        std::unique_lock one_at_a_time(close_lock_, std::try_to_lock);
        if (!one_at_a_time) return false;  // another thread is closing it and finishes the job
        {
            std::lock_guard guard(lock_);
            if (drained_) return *drained_;
            finish_when_idle_ = true;
        }
        stop_deliveries();
        return false;
    }

    std::lock_guard one_at_a_time(close_lock_);
    {
        std::lock_guard guard(lock_);
        if (drained_) return *drained_;
    }
    stop_deliveries();

    bool finished = false;
    {
        std::unique_lock guard(lock_);
        finished = changed_.wait_for(guard, timeout, [&] { return running_ == 0; });
        if (!finished) {
            guard.unlock();
            cancel_.request_stop();
            guard.lock();
            changed_.wait_for(guard, stragglers_grace, [&] { return running_ == 0; });
        }
    }
    release(finished, timeout);
    return finished;
}

void ConsumerCore::release(bool finished, std::chrono::milliseconds timeout) {
    {
        std::lock_guard guard(settle_lock_);
        released_ = true;
        if (subscription_) subscription_->close();
    }
    std::vector<std::thread> workers;
    std::vector<std::thread::id> exited;
    {
        std::lock_guard guard(lock_);
        workers.swap(workers_);
        exited = exited_;
        drained_ = finished;
    }
    for (std::thread& worker : workers) {
        const bool done = std::find(exited.begin(), exited.end(), worker.get_id()) != exited.end();
        if (worker.get_id() == std::this_thread::get_id())
            worker.detach();  // the last worker out, finishing a close begun inside a handler
        else if (done || finished)
            worker.join();
        else
            worker.detach();  // stuck in a handler: it keeps the core alive and settles nothing
    }
    if (!finished)
        log(LogLevel::warning, "engine",
            "consumer of " + queue_ + " closed with handlers still running after " + std::to_string(timeout.count()) +
                " ms; their messages were left unsettled "
                "and go back to the queue");
}

}  // namespace detail

Consumer::Consumer(std::shared_ptr<detail::ConsumerCore> core) : core_(std::move(core)) {}
Consumer::Consumer(Consumer&&) noexcept = default;
Consumer& Consumer::operator=(Consumer&& other) noexcept {
    if (this != &other) {
        if (core_) core_->close(core_->drain_timeout());
        core_ = std::move(other.core_);
    }
    return *this;
}
Consumer::~Consumer() {
    if (core_) core_->close(core_->drain_timeout());
}
const std::string& Consumer::queue() const noexcept { return core_->queue(); }
bool Consumer::close() { return core_->close(core_->drain_timeout()); }
bool Consumer::close(std::chrono::milliseconds timeout) { return core_->close(timeout); }

}  // namespace acemq
