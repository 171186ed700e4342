#include "acemq/consumer.hpp"

#include <algorithm>
#include <limits>
#include <random>

#include "acemq/log.hpp"
#include "acemq/naming.hpp"
#include "consumer_core.hpp"
#include "interceptor_chain.hpp"

namespace acemq {

namespace detail {

namespace {

double unit_draw() {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(generator);
}

constexpr std::chrono::milliseconds stragglers_grace{500};

}  // namespace

Decoder raw_decoder(Handler<Bytes> handler) {
    auto shared = std::make_shared<Handler<Bytes>>(std::move(handler));
    return [shared](const ConsumeContext&, const Codec&) -> HandlerStep {
        return [shared](ConsumeContext& context) {
            return run_on_message(*shared, Bytes(context.body.begin(), context.body.end()), context);
        };
    };
}

std::shared_ptr<ConsumerCore> ConsumerCore::start(std::shared_ptr<BusCore> bus, std::string queue, Decoder decoder,
                                                  ConsumerOptions options) {
    if (queue.empty()) throw InvalidArgument("acemq: consume needs a queue name");
    const BusOptions& defaults = bus->options();
    RetryPolicy policy = options.retry.value_or(defaults.retry);
    if (options.prefetch == 0) options.prefetch = defaults.prefetch;
    if (options.concurrency == 0) options.concurrency = defaults.concurrency;
    if (options.concurrency < 1)
        throw InvalidArgument("acemq: a consumer's concurrency must be at least 1, got " +
                              std::to_string(options.concurrency));
    if (options.drain_timeout.count() < 0)
        throw InvalidArgument("acemq: a drain timeout cannot be negative");
    if (!options.codec) options.codec = defaults.codec;
    if (options.tag.empty()) options.tag = bus->default_tag(queue);

    // A declaration failure stops the consumer from starting: better than a consumer whose
    // failures have nowhere to go.
    if (options.declare) bus->transport().declare(consumer_topology(queue, policy));

    auto core = std::make_shared<ConsumerCore>(bus, std::move(queue), std::move(decoder), std::move(options),
                                               std::move(policy));
    bus->track(core);
    for (int i = 0; i < core->options_.concurrency; ++i)
        core->workers_.emplace_back([self = core] { self->work(); });
    try {
        ConsumeSpec spec{core->options_.prefetch, core->options_.tag, {}};
        core->subscription_ = bus->transport().consume(core->queue_, spec,
                                                       [raw = core.get()](Delivery delivery) { raw->on_delivery(std::move(delivery)); });
    } catch (...) {
        core->close(std::chrono::milliseconds(0));
        throw;
    }
    return core;
}

ConsumerCore::ConsumerCore(std::shared_ptr<BusCore> bus, std::string queue, Decoder decoder, ConsumerOptions options,
                           RetryPolicy policy)
    : bus_(std::move(bus)), queue_(std::move(queue)), decoder_(std::move(decoder)), options_(std::move(options)),
      policy_(std::move(policy)), codec_(options_.codec) {}

void ConsumerCore::on_delivery(Delivery delivery) {
    {
        std::lock_guard guard(lock_);
        waiting_.push_back(std::move(delivery));
    }
    changed_.notify_one();
}

void ConsumerCore::work() {
    std::unique_lock guard(lock_);
    for (;;) {
        changed_.wait(guard, [&] { return stopping_ || !waiting_.empty(); });
        if (stopping_) break;
        Delivery delivery = std::move(waiting_.front());
        waiting_.pop_front();
        ++running_;
        guard.unlock();
        process(delivery);
        guard.lock();
        --running_;
        changed_.notify_all();
    }
    exited_.push_back(std::this_thread::get_id());
    changed_.notify_all();
}

void ConsumerCore::process(Delivery& delivery) {
    const InboundMessage& message = delivery.message();
    ConsumeContext context{queue_,           read_envelope(message.headers, message.routing_key, message.message_id),
                           message.body,     message.content_type,
                           message.routing_key, message.redelivered,
                           message.reply_to};
    const Settlement settlement = run_handler(context);
    bool carried_out = false;
    try {
        carried_out = carry_out(delivery, context, settlement);
    } catch (const std::exception& error) {
        log(LogLevel::error, "could not settle a delivery from " + queue_ + " (message " + context.envelope.id +
                                 "): " + error.what() + "; it goes back to the queue");
        if (!delivery.settled()) {
            try {
                settle(delivery, false, true);
            } catch (const std::exception& again) {
                // The connection is gone; the broker redelivers unsettled messages by itself.
                log(LogLevel::error, std::string("could not hand it back either: ") + again.what());
            }
        }
        return;
    }
    // Not carried out: the consumer closed under the handler and the message went back.
    if (carried_out) bus_->notify(SettledEvent{queue_, context.envelope, settlement});
}

Settlement ConsumerCore::run_handler(ConsumeContext& context) {
    HandlerStep step;
    try {
        step = decoder_(context, *codec_);
    } catch (...) {
        // Not only DecodeError: a bad_alloc, a length_error or whatever an application's codec
        // throws would otherwise end the worker and the process; the message waits in
        // {queue}.parked with the reason instead.
        return undecodable(Failure::of(std::current_exception()));
    }
    Ack ack = accept();
    try {
        ack = detail::run_chain<Ack>(*bus_->consume_interceptors(), context, step);
    } catch (...) {
        ack = retry(Failure::of(std::current_exception()));
    }
    return decide(ack, context.envelope, policy_, context.envelope.age(epoch_millis_now()), unit_draw());
}

bool ConsumerCore::wait(std::chrono::milliseconds delay) {
    if (delay.count() <= 0) return true;
    return bus_->options().clock->wait_for(delay, cancel_.get_token());
}

bool ConsumerCore::republish(const InboundMessage& original, const Envelope& envelope, const std::string& target) {
    OutboundMessage copy{"",       target, original.body, original.content_type, envelope.id, render_headers(envelope),
                         original.reply_to, true, true};
    const PublishResult result = bus_->transport().publish(std::move(copy));
    return result.confirmed && result.routed;
}

bool ConsumerCore::settle(Delivery& delivery, bool ack, bool requeue) {
    std::lock_guard guard(settle_lock_);
    if (released_) return false;
    if (ack)
        delivery.ack();
    else
        delivery.nack(requeue);
    return true;
}

bool ConsumerCore::set_aside(Delivery& delivery, const ConsumeContext& context, const std::string& target,
                             const std::string& reason) {
    Envelope copy = context.envelope;
    copy.error = reason;
    if (republish(delivery.message(), copy, target)) return settle(delivery, true);
    // Nowhere to put it: let the broker's own dead-lettering, if the queue has one, be the
    // last resort rather than circling the message forever.
    log(LogLevel::warning, "message " + copy.id + " from " + queue_ + " could not be set aside to " + target +
                               " (unroutable or unconfirmed); rejected without requeue");
    return settle(delivery, false, false);
}

bool ConsumerCore::carry_out(Delivery& delivery, const ConsumeContext& context, const Settlement& settlement) {
    switch (settlement.outcome) {
        case Outcome::acked:
            return settle(delivery, true);
        case Outcome::parked:
            return set_aside(delivery, context, parked_queue(queue_), settlement.reason);
        case Outcome::rejected:
        case Outcome::dead_lettered:
            return set_aside(delivery, context, dead_letter_queue(queue_), settlement.reason);
        case Outcome::in_progress:
            if (!wait(settlement.delay)) return settle(delivery, false, true);
            if (republish(delivery.message(), context.envelope, queue_)) return settle(delivery, true);
            return settle(delivery, false, true);
        case Outcome::retried:
            break;
    }
    Envelope next = context.envelope;
    if (next.attempt < std::numeric_limits<std::int32_t>::max()) ++next.attempt;
    const RetryWait& retry_wait = *settlement.wait;
    if (retry_wait.in_broker) {
        const std::string rung = rung_queue(queue_, retry_wait.delay);
        if (republish(delivery.message(), next, rung)) return settle(delivery, true);
        log(LogLevel::warning, "retry rung " + rung + " is missing (the publish reached no queue); message " + next.id +
                                   " waits in the consumer instead");
        bus_->notify_rung_missing(queue_, rung);
    }
    if (!wait(retry_wait.delay)) return settle(delivery, false, true);
    if (republish(delivery.message(), next, queue_)) return settle(delivery, true);
    return settle(delivery, false, true);
}

bool ConsumerCore::close(std::chrono::milliseconds timeout) {
    std::lock_guard one_at_a_time(close_lock_);
    std::deque<Delivery> unstarted;
    {
        std::lock_guard guard(lock_);
        if (drained_) return *drained_;
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
    for (Delivery& delivery : unstarted) settle(delivery, false, true);

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
        if (done || (finished && worker.get_id() != std::this_thread::get_id()))
            worker.join();
        else
            worker.detach();  // stuck in a handler (or it is us): it keeps the core alive and settles nothing
    }
    if (!finished)
        log(LogLevel::warning, "consumer of " + queue_ + " closed with handlers still running after " +
                                   std::to_string(timeout.count()) + " ms; their messages were left unsettled "
                                   "and go back to the queue");
    return finished;
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
