// Request/reply (docs/request-reply.md, docs/wire-contract.md §13): a Requester asks and
// waits for the answer; serve() answers every request arriving on a queue.
//
//   acemq::Requester prices{bus, "", "prices.quote"};                 // one reply queue of its own
//   Quote quote = prices.ask<Quote>(QuoteRequest{"sku-1"});           // blocks, 30 s at most
//   std::future<Quote> later = prices.ask_async<Quote>(QuoteRequest{"sku-2"});
//
//   acemq::Responder responder = acemq::serve<QuoteRequest>(bus, "prices.quote",
//       [](const acemq::Message<QuoteRequest>& m) { return Quote{m.payload.sku, 4250}; });
//
// On the wire (the family's): each request carries a fresh UUID v4 correlation id (it
// replaces any the caller gave; wider correlation belongs in a header of its own) and the
// reply address twice, in the AMQP reply-to property and in the application header
// acemq-reply-to. A responder reads the header first, then the property. The reply goes
// through the default exchange to that address (not mandatory), with the request's
// correlation id, causation = the request's id. A responder that throws sends an empty
// reply carrying the header acemq-error ("<Type>: <text>"), and the request is rejected to
// {queue}.dlq; the caller gets ResponderError, never a timeout. A request the responder
// cannot read (a DecodeError, from the codec or from respond) is parked in {queue}.parked,
// as any undecodable message is, and answered the same way, so its caller hears at once.
// A request that names no reply address is rejected to {queue}.dlq and counted
// unanswerable. A reply that cannot be sent leaves the request to the retry policy: make
// responders idempotent.
//
// Requests are published mandatory: one that reaches no queue fails at once with
// PublishError (unroutable) instead of waiting out its timeout. A reply nobody waits for
// (late, forged, or for another requester) is accepted, dropped and counted unmatched.
//
// Telemetry (the bus's Metrics and Tracer): acemq.request.total and acemq.request.duration,
// tagged routing.key and outcome answered, timed_out (also a close) or failed (the responder
// failed, or the request was not confirmed); a "<destination> request" CLIENT span around
// each call, the request's publish its child, so the trace goes on to the responder.
//
// Threads: a Requester is shared by reference between threads; ask and ask_async are
// thread-safe, any number in flight at once. close() is thread-safe and idempotent. The bus
// must outlive its requesters and responders, and stay where it is (not moved from).
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>

#include <acemq/bus.hpp>
#include <acemq/codec.hpp>
#include <acemq/consumer.hpp>
#include <acemq/error.hpp>
#include <acemq/message.hpp>
#include <acemq/publisher.hpp>

namespace acemq {

// Application headers of the family's request/reply, deliberately outside the reserved
// x-acemq- namespace.
namespace header {
inline constexpr std::string_view reply_to = "acemq-reply-to";
inline constexpr std::string_view responder_error = "acemq-error";
}  // namespace header

inline constexpr std::chrono::milliseconds default_request_timeout{30000};

// No reply came within the deadline, or the requester was closed while the call waited:
//   "acemq: no reply arrived before the deadline after 5s (correlation 9f2c…)"
//   "acemq: the requester was closed while 9f2c… was outstanding"
class RequestTimeoutError : public Error {
public:
    RequestTimeoutError(const std::string& what, std::string correlation)
        : Error(what), correlation_(std::move(correlation)) {}
    const std::string& correlation() const noexcept { return correlation_; }

private:
    std::string correlation_;
};

// The responder failed; text() is its acemq-error header ("std::runtime_error: out of stock").
// what(): "acemq: the responder failed: <text>".
class ResponderError : public Error {
public:
    ResponderError(const std::string& what, std::string text) : Error(what), text_(std::move(text)) {}
    const std::string& text() const noexcept { return text_; }

private:
    std::string text_;
};

struct RequesterOptions {
    // "" = a queue of its own, acemq-reply-<uuid hex>: transient, exclusive, auto-delete,
    // classic, gone with the requester. A name = a durable quorum queue the requester
    // declares, for replies that must outlive a restart of the caller.
    std::string reply_queue{};
    std::chrono::milliseconds timeout = default_request_timeout;  // per call unless given; > 0
    std::shared_ptr<const Codec> codec{};                         // default: the bus's
    std::uint16_t prefetch = 0;                                   // reply consumer's; 0: the bus's
};

// Per call: a timeout of its own, and envelope fields (headers, type) to send with.
struct RequestOptions {
    std::chrono::milliseconds timeout{0};  // 0: the requester's
    SendOptions send{};                    // correlation and reply_to are the requester's
};

class Requester {
public:
    // Declares the reply queue and starts reading it. InvalidArgument for a timeout <= 0.
    Requester(Bus& bus, std::string exchange, std::string routing_key, RequesterOptions options = {});
    Requester(Requester&&) noexcept;
    Requester& operator=(Requester&&) noexcept;
    ~Requester();  // close()

