#include <acemq/publisher.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <string_view>

#include <acemq/bus.hpp>
#include <acemq/tracing.hpp>
#include <acemq/uuid.hpp>
#include "bus_core.hpp"
#include "interceptor_chain.hpp"
#include "publish_failure.hpp"
#include "quoted_text.hpp"
#include "traced_headers.hpp"

namespace acemq {

namespace {

Envelope envelope_for(const SendOptions& options, std::string_view routing_key, const std::string& bus_origin) {
    Envelope envelope;
    // Assigned branch by branch: a ?: between an option and a temporary copies the option
    // into a temporary first, even when the temporary is the branch taken (a heap block more
    // a message for a generated id, measured with valgrind --tool=dhat).
    if (options.message_id.empty())
        envelope.id = new_uuid();
    else
        envelope.id = options.message_id;
    if (!options.type.empty())
        envelope.type = options.type;
    else if (routing_key.empty())
        envelope.type = "message";
    else
        envelope.type = routing_key;
    envelope.version = options.version;
    envelope.correlation = options.correlation.empty() ? envelope.id : options.correlation;
    envelope.causation = options.causation;
    envelope.origin = options.origin.empty() ? bus_origin : options.origin;
    envelope.attempt = options.attempt.value_or(1);
    envelope.first_seen = options.first_seen.value_or(epoch_millis_now());
    envelope.claim = options.claim;
    envelope.route = options.route;
    envelope.route_position = options.route_position;
    envelope.route_id = options.route_id;
    for (const auto& [name, value] : options.headers) set_header(envelope, name, value);
    return envelope;
}

}  // namespace

namespace detail {

std::string destination(std::string_view exchange, std::string_view routing_key) {
    return "exchange " + in_quotes(exchange) + " with key " + in_quotes(routing_key);
}

std::optional<PublishError> publish_failure(const PublishResult& result, const PublishTarget& target) {
    // The common case, on every publish: nothing to say, so no sentence is built.
    if (result.confirmed && (result.routed || !target.mandatory)) return std::nullopt;
    using Reason = PublishError::Reason;
    const std::string id(target.message_id);
    const std::string where = destination(target.exchange, target.routing_key);
    if (!result.confirmed) {
        const std::string reason = result.return_reason.empty() ? "" : " (" + result.return_reason + ")";
        switch (result.why) {
        case PublishResult::Unconfirmed::paused:
            return PublishError(Reason::paused,
                                "acemq: publishing is paused because the broker blocked this connection" +
                                    (reason.empty() ? std::string(" (no reason given)") : reason),
                                id);
        case PublishResult::Unconfirmed::lost:
            return PublishError(Reason::in_doubt,
                                "acemq: cannot publish message " + id + " to " + where +
                                    ": no confirm came from the broker, so it is unknown whether it arrived; treat "
                                    "it as not sent" +
                                    reason,
                                id);
        case PublishResult::Unconfirmed::too_large:
            return PublishError(Reason::too_large,
                                "acemq: cannot publish message " + id + " to " + where + ": " + result.return_reason +
                                    ". Nothing was written; make it smaller and publish again",
                                id);
        case PublishResult::Unconfirmed::unsent:
            return PublishError(Reason::not_sent,
                                "acemq: cannot publish message " + id + " to " + where +
                                    ": it was not sent, nothing was written" + reason,
                                id);
        case PublishResult::Unconfirmed::refused: break;
        }
        return PublishError(Reason::refused,
                            "acemq: cannot publish message " + id + " to " + where +
                                ": the broker refused to confirm it. The message reached the broker and the broker "
                                "has not taken responsibility for it, so it must be treated as not sent" +
                                reason,
                            id);
    }
    // Confirmed, mandatory and routed nowhere. The family's words when the transport gives
    // no reason of its own.
    const std::string reason = result.return_reason.empty() ? "no queue is bound to receive it" : result.return_reason;
    return PublishError(
        Reason::unroutable,
        "acemq: message " + id + " to " + where + " reached no queue (" + reason + "); the broker dropped it", id);
}

}  // namespace detail

namespace {

// The translation's view of a publish this publisher made.
detail::PublishTarget target_of(const PublishContext& sent) {
    return detail::PublishTarget{sent.envelope.id, sent.exchange, sent.routing_key, sent.mandatory};
}

}  // namespace

namespace {

// The first failure of a batch that has one.
const PublishError& first_failure(const std::vector<std::optional<PublishError>>& failures) {
    const auto first =
        std::find_if(failures.begin(), failures.end(), [](const auto& failure) { return failure.has_value(); });
    if (first == failures.end())
        throw InvalidArgument(
            "acemq: a BatchPublishError needs at least one failed message; a batch without one is not an error");
    return **first;
}

}  // namespace

BatchPublishError::BatchPublishError(std::vector<std::optional<PublishError>> failures, std::vector<SendResult> results)
    : PublishError(
          first_failure(failures).reason(),
          [&] {
              const auto failed = static_cast<std::size_t>(std::count_if(
                  failures.begin(), failures.end(), [](const auto& failure) { return failure.has_value(); }));
              return std::to_string(failed) + " of " + std::to_string(failures.size()) +
                     " messages were not confirmed; " + std::to_string(failures.size() - failed) +
                     " were. The first failure was: " + first_failure(failures).what();
          }(),
          first_failure(failures).message_id()),
      failures_(std::move(failures)), results_(std::move(results)) {}

std::size_t BatchPublishError::failed() const noexcept {
    return static_cast<std::size_t>(
        std::count_if(failures_.begin(), failures_.end(), [](const auto& failure) { return failure.has_value(); }));
}

Publisher::Publisher(std::shared_ptr<detail::BusCore> bus, std::string exchange, std::string routing_key,
                     PublisherOptions options)
    : bus_(std::move(bus)), exchange_(std::move(exchange)), routing_key_(std::move(routing_key)),
      options_(std::move(options)) {
    if (!options_.codec) options_.codec = bus_->options().codec;
    instruments_ = bus_->telemetry().publishing(exchange_, routing_key_);
}

namespace {

// A message ready to go, the context it was made from (kept for errors and observers once
// the transport has taken the message), and its span when tracing.
struct Prepared {
    OutboundMessage message;
    PublishContext context;
    std::unique_ptr<Span> span{};
};

detail::Telemetry::Published published_of(const PublishContext& sent) {
    return {sent.exchange, sent.routing_key, sent.envelope.id, sent.envelope.correlation, sent.envelope.type};
}

// The headers of `envelope` with `trace` written in their place: the traceparent formatted on
// the stack and packed from there, with no heap string for it (issue 32's decision 5).
PackedTable packed_with_trace(const Envelope& envelope, const TraceContext& trace) {
    std::array<char, TraceContext::traceparent_size> traceparent;
    trace.write_traceparent(traceparent);
    std::optional<std::string_view> tracestate;
    if (!trace.state.empty()) tracestate = trace.state;
    return detail::pack_traced_headers(envelope, std::string_view(traceparent.data(), traceparent.size()), tracestate);
}

// Runs the bus's publish interceptors around the final step, which encodes the payload
// into the message to send. Throws whatever an interceptor or the codec throws.
Prepared prepare(detail::BusCore& bus, PublishContext context, const Codec& codec,
                 const std::function<Encoded(const Codec&)>& encode_payload) {
    Prepared prepared{{}, std::move(context)};
    auto finish = [&](PublishContext& ready) {
        Encoded encoded = encode_payload(codec);
        OutboundMessage& message = prepared.message;
        message.exchange = ready.exchange;
        message.routing_key = ready.routing_key;
        message.body = std::move(encoded.body);
        message.content_type = std::move(encoded.content_type);
        message.message_id = ready.envelope.id;
        if (bus.telemetry().tracing()) {
            // Started before the headers are packed, so that its traceparent is written in its
            // place among them; checked first, so that a publish that cannot be sent starts no
            // span.
            check_sendable(ready.envelope);
            prepared.span = bus.telemetry().start_publish_span(published_of(ready), ready.envelope.headers);
        }
        message.headers =
            prepared.span ? packed_with_trace(ready.envelope, prepared.span->context()) : pack_headers(ready.envelope);
        message.reply_to = ready.reply_to;
        message.persistent = ready.persistent;
        message.mandatory = ready.mandatory;
        // An interceptor may have handed on a context of its own instead of the one it got.
        if (&ready != &prepared.context) prepared.context = std::move(ready);
    };
    try {
        detail::run_chain<void>(bus.publish_interceptors(), prepared.context, finish);
    } catch (const std::exception& error) {
        // An interceptor threw after the message was made: the publish failed, and its span
        // says so instead of ending without an outcome.
        if (prepared.span) detail::Telemetry::end_publish(*prepared.span, detail::PublishOutcome::failed, error.what());
        throw;
    }
    return prepared;
}

// Counts and ends the span of one publish the transport answered (or threw on).
struct Reporter {
    detail::BusCore& bus;
    const detail::PublishInstruments* bound;  // the publisher's destination; null unless measuring
    std::string_view exchange, routing_key;

