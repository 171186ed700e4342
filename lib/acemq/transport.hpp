// The seam between the one engine and the brokers underneath (docs/wire-contract.md §12,
// docs/design.md §2: "a transport is small"). A transport declares topology, publishes
// bytes + headers and says whether the broker routed and confirmed them, hands out
// deliveries with a prefetch, and settles them. It never decides what a failure means: that
// is the engine's job.
//
// Implementations: transports/inproc (the embedded broker), transports/zmq (that broker
// over ZeroMQ), transports/amqp (RabbitMQ). Register one per URL scheme with
// register_transport; connect() in bus.hpp picks by scheme.
//
// Threads: every Transport member is safe to call from any thread. A DeliverFn may be
// called on a transport thread or, for the embedded broker, on the thread whose publish or
// ack made the delivery possible, possibly with transport locks held: it must hand the
// delivery on (queue it) and return, never call back into the transport.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <acemq/detail/message_block.hpp>
#include <acemq/envelope.hpp>
#include <acemq/field.hpp>
#include <acemq/health.hpp>
#include <acemq/packed_headers.hpp>
#include <acemq/packed_table.hpp>
#include <acemq/topology.hpp>

namespace acemq {

class Metrics;  // <acemq/metrics.hpp>

// This struct and PublishResult give every field a default, so that a designated
// initialiser names only the fields it sets.
struct OutboundMessage {
    std::string exchange{};  // "" = the default exchange: routing_key names the queue
    std::string routing_key{};
    Bytes body{};
    std::string content_type{};
    std::string message_id{};
    PackedTable headers{};  // `.headers = table` packs a FieldTable
    std::string reply_to{};
    bool persistent = true;
    bool mandatory = false;  // report a message that reached no queue instead of dropping it
};

struct PublishResult {
    // Why a publish is not confirmed: the broker said no (nack, or RabbitMQ's 404 for a
    // missing exchange); the connection went, or no confirm came in time, so whether it
    // arrived is unknown; it was never written because the broker has blocked the
    // connection; it was never written because the transport cannot encode it (a field or
    // the headers too large for the wire: return_reason names which, its size and the
    // limit; a too_large message fails the same way every time); or it was never written
    // because the transport is closed or the connection went before its turn (certainly
    // not sent).
    enum class Unconfirmed { refused, lost, paused, too_large, unsent };