    // Sends `request` and waits for the reply, decoded as Reply. Throws RequestTimeoutError,
    // ResponderError, PublishError (the request was not confirmed), DecodeError (the reply
    // was not a Reply).
    template <class Reply, class Request>
    Reply ask(const Request& request, const RequestOptions& options = {}) {
        return ask_async<Reply>(request, options).get();
    }
    // The same, returning at once; the future becomes ready when the reply arrives or the
    // call ends, holding the reply or one of ask's errors (a DecodeError too). The request
    // is published (and confirmed) before this returns, so a PublishError, and a UsageError
    // once the requester is closed, are thrown here, not stored in the future.
    template <class Reply, class Request>
    std::future<Reply> ask_async(const Request& request, const RequestOptions& options = {}) {
        auto codec = codec_for_requests();
        auto promise = std::make_shared<std::promise<Reply>>();
        std::future<Reply> future = promise->get_future();
        send_request(encode(*codec, request), options,
                     [codec, promise](const RawMessage* reply, std::exception_ptr failure) {
                         if (failure) return promise->set_exception(std::move(failure));
                         try {
                             promise->set_value(decode<Reply>(*codec, reply->payload, reply->content_type));
                         } catch (...) {  // the reply was not a Reply: the caller hears it from get()
                             promise->set_exception(std::current_exception());
                         }
                     });
        return future;
    }

    // Bytes already encoded; the reply comes back undecoded.
    std::future<RawMessage> ask_encoded(Encoded request, const RequestOptions& options = {});

    const std::string& reply_queue() const noexcept;
    std::uint64_t in_flight() const noexcept;  // calls waiting now
    std::uint64_t timed_out() const noexcept;  // calls that ended with RequestTimeoutError
    std::uint64_t unmatched() const noexcept;  // replies dropped: no call waited for them
    // Stops the reply consumer and fails every waiting call with RequestTimeoutError.
    void close();

    class Core;  // not API

private:
    // Called once, with the reply (failure null) or with why there is none, on the thread
    // that received the reply or saw the deadline pass; it must not block.
    using Completion = std::function<void(const RawMessage* reply, std::exception_ptr failure)>;
    void send_request(Encoded request, const RequestOptions& options, Completion done);
    std::shared_ptr<const Codec> codec_for_requests() const;
    std::shared_ptr<Core> core_;
};

struct ServeOptions {
    ConsumerOptions consumer{};  // how the request queue is consumed
    // Codec for requests and replies; default: the consumer's, then the bus's.
    std::shared_ptr<const Codec> codec{};
};

class Responder;

// Serves requests whose body the responder reads itself and whose reply it encodes itself.
// The queue must exist (declare it with dead letters, for the requests set aside).
Responder serve_raw(Bus& bus, std::string_view queue, std::function<Encoded(const RawMessage&)> respond,
                    ServeOptions options = {});

// Answers requests on a queue until closed (or destroyed). answered() counts replies sent
// (counted before the publish, taken back if it fails); unanswerable() requests that named
// no reply address (rejected to {queue}.dlq). Every member is thread-safe.
class Responder {
public:
    Responder(Responder&&) noexcept;
    Responder& operator=(Responder&&) noexcept;
    ~Responder();

    const std::string& queue() const noexcept;
    std::uint64_t answered() const noexcept;
    std::uint64_t unanswerable() const noexcept;
    bool close();  // as Consumer::close

    class Core;  // not API

private:
    friend Responder serve_raw(Bus&, std::string_view, std::function<Encoded(const RawMessage&)>, ServeOptions);
    explicit Responder(std::shared_ptr<Core> core);
    std::shared_ptr<Core> core_;
};

// Serves requests decoded as Request; `respond` returns the reply value (any type the
// codec can write). A request that cannot be decoded as Request is parked, as by any
// consumer, and answered with an error reply.
template <class Request, class Respond>
Responder serve(Bus& bus, std::string_view queue, Respond respond, ServeOptions options = {}) {
    auto codec = options.codec ? options.codec : options.consumer.codec ? options.consumer.codec : bus.codec();
    return serve_raw(
        bus, queue,
        [codec, respond = std::move(respond)](const RawMessage& raw) {
            Message<Request> request{decode<Request>(*codec, raw.payload, raw.content_type),
                                     raw.envelope,
                                     raw.queue,
                                     raw.routing_key,
                                     raw.content_type,
                                     raw.reply_to,
                                     raw.redelivered};
            return encode(*codec, respond(request));
        },
        std::move(options));
}

}  // namespace acemq