    void operator()(const PublishContext& sent, std::chrono::steady_clock::time_point started, Span* span,
                    detail::PublishOutcome outcome, std::string_view error) const {
        if (bound) {
            const detail::Seconds took = std::chrono::steady_clock::now() - started;
            // An interceptor may have sent it elsewhere: count it where it went.
            if (sent.exchange == exchange && sent.routing_key == routing_key)
                bound->record(outcome, took);
            else
                bus.telemetry().publishing(sent.exchange, sent.routing_key)->record(outcome, took);
        }
        if (span) detail::Telemetry::end_publish(*span, outcome, error);
    }
};

}  // namespace

PublishContext Publisher::context_for(const SendOptions& options) const {
    return PublishContext{
        exchange_,           routing_key_,       envelope_for(options, routing_key_, bus_->options().origin),
        options_.persistent, options_.mandatory, options.reply_to};
}

SendResult Publisher::send_encoded(const SendOptions& options, const EncodeOne& encode_payload) const {
    const auto started = instruments_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    Prepared prepared = prepare(*bus_, context_for(options), *options_.codec, encode_payload);
    const PublishContext& sent = prepared.context;
    const std::unique_ptr<Span> span = std::move(prepared.span);
    const Reporter report{*bus_, instruments_.get(), exchange_, routing_key_};
    PublishResult result;
    try {
        result = bus_->transport().publish(std::move(prepared.message));
    } catch (const std::exception& error) {
        report(sent, started, span.get(), detail::PublishOutcome::failed, error.what());
        throw;
    }
    const auto failure = detail::publish_failure(result, target_of(sent));
    report(sent, started, span.get(), detail::outcome_of(result, sent.mandatory), failure ? failure->what() : "");
    if (failure) throw *failure;
    bus_->notify(PublishedEvent{sent.exchange, sent.routing_key, sent.envelope, result});
    return SendResult{std::move(prepared.context.envelope.id), result.confirmed, result.routed};
}

std::vector<SendResult> Publisher::send_all_encoded(std::size_t count, const SendOptions& options,
                                                    const EncodeAt& encode_payload) const {
    if (!options.message_id.empty())
        throw InvalidArgument("acemq: send_all cannot pin one message id on " + std::to_string(count) +
                              " messages; leave message_id empty");
    std::vector<Prepared> batch;
    batch.reserve(count);
    for (std::size_t index = 0; index < count; ++index)
        batch.push_back(prepare(*bus_, context_for(options), *options_.codec,
                                [&](const Codec& codec) { return encode_payload(index, codec); }));
    auto span_of = [&](std::size_t index) { return batch[index].span.get(); };
    const Reporter report{*bus_, instruments_.get(), exchange_, routing_key_};
    std::vector<SendResult> results;
    std::vector<std::optional<PublishError>> failures;
    results.reserve(count);
    failures.reserve(count);
    const std::size_t window = bus_->options().max_outstanding_publishes;
    for (std::size_t start = 0; start < count; start += window) {
        const std::size_t end = std::min(count, start + window);
        std::vector<OutboundMessage> chunk;
        chunk.reserve(end - start);
        for (std::size_t i = start; i < end; ++i) chunk.push_back(std::move(batch[i].message));
        const auto started = instruments_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        std::vector<PublishResult> confirmed;
        try {
            confirmed = bus_->transport().publish_batch(std::move(chunk));
        } catch (const std::exception& error) {
            for (std::size_t i = start; i < end; ++i)
                report(batch[i].context, started, span_of(i), detail::PublishOutcome::failed, error.what());
            throw;
        }
        for (std::size_t i = start; i < end; ++i) {
            const PublishResult& result = confirmed.at(i - start);
            PublishContext& sent = batch[i].context;
            failures.push_back(detail::publish_failure(result, target_of(sent)));
            report(sent, started, span_of(i), detail::outcome_of(result, sent.mandatory),
                   failures.back() ? failures.back()->what() : "");
            if (!failures.back()) bus_->notify(PublishedEvent{sent.exchange, sent.routing_key, sent.envelope, result});
            results.push_back(SendResult{std::move(sent.envelope.id), result.confirmed, result.routed});
        }
    }
    if (std::any_of(failures.begin(), failures.end(), [](const auto& failure) { return failure.has_value(); }))
        throw BatchPublishError(std::move(failures), std::move(results));
    return results;
}

SendResult Publisher::send_raw(Encoded body, const SendOptions& options) const {
    return send_encoded(options, [&](const Codec&) { return std::move(body); });
}

}  // namespace acemq
