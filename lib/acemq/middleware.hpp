// Handler middleware (docs/patterns.md §4): code that wraps one handler, as opposed to an
// interceptor, which wraps every delivery of a Bus. A middleware takes a Handler<T> and
// returns the wrapped Handler<T>; chain() stacks them, first listed outermost:
//
//   bus.consume<Order>("orders.new", acemq::chain(handle, acemq::with_logging(), acemq::with_timeout(10s)));
//
// Logging outermost records what the timeout decided. Your own middleware is any callable
// taking a Handler<T> and returning one, e.g. an acemq::Middleware<T>.
//
// No middleware here turns an exception into a decision (only then() does, for a failed
// send): an exception that escapes a handler is already a retry in the consumer.
//
// The handlers these return are as thread-safe as the handler they wrap: they hold no
// state of their own between calls, so a consumer may run them on several workers.
#pragma once

#include <chrono>
#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <type_traits>
#include <utility>

#include <acemq/ack.hpp>
#include <acemq/consumer.hpp>
#include <acemq/detail/middleware.hpp>
#include <acemq/log.hpp>
#include <acemq/message.hpp>
#include <acemq/publisher.hpp>

namespace acemq {

template <class T>
using Middleware = std::function<Handler<T>(Handler<T>)>;

// `handler` wrapped in `middleware`, the first listed outermost: for chain(h, outer, inner)
// a message passes outer, inner, h, and the decision comes back through inner, then outer.
// chain(handler) alone is the handler. T is deduced from a handler taking
// `const Message<T>&`; name it for a generic lambda: chain<Order>([](const auto& m) { ... }).
template <class T = void, class H, class... M, class P = typename detail::chosen_payload<T, H>::type>
    requires std::invocable<H&, const Message<P>&> && (std::invocable<M&, Handler<P>> && ...)
Handler<P> chain(H handler, M... middleware) {
    return detail::wrap<P>(Handler<P>(std::move(handler)), middleware...);
}

// ---------------------------------------------------------------------------------------
// with_timeout

// The failure a timed-out handler is retried with.
class HandlerTimeoutError : public Error {
public:
    using Error::Error;
};

// Inside a handler run by with_timeout: a token that is stopped once the limit has passed
// (or an outer with_timeout's has). A handler doing long work can check it and give up
// early; elsewhere it is a token that never stops. Read it on the handler's own thread.
std::stop_token current_stop_token() noexcept;

// Middleware giving the handler `limit` to answer. A handler still running then is
// answered for with retry(HandlerTimeoutError: "acemq: handling message <id> did not finish
// within <limit>"), whatever it would have said; one finishing in time keeps its answer.
//
// A C++ thread cannot be killed, so each message is handled on a helper thread of its own
// (one thread start per message: tens of microseconds), and a late handler keeps running in
// the background, possibly past the consumer's close, while its answer is discarded. Its stop token (current_stop_token()) is stopped at the deadline;
// handlers that may overrun should check it. Until it returns, a late handler holds its
// own copy of the message (T must be copyable) and a share of the wrapped handler, so
// nothing it uses is destroyed under it — but whatever else it captured by reference must
// outlive it. Throws InvalidArgument for a limit that is not positive.
class with_timeout {
public:
    explicit with_timeout(std::chrono::milliseconds limit) : limit_(detail::positive_timeout(limit)) {}

    template <class T>
    Handler<T> operator()(Handler<T> next) const {
        auto shared = std::make_shared<const Handler<T>>(std::move(next));
        return [shared, limit = limit_](const Message<T>& message) {
            auto copy = std::make_shared<const Message<T>>(message);
            return detail::run_with_deadline([shared, copy] { return (*shared)(*copy); }, limit, copy->envelope.id);
        };
    }

private:
    std::chrono::milliseconds limit_;
};

// ---------------------------------------------------------------------------------------
// with_logging

// Middleware writing one INFO line per message, e.g.
//   message 5b0c… type=order.placed attempt=1 took=12ms reject: std::invalid_argument: no sku
// from the envelope, the time taken and the decision; never the payload. A handler that
// throws gets an ERROR line ending "raised", and the exception goes on unchanged.
// The default sink is acemq::log (see log.hpp: install a sink there to see INFO lines).
class with_logging {
public:
    explicit with_logging(LogSink sink = {}) : sink_(std::move(sink)) {}

    template <class T>
    Handler<T> operator()(Handler<T> next) const {
        return [next = std::move(next), sink = sink_](const Message<T>& message) {
            const detail::LoggedMessage logged{message.envelope, std::chrono::steady_clock::now()};
            std::optional<Ack> ack;
            try {
                ack.emplace(next(message));
            } catch (...) {
                detail::log_raised(sink, logged, std::current_exception());
                throw;
            }
            detail::log_decision(sink, logged, *ack);
            return std::move(*ack);
        };
    }

private:
    LogSink sink_;
};

// ---------------------------------------------------------------------------------------
// then

// A handler that turns each message into the next one: runs `step`, publishes what it
// returns with `publisher` (correlation carried over, causation = the incoming id, a fresh
// id, the bus's origin) and accepts. A step returning std::optional may answer
// std::nullopt to publish nothing (and still accept); one returning a plain value always
// publishes.
//
//   bus.consume<Order>("orders.new", acemq::then<Order>(invoices, [](const acemq::Message<Order>& m) {
//       return m.payload.total > 0 ? std::optional(Invoice{m.payload.id}) : std::nullopt;
//   }));
//
// A send that fails answers retry ("... is done but the next message did not go out: ..."),
// so the step runs again: make it repeatable. An exception from the step itself is not
// caught (the consumer retries it).
template <class T, class Step>
    requires std::invocable<const Step&, const Message<T>&>
Handler<T> then(Publisher publisher, Step step) {
    return [publisher = std::move(publisher), step = std::move(step)](const Message<T>& incoming) -> Ack {
        auto result = step(incoming);
        if constexpr (detail::optional_result<decltype(result)>::value) {
            if (!result) return accept();
        }
        try {
            SendOptions options;
            options.correlation = incoming.envelope.correlation;
            options.causation = incoming.envelope.id;
            if constexpr (detail::optional_result<decltype(result)>::value)
                publisher.send(*result, options);
            else
                publisher.send(result, options);
        } catch (...) {
            return detail::next_message_failed(incoming.envelope.id, std::current_exception());
        }
        return accept();
    };
}

}  // namespace acemq