    bool confirmed = false;                  // the broker took responsibility for it
    bool routed = true;                      // false only for a mandatory message that reached no queue
    std::string return_reason{};             // when not routed, e.g. "312 NO_ROUTE"; when not confirmed, why
    Unconfirmed why = Unconfirmed::refused;  // meaningful only when not confirmed
};

// What a transport builds an InboundMessage from: the delivery's parts, each its own value.
struct InboundParts {
    Bytes body{};
    std::string content_type{};
    std::string exchange{};
    std::string routing_key{};
    std::string message_id{};
    std::string reply_to{};
    Headers headers{};
    bool redelivered = false;
    // Why the transport could not read the delivery's own properties (headers nested past
    // its limit, say), with headers then left empty; "" when it could. The engine parks such
    // a message as undecodable without running the handler.
    std::string decode_failure{};
};

// What a delivery carries, as the broker handed it over: read through its accessors, whose
// views live as long as the message (or a copy of it). A value: a copy reads the same and
// nothing done to one changes the other. It is a handle to one heap block holding the short
// texts (content type, exchange, routing key, id, reply-to, decode failure), the headers,
// packed (packed_headers.hpp), and a body of up to 2 KiB (detail/message_block.hpp): copies
// share the block, so the embedded broker hands every delivery of a message the one it keeps,
// and set_redelivered() on a shared one copies it first (docs/design.md decision 12).
//
// Threads: any number of threads may read, copy and drop copies of one message at once; a
// single handle is not to be changed by one thread while another uses it.
class InboundMessage {
public:
    InboundMessage() = default;
    // Throws InvalidArgument, naming them, when the six short texts come to more than 64 KiB
    // in all (AMQP allows 255 bytes for each of the first five).
    explicit InboundMessage(InboundParts parts);
    // A message whose last release hands its block to `releaser` (the embedded broker's).
    InboundMessage(InboundParts parts, detail::MessageReleaser& releaser);
    // The delivery of `message` as it was published (its exchange and routing key, not
    // redelivered), for a broker in this process: its packed headers copied, not unpacked.
    // Throws as the constructor from parts does.
    explicit InboundMessage(OutboundMessage message);
    InboundMessage(OutboundMessage message, detail::MessageReleaser& releaser);
    InboundMessage(const InboundMessage& other) noexcept : block_(other.block_) {
        if (block_ != nullptr) block_->references.fetch_add(1, std::memory_order_relaxed);
    }
    InboundMessage(InboundMessage&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
    InboundMessage& operator=(const InboundMessage& other) noexcept {
        InboundMessage(other).swap(*this);
        return *this;
    }
    InboundMessage& operator=(InboundMessage&& other) noexcept {
        InboundMessage(std::move(other)).swap(*this);
        return *this;
    }
    ~InboundMessage() { release(); }
    void swap(InboundMessage& other) noexcept { std::swap(block_, other.block_); }

    std::span<const std::byte> body() const noexcept;
    std::string_view content_type() const noexcept {
        if (block_ != nullptr && block_->content_type_code != 0)
            return detail::known_content_types[block_->content_type_code - 1];
        return text(Text::content_type);
    }
    std::string_view exchange() const noexcept { return text(Text::exchange); }
    std::string_view routing_key() const noexcept { return text(Text::routing_key); }
    std::string_view message_id() const noexcept { return text(Text::message_id); }
    std::string_view reply_to() const noexcept { return text(Text::reply_to); }
    PackedHeaders headers() const noexcept { return PackedHeaders(text(Text::headers), message_id()); }
    bool redelivered() const noexcept { return block_ != nullptr && block_->redelivered; }
    // InboundParts::decode_failure: "" when the transport read the properties.
    std::string_view decode_failure() const noexcept { return text(Text::decode_failure); }

    // Every part, to change and make a new message from: copied, or moved out of a message
    // about to go (its body moved, not copied, when no copy shares it).
    InboundParts parts() const&;
    InboundParts parts() &&;
    // Copies the block first when another copy shares it (which may throw std::bad_alloc).
    void set_redelivered(bool redelivered);

    // Whether another copy shares this one's block, i.e. whether set_redelivered() would copy it.
    bool shared() const noexcept {
        return block_ != nullptr && block_->references.load(std::memory_order_acquire) != 1;
    }
    // The bytes this message holds on the heap, shared with its copies.
    std::size_t heap_bytes() const noexcept { return block_ == nullptr ? 0 : detail::message_block_bytes(*block_); }

private:
    // The headers, packed, come last.
    enum class Text : std::uint8_t {
        content_type,
        exchange,
        routing_key,
        message_id,
        reply_to,
        decode_failure,
        headers
    };

    static detail::MessageBlock* make_block(InboundParts&& parts);
    static detail::MessageBlock* make_block(OutboundMessage&& message);
    InboundParts parts_with(Bytes body) const;
    void release() noexcept;

    std::string_view text(Text which) const noexcept {
        if (block_ == nullptr) return {};
        const auto index = static_cast<std::size_t>(which);
        return std::string_view(block_->text_begin(index), block_->text_end(index));
    }

    detail::MessageBlock* block_ = nullptr;
};

inline std::span<const std::byte> InboundMessage::body() const noexcept {
    if (block_ == nullptr) return {};
    if (block_->body_apart) return detail::apart_body(*block_);
    return {reinterpret_cast<const std::byte*>(block_->texts() + block_->texts_size), block_->inline_body_size};
}

inline void InboundMessage::release() noexcept {
    if (block_ == nullptr || block_->references.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (block_->releaser != nullptr)
        block_->releaser->release(block_);
    else
        detail::free_message_block(block_);
}

// The envelope of a delivered message (envelope.hpp's read_envelope, off its headers, routing
// key and message id), each header value decoded once.
Envelope read_envelope(const InboundMessage& message);

// How a transport settles what it handed out; implemented by each transport.
class DeliverySettler {
public:
    virtual void ack(std::uint64_t delivery_tag) = 0;
    virtual void requeue(std::uint64_t delivery_tag) = 0;  // back to its queue, redelivered
    virtual void reject(std::uint64_t delivery_tag) = 0;   // dead-lettered, or dropped without a dead-letter exchange

protected:
    ~DeliverySettler() = default;
};

// One message handed to a consumer or pulled, to be settled exactly once: ack, requeue or
// reject. One that is never settled goes back to its queue when its
// subscription closes (as RabbitMQ does when a channel closes). Move-only.
class Delivery {
public:
    Delivery(InboundMessage message, DeliverySettler& settler, std::uint64_t delivery_tag)
        : message_(std::move(message)), settler_(&settler), tag_(delivery_tag) {}
    Delivery(Delivery&& other) noexcept;
    Delivery& operator=(Delivery&& other) noexcept;
    Delivery(const Delivery&) = delete;
    Delivery& operator=(const Delivery&) = delete;
    ~Delivery() = default;

    // A moved-from Delivery's is empty.
    const InboundMessage& message() const noexcept { return message_; }
    bool settled() const noexcept { return settler_ == nullptr; }

    // Each settles the delivery, and throws UsageError when it was already settled.
    void ack();
    // Nack with requeue: the message goes back to its queue, to be delivered again.
    void requeue();
    // Nack without requeue: the broker dead-letters the message (or drops it, on a queue
    // without a dead-letter exchange).
    void reject();

private:
    DeliverySettler& take_settler(std::string_view action);

    InboundMessage message_;
    DeliverySettler* settler_;
    std::uint64_t tag_;
};

using DeliverFn = std::function<void(Delivery)>;

struct ConsumeSpec {
    std::uint16_t prefetch = 20;  // unsettled deliveries at most; 0 means the transport's default
    std::string tag{};            // "" = generated
    FieldTable arguments{};       // consumer arguments, e.g. x-stream-offset
};

class Subscription {
public:
    virtual ~Subscription() = default;
    // No deliveries start after stop() returns; handed-out ones can still be settled.
    virtual void stop() = 0;
    // Releases the subscription; its unsettled deliveries go back to the queue, redelivered.
    // Implies stop(). Idempotent.
    virtual void close() = 0;
};

// What a transport is, for /acemq-info and for the spans' messaging.system.
struct TransportInfo {
    std::string name = "custom";              // "inproc", "zmq", "amqp"
    std::string messaging_system = "acemq";   // "rabbitmq" for amqp
    std::string address{};                    // where it is connected, never with credentials
    std::vector<std::string> capabilities{};  // e.g. "confirms", "durable", "quorum-queues"
    // The most bytes one message's properties (content type, message id, reply-to and the
    // header table) can take on the wire as the connection stands now, e.g. amqp's content
    // header frame within the negotiated frame_max; 0 when the transport has no such limit.
    // The engine cuts a dead-letter or park copy that the transport refused as too_large to
    // fit it, counting each header as its name and value plus 16 bytes (more than any
    // transport's encoding adds around them) and the content type and reply-to likewise.
    std::size_t max_properties_bytes = 0;
};

class Transport {
public:
    virtual ~Transport() = default;

    // Exchanges, then queues, then bindings. A queue or exchange that exists with other
    // settings is refused with a TopologyError naming it and what differs (RabbitMQ's
    // PRECONDITION_FAILED).
    virtual void declare(const Topology& topology) = 0;

    // Publishes one message and waits for the broker's word on it.
    virtual PublishResult publish(OutboundMessage message) = 0;
    // Publishes all, then waits for every confirm: results in order, one per message.
    // Not atomic; a failure does not cut the batch short.
    virtual std::vector<PublishResult> publish_batch(std::vector<OutboundMessage> messages);

    // Starts pushing deliveries of `queue` to `deliver`. Throws when the queue does not exist.
    virtual std::unique_ptr<Subscription> consume(std::string_view queue, const ConsumeSpec& spec,
                                                  DeliverFn deliver) = 0;
    // Takes one message off the head of `queue`, unsettled; nullopt when it is empty.
    virtual std::optional<Delivery> pull(std::string_view queue) = 0;

    // Messages ready in `queue` (not counting those handed out and not yet settled).
    virtual std::uint64_t queue_depth(std::string_view queue) = 0;
    virtual bool queue_exists(std::string_view queue) = 0;
    // Idempotent: deleting a queue that does not exist is not an error.
    virtual void delete_queue(std::string_view queue) = 0;

    // Asks the broker something that creates nothing, within `timeout` (see health.hpp). The
    // default, for transports with no broker to ask, is up.
    virtual Health check_health(std::chrono::milliseconds timeout = std::chrono::seconds(3));

    // What this transport is; cheap, never asks the broker. Thread-safe.
    virtual TransportInfo describe() const;

    // From now on, reports the connection's state, losses, recoveries and time disconnected
    // into `metrics` (docs/observability.md, "Connection metrics"); the Bus calls it with its
    // BusOptions::metrics. The default does nothing: a transport in this process has no
    // connection to lose. Thread-safe.
    virtual void measure_connection(std::shared_ptr<Metrics> metrics);

    // Releases the connection. Subscriptions still open are closed. Idempotent.
    virtual void close() = 0;
};

// A transport for a URL, e.g. "inproc://orders" → the embedded broker named "orders".
using TransportFactory = std::function<std::shared_ptr<Transport>(std::string_view url)>;

// Makes `scheme` (without "://") known to connect(). Replaces an earlier registration.
void register_transport(std::string_view scheme, TransportFactory factory);
// Throws InvalidArgument for an unknown scheme, listing the known ones.
std::shared_ptr<Transport> open_transport(std::string_view url);

}  // namespace acemq
