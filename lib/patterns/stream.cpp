#include <acemq/stream.hpp>

#include <algorithm>
#include <limits>

#include <acemq/log.hpp>
#include <acemq/naming.hpp>
#include "quoted_text.hpp"

namespace acemq {

namespace {

constexpr int largest_prefetch = std::numeric_limits<std::uint16_t>::max();

}  // namespace

StreamOffset StreamOffset::first() { return StreamOffset(FieldValue("first")); }
StreamOffset StreamOffset::last() { return StreamOffset(FieldValue("last")); }
StreamOffset StreamOffset::next() { return StreamOffset(FieldValue("next")); }

// Always the signed kind: RabbitMQ reads no unsigned 64-bit field, and an offset written
// as one would arrive as something else (the Go 0.6.0 fix).
StreamOffset StreamOffset::exact(std::int64_t offset) { return StreamOffset(FieldValue(offset)); }

StreamOffset StreamOffset::at(std::chrono::system_clock::time_point instant) {
    const auto seconds = std::chrono::floor<std::chrono::seconds>(instant);
    return StreamOffset(FieldValue(std::max(seconds, FieldTimestamp{})));
}

void declare_stream(Bus& bus, std::string_view stream, StreamOptions options) {
    bus.declare(Topology{}.stream(stream, options));
}

std::optional<std::int64_t> stream_offset(const Envelope& envelope) {
    const auto found = envelope.headers.find(argument::stream_offset);
    if (found == envelope.headers.end()) return std::nullopt;
    const std::optional<std::int64_t> offset = found->second.as_integer();
    if (!offset || *offset < 0) return std::nullopt;
    return offset;
}

namespace detail {

ConsumerOptions stream_consumer_options(std::string_view stream, StreamReadOptions options) {
    if (options.prefetch < 1 || options.prefetch > largest_prefetch)
        throw InvalidArgument("acemq: reading stream " + shown_text(stream) +
                              " needs a prefetch of at least 1 (and at most " + std::to_string(largest_prefetch) +
                              "), got " + std::to_string(options.prefetch) +
                              ": RabbitMQ refuses a stream consumer without one");
    ConsumerOptions consumer{.retry = no_retry(),
                             .prefetch = static_cast<std::uint16_t>(options.prefetch),
                             .concurrency = options.concurrency,
                             .codec = std::move(options.codec),
                             .tag = std::move(options.consumer_name),
                             .declare = options.declare};
    consumer.arguments.emplace(std::string(argument::stream_offset), options.offset.argument());
    return consumer;
}

Ack answer_on_stream(std::string_view stream, const Envelope& envelope, const std::function<Ack()>& handle) {
    Ack answer = accept();
    try {
        answer = handle();
    } catch (...) {
        // A thrown failure is a retry (ack.hpp), refused below like a returned one; a fatal
        // one goes on to the engine, which dead-letters it.
        Failure failure = Failure::of(std::current_exception(), "in the reader of stream " + std::string(stream) +
                                                                    " (message " + shown_text(envelope.id) + ")");
        if (failure.fatal) throw;
        answer = retry(std::move(failure));
    }
    const bool refused =
        (answer.kind() == AckKind::retry && !answer.is_fatal()) || answer.kind() == AckKind::in_progress;
    if (!refused) return answer;
    const StreamRetryError refusal(
        "acemq: a reader of stream " + std::string(stream) + " cannot " +
        (answer.kind() == AckKind::retry ? "retry a message" : "leave a message in progress") +
        ": a copy would be appended to the stream and read again by every reader, so it is parked in " +
        parked_queue(stream) + " instead (the handler said " + std::string(to_string(answer.kind())) + ": " +
        describe(answer.failure()) + ")");
    log(LogLevel::error, "stream", std::string(refusal.what()) + "; message " + shown_text(envelope.id));
    return park(Failure::of(refusal));
}

}  // namespace detail

}  // namespace acemq
