#include <acemq/outbox.hpp>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <stop_token>
#include <thread>
#include <typeinfo>

#include <acemq/log.hpp>
#include <acemq/publisher.hpp>
#include <acemq/uuid.hpp>
#include "bus_core.hpp"
#include "publish_failure.hpp"

namespace acemq {

namespace detail {

Envelope outbox_envelope(const Bus& bus, std::string_view routing_key, std::optional<Envelope> given) {
    Envelope envelope = given ? std::move(*given) : Envelope::for_new_message(routing_key, bus.origin());
    // A record made while handling a delivery carries its trace to the relay's publish.
    if (const TraceContext* current = current_trace(); current && !envelope.headers.contains(traceparent_header))
        inject_trace(*current, envelope.headers);
    if (!given) return envelope;
    if (envelope.id.empty()) envelope.id = new_uuid();
    if (envelope.type.empty()) envelope.type = routing_key.empty() ? "message" : std::string(routing_key);
    if (envelope.correlation.empty()) envelope.correlation = envelope.id;
    if (!envelope.first_seen) envelope.first_seen = epoch_millis_now();
    return envelope;
}

}  // namespace detail

void check_outbox_id(std::string_view id) {
    if (id.empty())
        throw InvalidArgument(
            "acemq: an outbox record needs an id; make records with acemq::record(), which "
            "takes the envelope's id");
}

void OutboxStore::release(std::span<const std::string>) {}

namespace {

// What a failure says, for last_error and the log: the exception's text, or its type when
// it has none.
std::string describe(std::exception_ptr failure) {
    try {
        std::rethrow_exception(failure);
    } catch (const std::exception& error) {
        const std::string text = error.what();
        return text.empty() ? typeid(error).name() : text;
    } catch (...) {  // not a std::exception: nothing to read from it but that
        return "an exception that is not a std::exception";
    }
}

}  // namespace

struct OutboxRelay::State {
    // A constructor, not aggregate initialisation in make_unique: clang 14 (the fuzz build)
    // has no parenthesised aggregate initialisation.
    State(Bus& relay_bus, OutboxStore& relay_store, RelayOptions relay_options)
        : bus(relay_bus), store(relay_store), options(std::move(relay_options)) {}

