#include "telemetry.hpp"

#include <acemq/naming.hpp>

namespace acemq::detail {

namespace {

constexpr std::array<std::string_view, publish_outcomes> publish_words{"confirmed", "unroutable", "failed", "refused"};
constexpr std::array<Outcome, 6> all_outcomes{Outcome::acked,         Outcome::retried, Outcome::rejected,
                                              Outcome::dead_lettered, Outcome::parked,  Outcome::in_progress};
constexpr std::array<std::string_view, retry_wheres> where_words{"consumer", "broker", "requeued"};

Labels labelled(std::initializer_list<std::pair<std::string_view, std::string_view>> pairs) {
    Labels labels;
    labels.reserve(pairs.size());
    for (const auto& [name, value] : pairs) labels.emplace_back(std::string(name), std::string(value));
    return labels;
}

// Index of the dead-letter counter for an outcome that sets a message aside, if it is one.
std::optional<std::size_t> dead_letter_index(Outcome outcome) {
    switch (outcome) {
    case Outcome::dead_lettered: return 0;
    case Outcome::rejected: return 1;
    case Outcome::parked: return 2;
    default: return std::nullopt;
    }
}

}  // namespace

std::string_view to_string(PublishOutcome outcome) noexcept { return publish_words[static_cast<std::size_t>(outcome)]; }

PublishOutcome outcome_of(const PublishResult& result, bool mandatory) noexcept {
    if (!result.confirmed)
        return result.why == PublishResult::Unconfirmed::paused ? PublishOutcome::refused : PublishOutcome::failed;
    if (mandatory && !result.routed) return PublishOutcome::unroutable;
    return PublishOutcome::confirmed;
}

std::string_view trace_destination(std::string_view exchange, std::string_view routing_key) noexcept {
    return exchange.empty() ? routing_key : exchange;
}

PublishInstruments::PublishInstruments(Metrics& metrics, std::string_view exchange, std::string_view routing_key) {
    for (std::size_t i = 0; i < publish_outcomes; ++i) {
        const Labels labels =
            labelled({{tag::exchange, exchange}, {tag::routing_key, routing_key}, {tag::outcome, publish_words[i]}});
        total_[i] = metrics.bind_counter(metric::publish_total, labels);
        duration_[i] = metrics.bind_distribution(metric::publish_duration, labels);
    }
}

void PublishInstruments::record(PublishOutcome outcome, Seconds took) const {
    const auto i = static_cast<std::size_t>(outcome);
    total_[i]->add(1);
    duration_[i]->record(took.count());
}

ConsumeInstruments::ConsumeInstruments(Metrics& metrics, std::string_view queue) : metrics_(metrics), queue_(queue) {
    for (Outcome outcome : all_outcomes) {
        const auto i = static_cast<std::size_t>(outcome);
        const Labels labels = labelled({{tag::queue, queue}, {tag::outcome, to_string(outcome)}});
        total_[i] = metrics.bind_counter(metric::consume_total, labels);
        duration_[i] = metrics.bind_distribution(metric::consume_duration, labels);
        if (auto dead = dead_letter_index(outcome))
            dead_lettered_[*dead] = metrics.bind_counter(metric::dead_lettered_total, labels);
    }
    for (std::size_t i = 0; i < retry_wheres; ++i)
        retried_[i] = metrics.bind_counter(
            metric::retried_total,
            labelled({{tag::queue, queue}, {tag::outcome, "retried"}, {tag::where, where_words[i]}}));
    set_aside_failed_[0] = metrics.bind_counter(
        metric::set_aside_failed, labelled({{tag::queue, queue}, {tag::target, dead_letter_queue(queue)}}));
    set_aside_failed_[1] = metrics.bind_counter(metric::set_aside_failed,
                                                labelled({{tag::queue, queue}, {tag::target, parked_queue(queue)}}));
    in_flight_ = metrics.bind_gauge(metric::consume_in_flight, labelled({{tag::queue, queue}}));
    in_flight_->set(0);
    attempts_ = metrics.bind_distribution(metric::consume_attempts, labelled({{tag::queue, queue}}));
}

void ConsumeInstruments::started(std::int32_t attempt) const {
    in_flight_->add(1);
    attempts_->record(attempt);
}

void ConsumeInstruments::settled(Outcome outcome, std::optional<Seconds> handler, RetryWhere where) const {
    const auto i = static_cast<std::size_t>(outcome);
    total_[i]->add(1);
    if (handler) duration_[i]->record(handler->count());
    if (outcome == Outcome::retried) retried_[static_cast<std::size_t>(where)]->add(1);
    if (auto dead = dead_letter_index(outcome)) dead_lettered_[*dead]->add(1);
    in_flight_->add(-1);
}

void ConsumeInstruments::abandoned() const { in_flight_->add(-1); }

void ConsumeInstruments::set_aside_failed(bool to_parked) const { set_aside_failed_[to_parked ? 1 : 0]->add(1); }

void ConsumeInstruments::rung_missing(std::string_view rung) const {
    // Unbound: a rung is one of many names and missing ones are rare (and worth an alert).
    metrics_.count(metric::rung_missing, 1, labelled({{tag::queue, queue_}, {tag::rung, rung}}));
}

void ConsumeInstruments::without_id() const {
    // Unbound: a series only for the queues where it happens, which should be none.
    metrics_.count(metric::messages_without_id, 1, labelled({{tag::queue, queue_}}));
}

Telemetry::Telemetry(std::shared_ptr<Metrics> metrics, std::shared_ptr<Tracer> tracer, TransportInfo transport)
    : metrics_(std::move(metrics)), tracer_(std::move(tracer)), system_(std::move(transport.messaging_system)) {}

std::shared_ptr<const PublishInstruments> Telemetry::publishing(std::string_view exchange,
                                                                std::string_view routing_key) {
    if (!metrics_) return nullptr;
    std::lock_guard guard(lock_);
    auto key = std::make_pair(std::string(exchange), std::string(routing_key));
    auto found = publishing_.find(key);
    if (found == publishing_.end())
        found =
            publishing_
                .emplace(std::move(key), std::make_shared<const PublishInstruments>(*metrics_, exchange, routing_key))
                .first;
    return found->second;
}

std::shared_ptr<const ConsumeInstruments> Telemetry::consuming(std::string_view queue) {
    if (!metrics_) return nullptr;
    std::lock_guard guard(lock_);
    auto found = consuming_.find(queue);
    if (found == consuming_.end())
        found =
            consuming_.emplace(std::string(queue), std::make_shared<const ConsumeInstruments>(*metrics_, queue)).first;
    return found->second;
}

namespace {

// "<destination> publish": built in a buffer each thread keeps, since a span's name is needed
// only while start_span runs and a message should not pay an allocation for it.
std::string_view span_name(std::string_view destination, std::string_view operation) {
    thread_local std::string name;
    name.assign(destination);
    name += operation;
    return name;
}

}  // namespace

std::unique_ptr<Span> Telemetry::start_publish(const Published& publish, Headers& headers) const {
    std::unique_ptr<Span> span = start_publish_span(publish, headers);
    if (span) inject_trace(span->context(), headers);
    return span;
}

std::unique_ptr<Span> Telemetry::start_publish_span(const Published& publish, const Headers& carried) const {
    if (!tracer_) return nullptr;
    const std::optional<TraceContext> carried_trace = extract_trace(carried);
    const TraceContext* parent = carried_trace ? &*carried_trace : current_trace();
    const std::string_view destination = trace_destination(publish.exchange, publish.routing_key);
    std::array<AttributeView, 7> attributes{{
        {span_attribute::system, system_},
        {span_attribute::destination, destination},
        {span_attribute::operation, std::string_view("publish")},
        {span_attribute::message_id, publish.message_id},
        {span_attribute::routing_key, publish.routing_key},
    }};
    std::size_t count = 5;
    // Unknown to the outbox relay, which has only the record's rendered headers.
    if (!publish.correlation.empty()) attributes[count++] = {span_attribute::conversation_id, publish.correlation};
    if (!publish.type.empty()) attributes[count++] = {span_attribute::message_type, publish.type};
    return tracer_->start_span(
        {span_name(destination, " publish"), SpanKind::producer, parent, std::span(attributes.data(), count)});
}

void Telemetry::end_publish(Span& span, PublishOutcome outcome, std::string_view error) {
    span.set_attribute(span_attribute::outcome, std::string(to_string(outcome)));
    if (outcome == PublishOutcome::unroutable || outcome == PublishOutcome::failed)
        span.set_error(error.empty() ? to_string(outcome) : error);
    span.end();
}

std::unique_ptr<Span> Telemetry::start_request(std::string_view exchange, std::string_view routing_key,
                                               std::string_view correlation, Headers& headers) const {
    if (!tracer_) return nullptr;
    const std::optional<TraceContext> carried = extract_trace(headers);
    const TraceContext* parent = carried ? &*carried : current_trace();
    const std::string_view destination = trace_destination(exchange, routing_key);
    const std::array<AttributeView, 4> attributes{{
        {span_attribute::system, system_},
        {span_attribute::destination, destination},
        {span_attribute::operation, std::string_view("request")},
        {span_attribute::conversation_id, correlation},
    }};
    std::unique_ptr<Span> span =
        tracer_->start_span({span_name(destination, " request"), SpanKind::client, parent, attributes});
    inject_trace(span->context(), headers);
    return span;
}

void Telemetry::end_request(Span& span, std::string_view outcome, std::string_view error) {
    span.set_attribute(span_attribute::outcome, std::string(outcome));
    if (outcome == "failed") span.set_error(error.empty() ? outcome : error);
    span.end();
}

std::unique_ptr<Span> Telemetry::start_process(std::string_view queue, const Envelope& envelope) const {
    if (!tracer_) return nullptr;
    const std::optional<TraceContext> parent = extract_trace(envelope.headers);
    const std::array<AttributeView, 7> attributes{{
        {span_attribute::system, system_},
        {span_attribute::destination, queue},
        {span_attribute::operation, std::string_view("process")},
        {span_attribute::message_id, envelope.id},
        {span_attribute::conversation_id, envelope.correlation},
        {span_attribute::message_type, envelope.type},
        {span_attribute::attempt, static_cast<std::int64_t>(envelope.attempt)},
    }};
    return tracer_->start_span(
        {span_name(queue, " process"), SpanKind::consumer, parent ? &*parent : nullptr, attributes});
}

void Telemetry::end_process(Span& span, const Settlement& settlement) {
    span.set_attribute(span_attribute::outcome, std::string(to_string(settlement.outcome)));
    switch (settlement.outcome) {
    case Outcome::retried:
        span.add_event(span_event::retried,
                       {{std::string(span_attribute::retry_delay_ms),
                         static_cast<std::int64_t>(settlement.wait ? settlement.wait->delay.count() : 0)}});
        break;
    case Outcome::dead_lettered:
    case Outcome::rejected:
    case Outcome::parked:
        span.add_event(span_event::dead_lettered,
                       {{std::string(span_attribute::outcome), std::string(to_string(settlement.outcome))},
                        {std::string(span_attribute::reason), settlement.reason}});
        break;
    case Outcome::acked:
    case Outcome::in_progress: break;
    }
    // The family's rule: only a dead letter is an error; a rejection or a parking was the
    // handler's (or the codec's) decision, told in the outcome and the event.
    if (settlement.outcome == Outcome::dead_lettered) span.set_error(settlement.reason);
    span.end();
}

}  // namespace acemq::detail
