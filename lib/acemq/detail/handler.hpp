// Internal: how a typed handler is handed to the untyped engine, and how the T of a handler
// is found. Included by <acemq/consumer.hpp>; do not include it yourself, nothing in it is
// API.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include <acemq/codec.hpp>
#include <acemq/consumer.hpp>
#include <acemq/interceptor.hpp>
#include <acemq/message.hpp>

namespace acemq::detail {

// The typed part of a consumer, handed to the untyped engine: decodes a delivery (throwing
// DecodeError when it cannot), then calls `run` once with the step that runs the handler
// with the context as the interceptors leave it, and returns what `run` returns. The
// payload lives on the decoder's stack while `run` runs, so a delivery costs no allocation
// for it (steps capture two references, which std::function holds in place).
using HandlerStep = std::function<Ack(ConsumeContext&)>;
using RunStep = std::function<Ack(const HandlerStep&)>;
using Decoder = std::function<Ack(const ConsumeContext&, const Codec&, const RunStep& run)>;

// Runs `handler` on a Message made from `payload` and the context. The envelope is lent to
// the message and handed back afterwards (also when the handler throws): the engine
// settles with it, and a copy of it per delivery would cost more than the handler.
template <class T>
Ack run_on_message(const Handler<T>& handler, T&& payload, ConsumeContext& context) {
    Message<T> message{std::move(payload),
                       std::move(context.envelope),
                       context.queue,
                       std::string(context.routing_key),
                       std::string(context.content_type),
                       std::string(context.reply_to),
                       context.redelivered};
    struct GiveBack {
        ConsumeContext& context;
        Message<T>& message;
        ~GiveBack() { context.envelope = std::move(message.envelope); }
    } give_back{context, message};
    return handler(message);
}

template <class T>
Decoder typed_decoder(Handler<T> handler) {
    // Shared, so that a copy of the decoder runs the same handler, not a copy of its state.
    auto shared = std::make_shared<Handler<T>>(std::move(handler));
    return [shared](const ConsumeContext& incoming, const Codec& codec, const RunStep& run) -> Ack {
        T payload = decode<T>(codec, incoming.body, incoming.content_type);
        return run([&payload, handler = shared.get()](ConsumeContext& context) {
            return run_on_message(*handler, std::move(payload), context);
        });
    };
}

Decoder raw_decoder(Handler<Bytes> handler);

// The T of a handler taking `const Message<T>&`, for handlers with one call signature
// (functions, non-generic lambdas, std::function). Generic lambdas name T: idempotent<T>.
template <class Signature>
struct message_argument;
template <class R, class Arg>
struct message_argument<R(Arg)> {
    using type = std::remove_cvref_t<Arg>;
};
template <class R, class C, class Arg>
struct message_argument<R (C::*)(Arg)> : message_argument<R(Arg)> {};
template <class R, class C, class Arg>
struct message_argument<R (C::*)(Arg) const> : message_argument<R(Arg)> {};
template <class R, class C, class Arg>
struct message_argument<R (C::*)(Arg) noexcept> : message_argument<R(Arg)> {};
template <class R, class C, class Arg>
struct message_argument<R (C::*)(Arg) const noexcept> : message_argument<R(Arg)> {};
template <class R, class Arg>
struct message_argument<R (*)(Arg)> : message_argument<R(Arg)> {};
template <class R, class Arg>
struct message_argument<R (*)(Arg) noexcept> : message_argument<R(Arg)> {};

template <class M>
struct payload_of;
template <class T>
struct payload_of<Message<T>> {
    using type = T;
};

template <class H>
struct handler_signature {
    using type = decltype(&H::operator());
};
template <class H>
    requires std::is_pointer_v<H>
struct handler_signature<H> {
    using type = H;
};

template <class H>
using payload_of_handler_t =
    typename payload_of<typename message_argument<typename handler_signature<std::decay_t<H>>::type>::type>::type;

// T when given, else the handler's; a struct so that a generic lambda is looked into only
// when T was not named.
template <class T, class H>
struct chosen_payload {
    using type = T;
};
template <class H>
struct chosen_payload<void, H> {
    using type = payload_of_handler_t<H>;
};

}  // namespace acemq::detail