    Bus& bus;
    OutboxStore& store;
    RelayOptions options;
    std::mutex control;  // guards closed and the start and stop of loop
    bool closed = false;
    std::mutex sweeping;  // one sweep at a time
    std::atomic<std::uint64_t> published{0};
    std::atomic<std::uint64_t> failed{0};
    std::jthread loop;
};

OutboxRelay::OutboxRelay(Bus& bus, OutboxStore& store, RelayOptions options)
    : state_(std::make_unique<State>(bus, store, std::move(options))) {
    RelayOptions& checked = state_->options;
    if (checked.interval <= std::chrono::milliseconds::zero())
        throw InvalidArgument("acemq: a relay interval must be positive, got " +
                              std::to_string(checked.interval.count()) + " ms");
    if (checked.batch < 1) throw InvalidArgument("acemq: a relay batch must be at least 1, got 0");
    if (!checked.observer && bus.core_->telemetry().measuring())
        checked.observer = outbox_metrics(bus.core_->telemetry().metrics());
}

OutboxRelay::~OutboxRelay() { close(); }

std::uint64_t OutboxRelay::published() const noexcept { return state_->published.load(); }
std::uint64_t OutboxRelay::failed() const noexcept { return state_->failed.load(); }

void OutboxRelay::start() {
    std::lock_guard guard(state_->control);
    if (state_->closed) throw UsageError("acemq: this outbox relay was closed; make a new one to start relaying again");
    if (state_->loop.joinable()) return;
    state_->loop = std::jthread([this](std::stop_token stop) {
        const std::shared_ptr<Clock> clock = state_->bus.clock();
        while (clock->wait_for(state_->options.interval, stop)) {
            try {
                sweep();
            } catch (...) {  // logged, and the next sweep tries again: every record is still in the outbox
                log(LogLevel::warning, "outbox",
                    "a sweep of the outbox failed; every record is still in it: " + describe(std::current_exception()));
            }
        }
    });
}

void OutboxRelay::close() {
    std::lock_guard guard(state_->control);
    state_->closed = true;
    if (state_->loop.joinable()) {
        state_->loop.request_stop();
        state_->loop.join();
    }
    // A sweep() called by hand on another thread: wait it out too.
    std::lock_guard sweep_done(state_->sweeping);
}

std::size_t OutboxRelay::sweep() {
    std::lock_guard guard(state_->sweeping);
    std::vector<OutboxRecord> waiting = state_->store.pending(state_->options.batch);
    std::size_t done = 0;
    // Whatever happens to the record in hand, the ones after it go back unpublished.
    auto give_back_rest = [&] {
        std::vector<std::string> rest;
        for (std::size_t i = done + 1; i < waiting.size(); ++i) rest.push_back(waiting[i].id);
        if (rest.empty()) return;
        try {
            state_->store.release(rest);
        } catch (...) {  // the leases run out on their own; the failure that stopped the sweep matters more
            log(LogLevel::warning, "outbox",
                "could not release " + std::to_string(rest.size()) +
                    " outbox records after a failed sweep; they wait for their lease to end: " +
                    describe(std::current_exception()));
        }
    };
    for (; done < waiting.size(); ++done) {
        OutboxRecord& record = waiting[done];
        try {
            publish(record);
        } catch (...) {
            const std::string error = describe(std::current_exception());
            state_->failed.fetch_add(1);
            tell(RelayedEvent{record.id, record.exchange, record.routing_key, RelayOutcome::failed, std::nullopt,
                              error});
            try {
                state_->store.record_failure(record.id, error);
            } catch (...) {  // the publish failure is what the caller must hear; this one is logged
                log(LogLevel::error, "outbox",
                    "could not record the failed publish of outbox record " + record.id + ": " +
                        describe(std::current_exception()));
            }
            give_back_rest();
            throw;
        }
        state_->published.fetch_add(1);
        const auto age = std::chrono::system_clock::now() - record.created_at;
        tell(RelayedEvent{record.id,
                          record.exchange,
                          record.routing_key,
                          RelayOutcome::published,
                          std::max(std::chrono::duration<double>(age), std::chrono::duration<double>::zero()),
                          {}});
        try {
            state_->store.mark_published(record.id);
        } catch (...) {  // rethrown: the record goes out again next time (at least once)
            give_back_rest();
            throw;
        }
    }
    return done;
}

void OutboxRelay::publish(OutboxRecord& record) {
    if (!record.unreadable.empty()) throw DecodeError(record.unreadable);
    OutboundMessage message;
    message.exchange = record.exchange;
    message.routing_key = record.routing_key;
    message.body = std::move(record.body);
    message.content_type = record.content_type;
    message.message_id = record.id;
    message.persistent = true;
    message.mandatory = true;  // always: a relayed message that reaches no queue must not vanish
    // Before the headers are packed: the span's traceparent goes among them.
    const std::unique_ptr<Span> span = state_->bus.core_->telemetry().start_publish(
        {record.exchange, record.routing_key, record.id, {}, {}}, record.headers);
    message.headers = record.headers;
    if (!span) {
        const PublishResult result = state_->bus.transport().publish(std::move(message));
        if (auto failure = detail::publish_failure(result, {record.id, record.exchange, record.routing_key, true}))
            throw *failure;
        return;
    }
    const auto lag = std::chrono::system_clock::now() - record.created_at;
    span->set_attribute(span_attribute::outbox_lag_ms,
                        std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(lag).count()));
    auto failed = [&](detail::PublishOutcome outcome, const std::string& why) {
        span->add_event(span_event::outbox_publish_failed, {{std::string(span_attribute::reason), why}});
        detail::Telemetry::end_publish(*span, outcome, why);
    };
    PublishResult result;
    try {
        result = state_->bus.transport().publish(std::move(message));
    } catch (const std::exception& error) {
        failed(detail::PublishOutcome::failed, error.what());
        throw;
    }
    const detail::PublishOutcome outcome = detail::outcome_of(result, true);
    if (auto failure = detail::publish_failure(result, {record.id, record.exchange, record.routing_key, true})) {
        failed(outcome, failure->what());
        throw *failure;
    }
    detail::Telemetry::end_publish(*span, outcome);
}

void OutboxRelay::tell(const RelayedEvent& event) const {
    if (!state_->options.observer) return;
    try {
        state_->options.observer->relayed(event);
    } catch (...) {  // an observer must not change what the relay does
        log(LogLevel::error, "outbox",
            "an outbox observer threw, which it must not: " + describe(std::current_exception()));
    }
}

namespace {

class OutboxMetrics final : public OutboxObserver {
public:
    explicit OutboxMetrics(std::shared_ptr<Metrics> metrics) : metrics_(std::move(metrics)) {}

    void relayed(const RelayedEvent& event) override {
        const Labels labels{
            {std::string(tag::exchange), std::string(event.exchange)},
            {std::string(tag::routing_key), std::string(event.routing_key)},
            {std::string(tag::outcome), event.outcome == RelayOutcome::published ? "published" : "failed"}};
        metrics_->count(metric::outbox_total, 1, labels);
        if (event.lag) metrics_->observe(metric::outbox_lag, event.lag->count(), labels);
    }

private:
    std::shared_ptr<Metrics> metrics_;
};

}  // namespace

std::shared_ptr<OutboxObserver> outbox_metrics(std::shared_ptr<Metrics> metrics) {
    if (!metrics) throw InvalidArgument("acemq: outbox_metrics was given no Metrics to report to");
    return std::make_shared<OutboxMetrics>(std::move(metrics));
}

}  // namespace acemq
