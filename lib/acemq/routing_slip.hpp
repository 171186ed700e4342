// Routing slips (docs/routing-slips.md §1–4): a message that carries
// its own itinerary. Each stage handles the message, ticks its step off and sends it on to
// the next step; the last stage ends the run.
//
//   acemq::RoutingSlip slip = acemq::RoutingSlip{}.then("orders", "validate").then("orders", "charge")
//                                                  .then("orders", "ship");
//   acemq::start(bus, slip, Order{"o-1", 4250});
//   bus.consume("orders.validate", acemq::follow_slip<Order>(bus, [](const acemq::Message<Order>& m) {
//       return validated(m.payload);   // what goes on to the next step; void = the same payload
//   }));
//
// Two wire forms, and a slip keeps the one it arrived in: the JSON header acemq-routing-slip
// (Go, Python, Ruby; any exchange per step) and the declared route of a pipeline in the
// reserved headers x-acemq-route, -position and -id (Java; one exchange, the pipeline, with
// the step names as routing keys), which pipeline_topology() declares.
//
// RoutingSlip is an immutable value: every change returns a new slip. Copy it, share it
// between threads.
#pragma once

#include <chrono>
#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <acemq/ack.hpp>
#include <acemq/bus.hpp>
#include <acemq/consumer.hpp>
#include <acemq/envelope.hpp>
#include <acemq/error.hpp>
#include <acemq/message.hpp>
#include <acemq/publisher.hpp>
#include <acemq/topology.hpp>

namespace acemq {

namespace header {
// The JSON form's header, in the shared (unreserved) "acemq-" namespace.
inline constexpr std::string_view routing_slip = "acemq-routing-slip";
}  // namespace header

// How a slip travels: the JSON header, or the step names of a declared pipeline.
enum class SlipForm { json_header, step_names };
// "json header", "step names".
std::string_view to_string(SlipForm form) noexcept;

struct SlipStep {
    std::string exchange;
    std::string routing_key;
    std::string name{};          // "" = none
    std::string completed_at{};  // RFC 3339 UTC, milliseconds, once done; "" before

    // The name, else the routing key: what the `step` label and the error messages call it.
    const std::string& label() const noexcept { return name.empty() ? routing_key : name; }

    friend bool operator==(const SlipStep&, const SlipStep&) = default;
};

class RoutingSlip {
public:
    RoutingSlip() = default;  // no steps, the JSON form

    // This slip with one more step at the end.
    RoutingSlip then(std::string exchange, std::string routing_key, std::string name = {}) const;

    const std::vector<SlipStep>& steps() const noexcept { return steps_; }  // still to run, next first
    const std::vector<SlipStep>& done() const noexcept { return done_; }    // run, first first
    // The step to run next; nullopt once finished.
    std::optional<SlipStep> next() const;
    bool finished() const noexcept { return steps_.empty(); }
    SlipForm form() const noexcept { return form_; }
    // The run's id in the step-names form (x-acemq-route-id); "" until written_as gives one.
    const std::string& run_id() const noexcept { return run_id_; }

    // The first step moved to done(), stamped completed at `now`. A finished slip is returned
    // as it is.
    RoutingSlip advance(std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const;

    // The JSON form's header value, compact: {"steps":[{"exchange":…,"routingKey":…,"name":…,
    // "completedAt":…}],"done":[…]}, an empty name or completedAt left out, "done" left out
    // when nothing is done.
    std::string to_header() const;

    // This slip to be written in `form`. The step-names form checks step_names() (throws as
    // it does) and gives the slip a fresh run id when it has none.
    RoutingSlip written_as(SlipForm form) const;

    // Every step's name (done ones first), as x-acemq-route carries them: a step's name, or
    // its routing key when it has none. Throws InvalidArgument when the slip cannot be
    // written that way: no steps; steps that span more than one exchange; a step with
    // neither a name nor a routing key; a name that is not the routing key (one word for
    // both travels); a comma in a name.
    std::vector<std::string> step_names() const;

    // The envelope or send options with this slip written on in its form, and any trace of
    // the other form removed. Throws as written_as(form()).
    Envelope onto(Envelope envelope) const;
    SendOptions onto(SendOptions options) const;

    friend bool operator==(const RoutingSlip&, const RoutingSlip&) = default;

private:
    friend RoutingSlip route_of(std::string_view, std::vector<std::string>, std::string);
    friend std::optional<RoutingSlip> slip_from(const Envelope&, std::string_view);

    std::vector<SlipStep> steps_;
    std::vector<SlipStep> done_;
    SlipForm form_ = SlipForm::json_header;
    std::string run_id_;
};

// A declared route through pipeline `pipeline`, in the step-names form: one step per name,
// exchange = the pipeline, routing key = name = the step's name; run id `run_id` or a fresh
// one. Throws InvalidArgument for no names ("at least one step") and as step_names().
RoutingSlip route_of(std::string_view pipeline, std::vector<std::string> names, std::string run_id = {});

// The slip a message carries, or nullopt when it carries none. The JSON header is read
// first: one that is not text or not a slip is a FatalError ("acemq: cannot read the routing
// slip ..."). Else the declared route: the step names, done up to x-acemq-route-position
// (clamped to the route: past its end the run is finished; unreadable or negative, 0), each
// step on the exchange `pipeline` ("" = the default exchange, so each step is the queue of
// its name).
std::optional<RoutingSlip> slip_from(const Envelope& envelope, std::string_view pipeline = {});

// The topology of a declared pipeline: a durable direct exchange named `pipeline` and, per
// step, a queue "{pipeline}.{step}" (with `queue` options) bound to it on the step's name.
Topology pipeline_topology(std::string_view pipeline, const std::vector<std::string>& steps, QueueOptions queue = {});

struct StartOptions {
    SendOptions send{};                    // the first message's envelope fields
    std::optional<SlipForm> form{};        // default: the slip's own
    std::shared_ptr<const Codec> codec{};  // default: the bus's
};

namespace detail {
// The first step's publisher (mandatory) and the send options with the slip written on.
std::pair<Publisher, SendOptions> first_stop(Bus& bus, const RoutingSlip& slip, StartOptions options);
}  // namespace detail

// Sends `payload` to the slip's first step with the slip on it (mandatory: a first step that
// routes nowhere is a PublishError, not a silent drop). Throws InvalidArgument for a slip
// with no steps in it or one that cannot be written in the form asked, and whatever a send
// throws.
template <class T>
SendResult start(Bus& bus, const RoutingSlip& slip, const T& payload, StartOptions options = {}) {
    auto [publisher, send] = detail::first_stop(bus, slip, std::move(options));
    return publisher.send(payload, send);
}

struct FollowSlipOptions {
    // The declared route's exchange, and the `pipeline` label at the end of a run; "" = the
    // first step's exchange as the label.
    std::string pipeline{};
    std::optional<SlipForm> form{};        // the next message's form; default: the one it came in
    std::shared_ptr<const Codec> codec{};  // the next message's codec; default: the bus's
};

namespace detail {

// What follow_slip does around the stage, kept out of the template. Holds the bus by
// reference: the bus must outlive the handlers (as it outlives its consumers).
class SlipFollower {
public:
    SlipFollower(Bus& bus, FollowSlipOptions options);

