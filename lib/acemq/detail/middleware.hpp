// Internal: what the middleware of <acemq/middleware.hpp> run on, compiled into the library
// where they can be. Included by <acemq/middleware.hpp>; do not include it yourself, nothing
// in it is API.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <acemq/ack.hpp>
#include <acemq/consumer.hpp>
#include <acemq/envelope.hpp>
#include <acemq/log.hpp>

namespace acemq::detail {

template <class T>
Handler<T> wrap(Handler<T> handler) {
    return handler;
}
template <class T, class First, class... Rest>
Handler<T> wrap(Handler<T> handler, First& first, Rest&... rest) {
    return Handler<T>(first(wrap<T>(std::move(handler), rest...)));
}

// Runs `work` on a helper thread and waits up to `limit` for it. In time: its answer, or
// its exception rethrown. Late: retry(HandlerTimeoutError) naming `message_id`.
Ack run_with_deadline(std::function<Ack()> work, std::chrono::milliseconds limit, const std::string& message_id);
std::chrono::milliseconds positive_timeout(std::chrono::milliseconds limit);

struct LoggedMessage {
    const Envelope& envelope;
    std::chrono::steady_clock::time_point started;
};
// Neither throws: a sink that fails is ignored, so logging never changes a decision.
void log_decision(const LogSink& sink, const LoggedMessage& message, const Ack& ack) noexcept;
void log_raised(const LogSink& sink, const LoggedMessage& message, const std::exception_ptr& error) noexcept;

template <class R>
struct optional_result : std::false_type {};
template <class U>
struct optional_result<std::optional<U>> : std::true_type {};

// retry("acemq: the work for message <id> is done but the next message did not go out: ...")
Ack next_message_failed(const std::string& message_id, const std::exception_ptr& error);

}  // namespace acemq::detail
