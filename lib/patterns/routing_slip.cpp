#include <acemq/routing_slip.hpp>

#include <algorithm>
#include <limits>

#include <acemq/json_codec.hpp>
#include <acemq/metrics.hpp>
#include <acemq/tracing.hpp>
#include <acemq/uuid.hpp>
#include <acemq/value.hpp>
#include "bus_core.hpp"
#include "quoted_text.hpp"
#include "rfc3339.hpp"

namespace acemq {

namespace {

const JsonCodec& json() {
    static const JsonCodec codec;
    return codec;
}

Value step_value(const SlipStep& step) {
    Value::Map fields{{"exchange", step.exchange}, {"routingKey", step.routing_key}};
    if (!step.name.empty()) fields.emplace_back("name", step.name);
    if (!step.completed_at.empty()) fields.emplace_back("completedAt", step.completed_at);
    return fields;
}

Value steps_value(const std::vector<SlipStep>& steps) {
    Value::Array array;
    array.reserve(steps.size());
    for (const SlipStep& step : steps) array.push_back(step_value(step));
    return array;
}

// A field of a step that must be text when present; "" when absent.
std::string text_field(const Value& step, std::string_view key, bool required) {
    const Value* value = step.find(key);
    if (value == nullptr) {
        if (required) throw DecodeError("a step has no \"" + std::string(key) + "\"");
        return {};
    }
    if (value->kind() != Value::Kind::string)
        throw DecodeError("a step's \"" + std::string(key) + "\" is " + std::string(kind_name(value->kind())) +
                          ", not a string");
    return value->as_string();
}

std::vector<SlipStep> steps_of(const Value& slip, std::string_view key) {
    const Value* list = slip.find(key);
    if (list == nullptr || list->is_null()) return {};
    std::vector<SlipStep> steps;
    for (const Value& step : list->as_array()) {
        if (step.kind() != Value::Kind::map) throw DecodeError("a step is " + std::string(kind_name(step.kind())));
        steps.push_back(SlipStep{text_field(step, "exchange", true), text_field(step, "routingKey", true),
                                 text_field(step, "name", false), text_field(step, "completedAt", false)});
    }
    return steps;
}

FatalError unreadable(const Envelope& envelope, std::string_view why) {
    return FatalError("acemq: cannot read the routing slip in header " + std::string(header::routing_slip) +
                      " of message " + detail::shown_text(envelope.id) + " (" + std::string(why) +
                      "); it is not the family's {\"steps\":[...]} JSON");
}

}  // namespace

std::string_view to_string(SlipForm form) noexcept {
    return form == SlipForm::step_names ? "step names" : "json header";
}

RoutingSlip RoutingSlip::then(std::string exchange, std::string routing_key, std::string name) const {
    RoutingSlip more = *this;
    more.steps_.push_back(SlipStep{std::move(exchange), std::move(routing_key), std::move(name), {}});
    return more;
}

std::optional<SlipStep> RoutingSlip::next() const {
    if (steps_.empty()) return std::nullopt;
    return steps_.front();
}

RoutingSlip RoutingSlip::advance(std::chrono::system_clock::time_point now) const {
    if (finished()) return *this;
    RoutingSlip moved = *this;
    SlipStep step = std::move(moved.steps_.front());
    moved.steps_.erase(moved.steps_.begin());
    step.completed_at = detail::rfc3339(now, detail::SecondFraction::millis);
    moved.done_.push_back(std::move(step));
    return moved;
}

std::string RoutingSlip::to_header() const {
    Value::Map slip{{"steps", steps_value(steps_)}};
    if (!done_.empty()) slip.emplace_back("done", steps_value(done_));
    const std::vector<std::byte> bytes = json().encode(Value(std::move(slip)));
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::vector<std::string> RoutingSlip::step_names() const {
    std::vector<const SlipStep*> all;
    for (const SlipStep& step : done_) all.push_back(&step);
    for (const SlipStep& step : steps_) all.push_back(&step);
    if (all.empty())
        throw InvalidArgument(
            "acemq: the routing slip has no steps, so it has no step names to write; add steps with then()");
    std::vector<std::string> names;
    for (std::size_t index = 0; index < all.size(); ++index) {
        const SlipStep& step = *all[index];
        if (step.exchange != all.front()->exchange)
            throw InvalidArgument("acemq: the routing slip's steps span more than one exchange (" +
                                  detail::in_quotes(all.front()->exchange) + " and " +
                                  detail::in_quotes(step.exchange) +
                                  "), and step names only say which step of one pipeline; write it as the JSON header "
                                  "(SlipForm::json_header)");
        if (step.name.empty() && step.routing_key.empty())
            throw InvalidArgument("acemq: step " + std::to_string(index + 1) +
                                  " of the routing slip has neither a name nor a routing key; give it one");
        if (!step.name.empty() && !step.routing_key.empty() && step.name != step.routing_key)
            throw InvalidArgument("acemq: step " + detail::in_quotes(step.name) + " has the routing key " +
                                  detail::in_quotes(step.routing_key) +
                                  ", but written as step names it travels as one word for both; make them the same "
                                  "or write the slip as the JSON header (SlipForm::json_header)");
        const std::string& name = step.label();
        if (name.find(',') != std::string::npos)
            throw InvalidArgument("acemq: the step name " + detail::in_quotes(name) +
                                  " contains a comma, which separates the steps in " + std::string(header::route) +
                                  "; name it without one");
        names.push_back(name);
    }
    return names;
}

RoutingSlip RoutingSlip::written_as(SlipForm form) const {
    RoutingSlip written = *this;
    written.form_ = form;
    if (form == SlipForm::step_names) {
        (void)step_names();
        if (written.run_id_.empty()) written.run_id_ = new_uuid();
    }
    return written;
}

Envelope RoutingSlip::onto(Envelope envelope) const {
    const RoutingSlip written = written_as(form_);
    if (form_ == SlipForm::json_header) {
        envelope.headers.insert_or_assign(std::string(header::routing_slip), FieldValue(to_header()));
        envelope.route.clear();
        envelope.route_position = 0;
        envelope.route_id.clear();
    } else {
        envelope.headers.erase(header::routing_slip);
        envelope.route = written.step_names();
        envelope.route_position = static_cast<std::int32_t>(done_.size());
        envelope.route_id = written.run_id_;
    }
    return envelope;
}

SendOptions RoutingSlip::onto(SendOptions options) const {
    Envelope written;
    written.headers = std::move(options.headers);
    written = onto(std::move(written));
    options.headers = std::move(written.headers);
    options.route = std::move(written.route);
    options.route_position = written.route_position;
    options.route_id = std::move(written.route_id);
    return options;
}

RoutingSlip route_of(std::string_view pipeline, std::vector<std::string> names, std::string run_id) {
    if (names.empty())
        throw InvalidArgument("acemq: a declared route through " + detail::in_quotes(pipeline) +
                              " needs at least one step");
    RoutingSlip slip;
    for (std::string& name : names) slip = slip.then(std::string(pipeline), name, name);
    slip.run_id_ = std::move(run_id);
    return slip.written_as(SlipForm::step_names);
}

std::optional<RoutingSlip> slip_from(const Envelope& envelope, std::string_view pipeline) {
    if (const auto found = envelope.headers.find(header::routing_slip); found != envelope.headers.end()) {
        const std::optional<std::string> text = found->second.as_text();
        if (!text) throw unreadable(envelope, "the header is not text");
        Value parsed;
        try {
            parsed = json().decode(std::as_bytes(std::span(text->data(), text->size())), content_types::json);
            if (parsed.kind() != Value::Kind::map) throw DecodeError("it is " + std::string(kind_name(parsed.kind())));
            RoutingSlip slip;
            slip.steps_ = steps_of(parsed, "steps");
            slip.done_ = steps_of(parsed, "done");
            return slip;
        } catch (const DecodeError& error) {
            throw unreadable(envelope, without_prefix(error.what()));
        }
    }
    if (envelope.route.empty()) return std::nullopt;
    const auto length = static_cast<std::int64_t>(envelope.route.size());
    const std::int64_t position = std::clamp<std::int64_t>(envelope.route_position, 0, length);
    RoutingSlip slip;
    for (std::int64_t index = 0; index < length; ++index) {
        const std::string& name = envelope.route[static_cast<std::size_t>(index)];
        (index < position ? slip.done_ : slip.steps_).push_back(SlipStep{std::string(pipeline), name, name, {}});
    }
    slip.form_ = SlipForm::step_names;
    slip.run_id_ = envelope.route_id;
    return slip;
}

Topology pipeline_topology(std::string_view pipeline, const std::vector<std::string>& steps, QueueOptions queue) {
    if (pipeline.empty())
        throw InvalidArgument("acemq: a declared pipeline needs a name: its exchange is named for it");
    // The names a route through it could not carry are refused here, not at the first run.
    (void)route_of(pipeline, steps);
    Topology topology;
    topology.exchange(pipeline, ExchangeKind::direct);
    for (const std::string& step : steps) {
        const std::string queue_name = std::string(pipeline) + "." + step;
        topology.queue(queue_name, queue).bind(queue_name, pipeline, step);
    }
    return topology;
}

namespace detail {

std::pair<Publisher, SendOptions> first_stop(Bus& bus, const RoutingSlip& slip, StartOptions options) {
    if (slip.finished())
        throw InvalidArgument(
            "acemq: cannot start a routing slip with no steps in it (or none left); add steps with then()");
    const RoutingSlip written = slip.written_as(options.form.value_or(slip.form()));
    const SlipStep& first = written.steps().front();
    return {bus.publisher(first.exchange, first.routing_key, {.mandatory = true, .codec = options.codec}),
            written.onto(std::move(options.send))};
}

SlipFollower::SlipFollower(Bus& bus, FollowSlipOptions options) : bus_(&bus), options_(std::move(options)) {}

std::optional<RoutingSlip> SlipFollower::arrived(const Envelope& envelope, std::optional<Ack>& refusal) const {
    try {
        std::optional<RoutingSlip> slip = slip_from(envelope, options_.pipeline);
        if (!slip)
            refusal =
                reject(FatalError("acemq: message " + shown_text(envelope.id) + " carries no routing slip (neither " +
                                  std::string(header::routing_slip) + " nor " + std::string(header::route) +
                                  "), so there is no next step to send it to; start runs with acemq::start"));
        else
            return slip;
    } catch (const FatalError& error) {
        refusal = reject(error);
    }
    return std::nullopt;
}

Ack SlipFollower::forward(const Envelope& envelope, const RoutingSlip& slip, const Send& send) const {
    const RoutingSlip advanced = slip.advance();
    if (advanced.finished()) {
        finished(envelope, advanced);
        return accept();
    }
    const std::string& step = advanced.done().back().label();
    RoutingSlip written;
    try {
        written = advanced.written_as(options_.form.value_or(slip.form()));
    } catch (const InvalidArgument& error) {
        return reject(FatalError("acemq: the routing slip of message " + shown_text(envelope.id) + " cannot go on as " +
                                 std::string(to_string(options_.form.value_or(slip.form()))) + ": " +
                                 std::string(without_prefix(error.what()))));
    }
    SendOptions options;
    options.correlation = envelope.correlation;
    options.causation = envelope.id;
    try {
        options = written.onto(std::move(options));
        const SlipStep& next = written.steps().front();
        send(bus_->publisher(next.exchange, next.routing_key, {.mandatory = true, .codec = options_.codec}), options);
    } catch (const PublishError& error) {
        const std::string what =
            "acemq: step " + in_quotes(step) + " of message " + shown_text(envelope.id) +
            " is done but the next step did not go out: " + std::string(without_prefix(error.what()));
        // The same message is too large the next time too: retrying would circle for ever.
        if (error.reason() == PublishError::Reason::too_large) return reject(FatalError(what));
        return retry(Failure::of(Error(what)));
    } catch (const std::exception& error) {
        return retry(Failure::of(Error("acemq: step " + in_quotes(step) + " of message " + shown_text(envelope.id) +
                                       " is done but the next step did not go out: " + describe(error))));
    }
    return accept();
}

void SlipFollower::finished(const Envelope& envelope, const RoutingSlip& slip) const {
    // A slip that came with no step left (a declared route read past its end) ends here too,
    // as the family's does: after the stage, nothing to send.
    const std::string pipeline = !options_.pipeline.empty() ? options_.pipeline
                                 : slip.done().empty()      ? std::string()
                                                            : slip.done().front().exchange;
    const std::string step = slip.done().empty() ? std::string() : slip.done().back().label();
    const std::string_view outcome = "completed";
    const std::chrono::milliseconds age = envelope.age(epoch_millis_now()).value_or(std::chrono::milliseconds(0));
    if (const std::shared_ptr<Metrics>& metrics = bus_->core_->telemetry().metrics()) {
        const Labels labels{{std::string(tag::pipeline), pipeline},
                            {std::string(tag::step), step},
                            {std::string(tag::outcome), std::string(outcome)}};
        metrics->count(metric::pipeline_run_total, 1, labels);
        metrics->observe(metric::pipeline_run_duration, std::chrono::duration<double>(age).count(), labels);
    }
    if (Span* span = current_span()) {
        span->set_attribute(span_attribute::run_age_ms, static_cast<std::int64_t>(age.count()));
        span->add_event(span_event::pipeline_run_finished,
                        {{"pipeline", pipeline}, {"step", step}, {"outcome", std::string(outcome)}});
    }
}

}  // namespace detail

}  // namespace acemq