    // The slip on `envelope`; nullopt with the answer (a reject) when there is none or it
    // cannot be read.
    std::optional<RoutingSlip> arrived(const Envelope& envelope, std::optional<Ack>& refusal) const;

    using Send = std::function<void(const Publisher&, const SendOptions&)>;
    // The stage has run: ticks its step off and ends the run (counted, accept) or sends the
    // next message with `send` (accept; a send that fails: retry, or reject when the next
    // step can never carry it).
    Ack forward(const Envelope& envelope, const RoutingSlip& slip, const Send& send) const;

private:
    void finished(const Envelope& envelope, const RoutingSlip& slip) const;

    Bus* bus_;
    FollowSlipOptions options_;
};

template <class T, class Stage>
using StageResult = std::invoke_result_t<const Stage&, const Message<T>&>;

}  // namespace detail

// A handler for one stage of routing-slip runs. For each message it reads the slip, runs
// `stage`, ticks the step off and sends what the stage returned (the incoming payload when
// it returns void) to the next step, in the form the slip came in unless options.form says
// otherwise, with the correlation carried over and causation = the incoming id (mandatory).
// The stage of the last step ends the run instead: acemq.pipeline.run.total and
// .duration (the message's age) with {pipeline, step, outcome=completed}, the event
// pipeline.run_finished on the delivery's span, and accept with nothing sent.
//
// The answers: no slip → reject ("... carries no routing slip"); an unreadable one →
// reject ("cannot read the routing slip"); the stage throws FatalError → reject, any other
// std::exception → retry (the stage runs again: make it repeatable); a form the slip cannot
// be written in → reject; a send that fails → retry ("... is done but the next step did not
// go out: ..."), except one the transport can never carry (too_large, e.g. a slip past
// RabbitMQ's frame size), which is rejected to {queue}.dlq with the message as it came.
//
// The handler keeps a reference to `bus`, which must outlive it; it is as thread-safe as
// `stage`.
template <class T, class Stage>
    requires std::invocable<const Stage&, const Message<T>&>
Handler<T> follow_slip(Bus& bus, Stage stage, FollowSlipOptions options = {}) {
    auto follower = std::make_shared<const detail::SlipFollower>(bus, std::move(options));
    return [follower, stage = std::move(stage)](const Message<T>& incoming) -> Ack {
        std::optional<Ack> refusal;
        const std::optional<RoutingSlip> slip = follower->arrived(incoming.envelope, refusal);
        if (!slip) return *refusal;
        using Result = detail::StageResult<T, Stage>;
        // What goes on: the stage's result, or the payload as it came from a void stage.
        using Next = std::conditional_t<std::is_void_v<Result>, std::reference_wrapper<const T>, std::decay_t<Result>>;
        std::optional<Next> next;
        try {
            if constexpr (std::is_void_v<Result>) {
                stage(incoming);
                next.emplace(incoming.payload);
            } else {
                next.emplace(stage(incoming));
            }
        } catch (const FatalError& error) {
            return reject(error);
        } catch (const std::exception& error) {
            return retry(error);
        }
        return follower->forward(incoming.envelope, *slip, [&](const Publisher& publisher, const SendOptions& send) {
            publisher.send(static_cast<const std::unwrap_reference_t<Next>&>(*next), send);
        });
    };
}

}  // namespace acemq
