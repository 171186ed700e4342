// The client's life cycle, what callers ask of it (requests, consuming, settling, health),
// and open(). Publishes are in publishing.cpp; the I/O thread in io_loop.cpp.
#include "zmq/zmq_transport.hpp"

#include <acemq/url.hpp>

#include "zmq/endpoint.hpp"
#include "zmq/keys.hpp"

namespace acemq::zmq {

namespace {

using wire::Command;

class ZmqSubscription final : public Subscription {
public:
    ZmqSubscription(std::weak_ptr<ZmqTransport> transport, std::shared_ptr<LocalConsumer> consumer)
        : transport_(std::move(transport)), consumer_(std::move(consumer)) {}
    ~ZmqSubscription() override {
        try {
            close();
        } catch (const Error&) {
            // The broker could not be told (the session is gone): it returns the consumer's
            // deliveries itself when the session ends.
        }
    }
    void stop() override {
        if (stopped_.exchange(true)) return;
        if (auto transport = transport_.lock()) transport->end_consumer(consumer_, false);
    }
    void close() override {
        if (closed_.exchange(true)) return;
        stopped_.store(true);
        if (auto transport = transport_.lock()) transport->end_consumer(consumer_, true);
    }

private:
    std::weak_ptr<ZmqTransport> transport_;  // a subscription outliving its transport has nothing left to do
    std::shared_ptr<LocalConsumer> consumer_;
    std::atomic<bool> stopped_{false}, closed_{false};
};

}  // namespace

ZmqTransport::ZmqTransport(std::string url, std::string endpoint, Options options)
    : url_(std::move(url)), endpoint_(std::move(endpoint)), options_(std::move(options)),
      session_(session::settle(options_.session,
                               {.connect_timeout = std::chrono::seconds(10),
                                .heartbeat = std::chrono::seconds(1),
                                .first_recovery_delay = std::chrono::milliseconds(100),
                                .max_recovery_delay = std::chrono::seconds(5)},
                               "zmq::Options")),
      events_("zmq", "zmq transport to " + redacted_url(url_), session_.on_event),
      window_(session_.max_outstanding_publishes, session_.confirm_timeout),
      backoff_(session_.first_recovery_delay, session_.max_recovery_delay) {
    if (session_.heartbeat <= std::chrono::milliseconds(0) || options_.missed_heartbeats < 1)
        throw InvalidArgument(
            "acemq: zmq::Options session.heartbeat must be positive and missed_heartbeats at least 1");
    if (options_.curve) {
        server_key_ = read_public_key(options_.curve->server_public_key);
        secret_key_ = read_secret_key(options_.curve->secret_key);
        public_key_ = public_key_of(secret_key_);
    }
    thread_ = std::thread([this] { run(); });
    std::unique_lock lock(open_mutex_);
    open_cv_.wait(lock, [&] { return opened_ || open_failure_.has_value(); });
    if (open_failure_) {
        const std::string failure = *open_failure_;
        const bool key_refused = open_key_refused_;
        lock.unlock();
        thread_.join();
        if (key_refused) throw KeyRefused(failure);
        throw ConnectionError(failure);
    }
}

ZmqTransport::~ZmqTransport() {
    try {
        close();
    } catch (const Error&) {
        // Destroyed from its own I/O thread (inside a DeliverFn): the thread ends on its own.
    }
}

std::string ZmqTransport::where() const { return "the zmq broker at " + redacted_url(url_); }

std::string ZmqTransport::closed_text() const {
    return "acemq: the transport to " + where() + " is closed; open a new one";
}

std::string ZmqTransport::as_named_here(std::string text) const {
    if (named_in_process_.empty()) return text;
    for (std::size_t at = text.find(named_in_process_); at != std::string::npos;
         at = text.find(named_in_process_, at + named_here_.size()))
        text.replace(at, named_in_process_.size(), named_here_);
    return text;
}

bool ZmqTransport::Outgoing::abandoned() const {
    return (reply && reply->abandoned()) || (confirm && confirm->abandoned());
}

void ZmqTransport::submit(Outgoing outgoing) {
    const std::shared_ptr<ReplyAnswer> reply = outgoing.reply;
    const std::shared_ptr<ConfirmAnswer> confirm = outgoing.confirm;
    // The I/O thread takes the whole queue each time it wakes, so only the first of a burst
    // wakes it: a batch of publishes costs one wake-up, not one each.
    if (queue_.push(outgoing)) return;
    if (reply) reply->fail(session::FailureKind::connection, closed_text());
    if (confirm) confirm->set(PublishResult{.return_reason = closed_text(), .why = PublishResult::Unconfirmed::unsent});
}

ZmqTransport::Reply ZmqTransport::request(Outgoing outgoing, std::string_view what) {
    const auto answer = std::make_shared<ReplyAnswer>();
    outgoing.reply = answer;
    submit(std::move(outgoing));
    std::optional<Reply> reply = answer->wait_until(Clock::now() + session_.call_timeout);
    if (!reply)
        throw ConnectionError("acemq: " + where() + " did not answer " + std::string(what) + " within " +
                              std::to_string(session_.call_timeout.count()) +
                              " ms (it is down or unreachable; the transport keeps trying to reconnect)");
    return std::move(*reply);
}

void ZmqTransport::declare(const Topology& topology) {
    topology.validate();
    const std::uint64_t number = next_number();
    request({.kind = Outgoing::Kind::request, .number = number, .frame = wire::encode_declare(number, topology)},
            "a declaration");
    std::lock_guard lock(declared_mutex_);
    declared_.remember(topology);
}

std::unique_ptr<Subscription> ZmqTransport::consume(std::string_view queue, const ConsumeSpec& spec,
                                                    DeliverFn deliver) {
    auto consumer = std::make_shared<LocalConsumer>();
    consumer->queue = std::string(queue);
    consumer->spec = spec;
    consumer->deliver = std::move(deliver);
    const std::uint64_t number = next_number();
    request({.kind = Outgoing::Kind::consume,
             .number = number,
             .frame = wire::encode_consume(number, consumer->queue, spec.prefetch, spec.tag, spec.arguments),
             .consumer = consumer},
            "a consume of \"" + consumer->queue + "\"");
    {
        std::lock_guard lock(consumers_mutex_);
        consumers_.push_back(consumer);
    }
    return std::make_unique<ZmqSubscription>(weak_from_this(), consumer);
}

void ZmqTransport::end_consumer(const std::shared_ptr<LocalConsumer>& consumer, bool release) {
    {
        // Waits out a delivery being handed over now: none starts after this.
        std::lock_guard lock(consumer->delivering);
        consumer->stopped = true;
        consumer->released = consumer->released || release;
    }
    if (release) {
        std::lock_guard lock(consumers_mutex_);
        consumers_.remove(consumer);
    }
    // Without a session the broker holds nothing of this consumer, and it is not consumed again
    // in the next (should a new session have consumed it already, its first delivery releases it).
    if (closed_.load() || !ready_.load()) return;
    request({.kind = Outgoing::Kind::end_consumer, .number = next_number(), .consumer = consumer, .release = release},
            release ? "the release of a consumer" : "the cancel of a consumer");
}

std::optional<Delivery> ZmqTransport::pull(std::string_view queue) {
    const std::uint64_t number = next_number();
    const Reply reply = request({.kind = Outgoing::Kind::request,
                                 .number = number,
                                 .frame = wire::encode_queue_request(Command::pull, number, queue)},
                                "a pull from \"" + std::string(queue) + "\"");
    auto pulled = wire::read_pulled(wire::Frame::parse(reply.frame));
    if (!pulled) return std::nullopt;
    return Delivery(std::move(pulled->message), *this, session::tag_for(reply.generation, pulled->delivery_tag));
}

std::uint64_t ZmqTransport::queue_depth(std::string_view queue) {
    const std::uint64_t number = next_number();
    const Reply reply = request({.kind = Outgoing::Kind::request,
                                 .number = number,
                                 .frame = wire::encode_queue_request(Command::depth, number, queue)},
                                "a depth of \"" + std::string(queue) + "\"");
    return wire::Frame::parse(reply.frame).unsigned_at(1, "depth");
}

bool ZmqTransport::queue_exists(std::string_view queue) {
    const std::uint64_t number = next_number();
    const Reply reply = request({.kind = Outgoing::Kind::request,
                                 .number = number,
                                 .frame = wire::encode_queue_request(Command::exists, number, queue)},
                                "whether \"" + std::string(queue) + "\" exists");
    return wire::Frame::parse(reply.frame).bool_at(1, "exists");
}

void ZmqTransport::delete_queue(std::string_view queue) {
    const std::uint64_t number = next_number();
    request({.kind = Outgoing::Kind::request,
             .number = number,
             .frame = wire::encode_queue_request(Command::remove, number, queue)},
            "the delete of \"" + std::string(queue) + "\"");
    std::lock_guard lock(declared_mutex_);
    declared_.forget_queue(queue);
}

Health ZmqTransport::check_health(std::chrono::milliseconds timeout) {
    if (closed_.load()) return {.status = Health::Status::down, .detail = "the transport to " + where() + " is closed"};
    if (!ready_.load()) {
        // Known lost: a ping would only wait for the next session, so the answer is now.
        std::lock_guard lock(lost_mutex_);
        return {.status = Health::Status::down,
                .detail = "the session is lost: " + lost_because_ + "; " +
                          (session_.recover ? "reconnecting" : "recovery is off, so open a new transport")};
    }
    const auto started = Clock::now();
    const std::uint64_t number = next_number();
    const auto answer = std::make_shared<ReplyAnswer>();
    submit({.kind = Outgoing::Kind::request, .number = number, .frame = wire::encode_ping(number), .reply = answer});
    std::optional<Reply> reply;
    try {
        reply = answer->wait_until(started + timeout);
    } catch (const Error& error) {
        return {.status = Health::Status::down, .detail = error.what()};
    }
    if (!reply)
        return {.status = Health::Status::down,
                .detail = where() + " did not answer within " + std::to_string(timeout.count()) + " ms"};
    const auto round_trip = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
    std::string trouble;
    try {
        trouble = wire::read_ping_reply(wire::Frame::parse(reply->frame));
    } catch (const wire::ProtocolError& error) {
        trouble = std::string("its answer to a ping could not be read: ") + error.what();
    }
    if (!trouble.empty())
        return {.status = Health::Status::down, .detail = where() + ": " + trouble, .round_trip = round_trip};
    return {.round_trip = round_trip};
}

void ZmqTransport::measure_connection(std::shared_ptr<Metrics> metrics) { events_.measure(metrics); }

TransportInfo ZmqTransport::describe() const {
    TransportInfo info{.name = "zmq",
                       .messaging_system = "acemq",
                       .address = endpoint_,
                       .capabilities = {"confirms", "dead-letters", "ttl"}};
    if (options_.curve) info.capabilities.push_back("curve");
    return info;
}

void ZmqTransport::close() {
    if (thread_.get_id() == std::this_thread::get_id())
        throw UsageError("acemq: a zmq transport cannot be closed from its own I/O thread (inside a DeliverFn)");
    if (!queue_.shut()) return;
    closed_.store(true);
    queue_.wake();
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(consumers_mutex_);
    for (const auto& consumer : consumers_) {
        std::lock_guard delivering(consumer->delivering);
        consumer->stopped = true;
    }
    consumers_.clear();
}

void ZmqTransport::ack(std::uint64_t delivery_tag) { settle(delivery_tag, std::nullopt); }
void ZmqTransport::requeue(std::uint64_t delivery_tag) { settle(delivery_tag, true); }
void ZmqTransport::reject(std::uint64_t delivery_tag) { settle(delivery_tag, false); }

void ZmqTransport::settle(std::uint64_t delivery_tag, std::optional<bool> nack_requeue) {
    const std::uint64_t generation = session::generation_of(delivery_tag);
    // A delivery of an earlier session went back to its queue when that session ended.
    if (generation != generation_.load() || closed_.load()) return;
    submit({.kind = Outgoing::Kind::settle,
            .frame = wire::encode_settle(session::broker_tag_of(delivery_tag), nack_requeue),
            .generation = generation,
            .batchable = true});
}

std::shared_ptr<Transport> open(std::string_view url, Options options) {
    return std::make_shared<ZmqTransport>(std::string(url), endpoint_of_url(url), std::move(options));
}

}  // namespace acemq::zmq
