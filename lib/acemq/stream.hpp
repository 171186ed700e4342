// Reading a stream queue (docs/streams.md, docs/wire-contract.md §5.9): an append-only log
// that reads do not remove, read from an offset, any number of times, by any number of readers.
//
//   acemq::declare_stream(bus, "orders.log", {.max_age = std::chrono::days(7)});
//   std::int64_t checkpoint = load_checkpoint();           // kept by the application
//   acemq::Consumer reader = acemq::read_stream(bus, "orders.log",
//       [&](const acemq::Message<Order>& m) {
//           apply(m.payload);
//           save_checkpoint(*acemq::stream_offset(m));     // then resume at checkpoint + 1
//           return acemq::accept();
//       },
//       {.offset = acemq::StreamOffset::at(checkpoint + 1), .consumer_name = "billing"});
//
// Nothing remembers a reader's position: the broker starts each reader where its offset
// says, and the application checkpoints the x-stream-offset of what it handled
// (stream_offset), resuming at that offset + 1.
//
// What a handler may answer: accept (done, checkpoint it), reject (a copy to {stream}.dlq),
// park (a copy to {stream}.parked); the original stays in the stream either way. A retry,
// whether returned or thrown, and in_progress are refused: each would append a copy to the
// log that every reader then reads again. The message is parked to {stream}.parked instead,
// its x-acemq-error naming StreamRetryError and what the handler said, and the refusal is
// logged as an error. A FatalError (thrown, or inside a retry) dead-letters it to
// {stream}.dlq as on any queue.
//
// StreamOffset and StreamReadOptions are values. read_stream and declare_stream are as
// thread-safe as the Bus they are given; stream_offset is a pure function.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <acemq/ack.hpp>
#include <acemq/bus.hpp>
#include <acemq/codec.hpp>
#include <acemq/consumer.hpp>
#include <acemq/envelope.hpp>
#include <acemq/error.hpp>
#include <acemq/field.hpp>
#include <acemq/message.hpp>
#include <acemq/topology.hpp>

namespace acemq {

// Where a reader starts: the value of its x-stream-offset consumer argument.
class StreamOffset {
public:
    // next: only what is appended after the reader starts.
    StreamOffset() = default;

    // The oldest message the stream still holds (retention may have dropped older ones).
    static StreamOffset first();
    // The last chunk the broker wrote, so a few of the newest messages and what follows.
    static StreamOffset last();
    static StreamOffset next();
    // The message at this offset and what follows. Sent as a signed 64-bit integer (AMQP
    // tables have no unsigned one): an unsigned offset above that range is clamped to its
    // largest value; a negative one is InvalidArgument. An offset the stream has not reached
    // yet waits for it: messages appended before it are not delivered to this reader.
    // An offset older than retention left starts at the oldest message there is.
    template <std::integral Offset>
        requires(!std::same_as<Offset, bool>)
    static StreamOffset at(Offset offset);
    // The messages appended at or after this instant (to the second: an AMQP timestamp),
    // as far as the broker's chunks tell. An instant before 1970 reads from the start.
    static StreamOffset at(std::chrono::system_clock::time_point instant);

    // "first", "last" or "next" as a string, the offset as std::int64_t, or the instant
    // as a FieldTimestamp.
    const FieldValue& argument() const noexcept { return argument_; }

    friend bool operator==(const StreamOffset&, const StreamOffset&) = default;

private:
    explicit StreamOffset(FieldValue argument) : argument_(std::move(argument)) {}
    static StreamOffset exact(std::int64_t offset);

    FieldValue argument_{std::string("next")};
};

struct StreamReadOptions {
    StreamOffset offset{};
    // Deliveries unsettled at once; a stream consumer must have one. At least 1 and at
    // most 65535, else InvalidArgument.
    int prefetch = 10;
    // The consumer tag; "" lets the bus choose (acemq-{stream}, acemq-{stream}-2, ...).
    std::string consumer_name{};
    std::shared_ptr<const Codec> codec{};  // default: the bus's codec
    int concurrency = 1;                   // workers; 1 keeps the stream's order
    // Declare {stream}.dlq, {stream}.parked and acemq.dlx, where set-aside copies go.
    bool declare = true;
};

// What a handler's retry or in_progress on a stream is parked with.
class StreamRetryError : public Error {
public:
    using Error::Error;
};

// Declares `stream` as Topology::stream does: a durable stream queue with only the
// retention asked for. TopologyError when the broker has a queue of that name that differs.
void declare_stream(Bus& bus, std::string_view stream, StreamOptions options = {});

// The x-stream-offset the broker put on a delivery, written in any integer width; nullopt
// when it has none (a message not read from a stream) or one that is not an offset. Never 0
// for "absent": 0 is the stream's first offset.
std::optional<std::int64_t> stream_offset(const Envelope& envelope);
template <class T>
std::optional<std::int64_t> stream_offset(const Message<T>& message) {
    return stream_offset(message.envelope);
}

namespace detail {
// The consumer options read_stream runs with; InvalidArgument for a prefetch out of range.
ConsumerOptions stream_consumer_options(std::string_view stream, StreamReadOptions options);
// Runs a stream reader's handler and turns a retry or in_progress into the parking above.
Ack answer_on_stream(std::string_view stream, const Envelope& envelope, const std::function<Ack()>& handle);
}  // namespace detail

// Starts reading `stream` from options.offset, decoding each body into T as Bus::consume
// does, with no retry policy whatever the bus's. Throws what Bus::consume throws (the stream
// must exist: declare_stream) and InvalidArgument for a prefetch out of range.
template <class T = void, class H, class P = typename detail::chosen_payload<T, H>::type>
    requires std::invocable<H&, const Message<P>&>
Consumer read_stream(Bus& bus, std::string_view stream, H handler, StreamReadOptions options = {}) {
    ConsumerOptions consumer = detail::stream_consumer_options(stream, std::move(options));
    Handler<P> refusing = [name = std::string(stream),
                           handler = Handler<P>(std::move(handler))](const Message<P>& message) {
        return detail::answer_on_stream(name, message.envelope, [&] { return handler(message); });
    };
    return bus.consume<P>(stream, std::move(refusing), std::move(consumer));
}

template <std::integral Offset>
    requires(!std::same_as<Offset, bool>)
StreamOffset StreamOffset::at(Offset offset) {
    if constexpr (std::is_signed_v<Offset>) {
        if (offset < 0)
            throw InvalidArgument("acemq: a stream offset cannot be negative, got " + std::to_string(offset) +
                                  "; read from the start with StreamOffset::first()");
    }
    constexpr auto largest = static_cast<std::uintmax_t>(std::numeric_limits<std::int64_t>::max());
    if (static_cast<std::uintmax_t>(offset) > largest) return exact(std::numeric_limits<std::int64_t>::max());
    return exact(static_cast<std::int64_t>(offset));
}

}  // namespace acemq
