// Publishing: a Publisher is configuration only (where to, how), cheap to copy, safe to
// use from many threads at once. send() returns once the broker confirmed the message;
// send_all() pipelines a batch and waits for every confirm.
//
//   acemq::Publisher orders = bus.publisher("orders", "order.placed", {.mandatory = true});
//   orders.send(OrderPlaced{"o-1", 4250});                 // throws PublishError if not confirmed
//   orders.send_all(std::span(batch));                    // throws BatchPublishError naming the failures
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <acemq/codec.hpp>
#include <acemq/detail/cores.hpp>
#include <acemq/envelope.hpp>
#include <acemq/error.hpp>

namespace acemq {

struct PublishContext;

struct PublisherOptions {
    bool persistent = true;                // survives a broker restart on a durable queue
    bool mandatory = false;                // a message that reaches no queue is an error, not silently dropped
    std::shared_ptr<const Codec> codec{};  // default: the bus's codec
};

// Per-message overrides of the envelope the publisher builds. Empty = the default.
struct SendOptions {
    std::string message_id{};  // default: a fresh UUID v4
    std::string type{};        // default: the publisher's routing key
    std::int32_t version = 1;
    std::string correlation{};  // default: the message id
    std::string causation{};
    std::string origin{};  // default: the bus's origin
    std::string reply_to{};
    std::string claim{};
    Headers headers{};                        // application headers; reserved names are refused
    std::optional<std::int32_t> attempt{};    // for replays and relays; default 1
    std::optional<EpochMillis> first_seen{};  // default: now
    // A declared pipeline's route (x-acemq-route, -position, -id), as RoutingSlip::onto
    // writes it; empty = none.
    std::vector<std::string> route{};
    std::int32_t route_position = 0;
    std::string route_id{};
};

struct SendResult {
    std::string message_id;
    bool confirmed = false;
    bool routed = true;
};

// A publish the broker did not take responsibility for. Treat the message as not sent;
// reason() says why, for a caller to switch on (the words of each: docs/wire-contract.md
// §7.2), e.g. to publish again only what cannot have arrived:
//
//   catch (const acemq::PublishError& error) {
//       if (error.reason() == acemq::PublishError::Reason::in_doubt) ...  // it may have arrived
//   }
class PublishError : public Error {
public:
    enum class Reason {
        // The broker has it and said no: a nack, or an exchange that does not exist
        // ("404 NOT_FOUND - no exchange ...").
        refused,
        // Confirmed, but a mandatory message reached no queue, and the broker dropped it.
        unroutable,
        // The connection went, or no confirm came in time: whether it arrived is unknown.
        in_doubt,
        // The broker has blocked the connection (a memory or disk alarm), so it was refused at
        // once, nothing written: "acemq: publishing is paused because the broker blocked this
        // connection (<reason>)". Publishing resumes when the broker unblocks it.
        paused,
        // The transport cannot carry it (a field or the headers too large for the wire),
        // nothing written; it fails the same way every time, until it is made smaller.
        too_large,
        // Never written: the transport is closed, or the connection went before its turn
        // ("it was not sent, nothing was written (... is closed ...)").
        not_sent,
    };

    PublishError(Reason reason, const std::string& what, std::string message_id)
        : Error(what), reason_(reason), message_id_(std::move(message_id)) {}
    Reason reason() const noexcept { return reason_; }
    const std::string& message_id() const noexcept { return message_id_; }

private:
    Reason reason_;
    std::string message_id_;
};

// Some messages of a batch were not confirmed. what(): "2 of 5 messages were not confirmed;
// 3 were. The first failure was: ...", and reason() and message_id() are the first
// failure's. The others were published.
class BatchPublishError : public PublishError {
public:
    BatchPublishError(std::vector<std::optional<PublishError>> failures, std::vector<SendResult> results);
    std::size_t total() const noexcept { return failures_.size(); }
    std::size_t failed() const noexcept;
    // One entry per message in payload order: the failure, or nullopt for a confirmed one.
    const std::vector<std::optional<PublishError>>& failures() const noexcept { return failures_; }
    const std::vector<SendResult>& results() const noexcept { return results_; }

private:
    std::vector<std::optional<PublishError>> failures_;
    std::vector<SendResult> results_;
};

class Publisher {
public:
    const std::string& exchange() const noexcept { return exchange_; }
    const std::string& routing_key() const noexcept { return routing_key_; }

    template <class T>
    SendResult send(const T& value, const SendOptions& options = {}) const {
        return send_encoded(options, [&](const Codec& codec) { return encode(codec, value); });
    }

    template <class T>
    std::vector<SendResult> send_all(std::span<const T> values, const SendOptions& options = {}) const {
        return send_all_encoded(values.size(), options,
                                [&](std::size_t index, const Codec& codec) { return encode(codec, values[index]); });
    }
    template <class T>
    std::vector<SendResult> send_all(const std::vector<T>& values, const SendOptions& options = {}) const {
        return send_all(std::span<const T>(values), options);
    }

    // Publishes bytes that are already encoded, with their content type.
    SendResult send_raw(Encoded body, const SendOptions& options = {}) const;

private:
    friend class Bus;
    friend class detail::BusCore;
    Publisher(std::shared_ptr<detail::BusCore> bus, std::string exchange, std::string routing_key,
              PublisherOptions options);

    // The context of one message sent with `options`, before the interceptors run.
    PublishContext context_for(const SendOptions& options) const;

    using EncodeOne = std::function<Encoded(const Codec&)>;
    using EncodeAt = std::function<Encoded(std::size_t, const Codec&)>;
    SendResult send_encoded(const SendOptions& options, const EncodeOne& encode_payload) const;
    std::vector<SendResult> send_all_encoded(std::size_t count, const SendOptions& options,
                                             const EncodeAt& encode_payload) const;

    std::shared_ptr<detail::BusCore> bus_;
    std::string exchange_;
    std::string routing_key_;
    PublisherOptions options_;
    std::shared_ptr<const detail::PublishInstruments> instruments_;  // null unless the bus measures
};

}  // namespace acemq
