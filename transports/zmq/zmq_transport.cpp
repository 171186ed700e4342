#include "zmq/zmq_transport.hpp"

#include <acemq/log.hpp>
#include <acemq/url.hpp>

#include "inproc/quoted.hpp"
#include "zmq/endpoint.hpp"
#include "zmq/keys.hpp"

namespace acemq::zmq {

namespace {

using Clock = Call::Clock;
using wire::Command;

// A delivery tag on this side: the session generation in the top 16 bits, the broker's tag
// below, so that settling a delivery of an earlier session can be recognised and dropped.
constexpr int generation_shift = 48;
constexpr std::uint64_t tag_mask = (std::uint64_t{1} << generation_shift) - 1;

std::vector<std::byte> copy_of(std::span<const std::byte> bytes) { return {bytes.begin(), bytes.end()}; }

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

std::string_view to_string(ConnectionEvent::Kind kind) {
    switch (kind) {
    case ConnectionEvent::Kind::lost: return "lost";
    case ConnectionEvent::Kind::retrying: return "retrying";
    case ConnectionEvent::Kind::recovered: return "recovered";
    case ConnectionEvent::Kind::gave_up: return "gave_up";
    }
    return "unknown";
}

ZmqTransport::ZmqTransport(std::string url, std::string endpoint, Options options)
    : url_(std::move(url)), endpoint_(std::move(endpoint)), options_(std::move(options)) {
    if (options_.heartbeat <= std::chrono::milliseconds(0) || options_.missed_heartbeats < 1 ||
        options_.max_outstanding_publishes == 0)
        throw InvalidArgument(
            "acemq: zmq::Options heartbeat must be positive, missed_heartbeats and max_outstanding_publishes at "
            "least 1");
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
        lock.unlock();
        thread_.join();
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

std::string ZmqTransport::as_named_here(std::string text) const {
    if (named_in_process_.empty()) return text;
    for (std::size_t at = text.find(named_in_process_); at != std::string::npos;
         at = text.find(named_in_process_, at + named_here_.size()))
        text.replace(at, named_in_process_.size(), named_here_);
    return text;
}

// ---- caller side ------------------------------------------------------------------------

std::shared_ptr<Call> ZmqTransport::submit(Outgoing outgoing) {
    if (!outgoing.call && outgoing.kind != Outgoing::Kind::settle) outgoing.call = std::make_shared<Call>();
    std::shared_ptr<Call> call = outgoing.call;
    bool first_waiting = false;
    {
        std::lock_guard lock(queue_mutex_);
        if (closed_.load()) {
            if (call)
                call->fail(Call::Outcome::unsent, "acemq: the transport to " + where() + " is closed; open a new one");
            return call;
        }
        first_waiting = queue_.empty();
        queue_.push_back(std::move(outgoing));
    }
    // The I/O thread takes the whole queue each time it wakes, so only the first of a burst
    // needs to wake it: a batch of publishes costs one wake-up, not one each.
    if (first_waiting) wake_.signal();
    return call;
}

Call::Result ZmqTransport::request(Outgoing outgoing, std::string_view what) {
    const auto call = submit(std::move(outgoing));
    auto result = call->wait_until(Clock::now() + options_.call_timeout);
    if (!result)
        throw ConnectionError("acemq: " + where() + " did not answer " + std::string(what) + " within " +
                              std::to_string(options_.call_timeout.count()) +
                              " ms (it is down or unreachable; the transport keeps trying to reconnect)");
    if (result->outcome != Call::Outcome::replied) throw_failure(*result);
    return std::move(*result);
}

void ZmqTransport::declare(const Topology& topology) {
    topology.validate();
    const std::uint64_t number = next_number();
    request({.kind = Outgoing::Kind::request, .number = number, .frame = wire::encode_declare(number, topology)},
            "a declaration");
    std::lock_guard lock(consumers_mutex_);
    const auto remember = [](auto& kept, const auto& declarations) {
        for (const auto& declaration : declarations)
            if (std::find(kept.begin(), kept.end(), declaration) == kept.end()) kept.push_back(declaration);
    };
    remember(declared_.exchanges, topology.exchanges());
    remember(declared_.queues, topology.queues());
    remember(declared_.bindings, topology.bindings());
}

PublishResult ZmqTransport::start_publish(OutboundMessage& message, std::shared_ptr<Call>& call) {
    if (!ready_.load())
        return PublishResult{
            .return_reason = closed_.load()
                                 ? "the transport to " + where() + " is closed; open a new one"
                                 : "the session with " + where() + " is lost and not yet re-established; not sent",
            .why = PublishResult::Unconfirmed::unsent};
    // Refused here, unwritten: libzmq drops the connection of a peer that sends a frame past
    // the broker's limit, and with it the session and every publish in flight on it.
    const std::uint64_t sequence = next_number();
    msgpack::sbuffer frame = wire::encode_publish(sequence, message);
    if (const std::uint64_t limit = max_frame_bytes_.load(); limit > 0 && frame.size() > limit)
        return PublishResult{.return_reason = "the message takes " + std::to_string(frame.size()) +
                                              " bytes as a frame (its body " + std::to_string(message.body.size()) +
                                              " bytes), and " + where() + " takes frames of at most " +
                                              std::to_string(limit) +
                                              " bytes (its --max-frame-bytes, zmq::ServerOptions::max_frame_bytes)",
                             .why = PublishResult::Unconfirmed::too_large};
    {
        std::unique_lock lock(window_mutex_);
        if (!window_cv_.wait_for(lock, options_.confirm_timeout,
                                 [&] { return in_flight_ < options_.max_outstanding_publishes; }))
            return PublishResult{.return_reason = std::to_string(options_.max_outstanding_publishes) +
                                                  " publishes are already waiting for a confirm and none completed "
                                                  "within " +
                                                  std::to_string(options_.confirm_timeout.count()) +
                                                  " ms. The broker is not keeping up; publish more slowly rather than "
                                                  "buffering more",
                                 .why = PublishResult::Unconfirmed::lost};
        ++in_flight_;
    }
    call = submit({.kind = Outgoing::Kind::publish, .number = sequence, .frame = std::move(frame)});
    return {};
}

void ZmqTransport::release_window_slot() {
    {
        std::lock_guard lock(window_mutex_);
        --in_flight_;
    }
    window_cv_.notify_one();
}

PublishResult ZmqTransport::finish_publish(const std::shared_ptr<Call>& call, Clock::time_point deadline) {
    auto result = call->wait_until(deadline);
    release_window_slot();
    if (!result)
        return PublishResult{.return_reason = "no confirm from " + where() + " within " +
                                              std::to_string(options_.confirm_timeout.count()) +
                                              " ms: it may or may not have arrived",
                             .why = PublishResult::Unconfirmed::lost};
    switch (result->outcome) {
    case Call::Outcome::replied: return std::move(result->confirm);
    case Call::Outcome::unsent:
        return PublishResult{.return_reason = result->text, .why = PublishResult::Unconfirmed::unsent};
    case Call::Outcome::failed:
    case Call::Outcome::connection: break;
    }
    return PublishResult{.return_reason = result->text, .why = PublishResult::Unconfirmed::lost};
}

PublishResult ZmqTransport::publish(OutboundMessage message) {
    std::shared_ptr<Call> call;
    PublishResult refused = start_publish(message, call);
    if (!call) return refused;
    return finish_publish(call, Clock::now() + options_.confirm_timeout);
}

std::vector<PublishResult> ZmqTransport::publish_batch(std::vector<OutboundMessage> messages) {
    std::vector<PublishResult> results(messages.size());
    std::vector<std::pair<std::size_t, std::shared_ptr<Call>>> waiting;
    waiting.reserve(messages.size());
    std::size_t finished = 0;
    for (std::size_t i = 0; i < messages.size(); ++i) {
        // A full window first settles the oldest, so the batch streams instead of waiting for a slot.
        while (waiting.size() - finished >= options_.max_outstanding_publishes) {
            results[waiting[finished].first] =
                finish_publish(waiting[finished].second, Clock::now() + options_.confirm_timeout);
            ++finished;
        }
        std::shared_ptr<Call> call;
        results[i] = start_publish(messages[i], call);
        if (call) waiting.emplace_back(i, std::move(call));
    }
    const auto deadline = Clock::now() + options_.confirm_timeout;
    for (; finished < waiting.size(); ++finished)
        results[waiting[finished].first] = finish_publish(waiting[finished].second, deadline);
    return results;
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
             .frame = wire::encode_consume(number, consumer->queue, spec.prefetch, spec.tag),
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
    const Call::Result result = request({.kind = Outgoing::Kind::request,
                                         .number = number,
                                         .frame = wire::encode_queue_request(Command::pull, number, queue)},
                                        "a pull from \"" + std::string(queue) + "\"");
    auto pulled = wire::read_pulled(wire::Frame::parse(result.frame));
    if (!pulled) return std::nullopt;
    return Delivery(std::move(pulled->message), *this, (result.generation << generation_shift) | pulled->delivery_tag);
}

namespace {

template <class T>
T reply_value(const Call::Result& result, std::string_view what);

template <>
std::uint64_t reply_value(const Call::Result& result, std::string_view what) {
    return wire::Frame::parse(result.frame).unsigned_at(1, what);
}

template <>
bool reply_value(const Call::Result& result, std::string_view what) {
    return wire::Frame::parse(result.frame).bool_at(1, what);
}

}  // namespace

std::uint64_t ZmqTransport::queue_depth(std::string_view queue) {
    const std::uint64_t number = next_number();
    return reply_value<std::uint64_t>(request({.kind = Outgoing::Kind::request,
                                               .number = number,
                                               .frame = wire::encode_queue_request(Command::depth, number, queue)},
                                              "a depth of \"" + std::string(queue) + "\""),
                                      "depth");
}

bool ZmqTransport::queue_exists(std::string_view queue) {
    const std::uint64_t number = next_number();
    return reply_value<bool>(request({.kind = Outgoing::Kind::request,
                                      .number = number,
                                      .frame = wire::encode_queue_request(Command::exists, number, queue)},
                                     "whether \"" + std::string(queue) + "\" exists"),
                             "exists");
}

void ZmqTransport::delete_queue(std::string_view queue) {
    const std::uint64_t number = next_number();
    request({.kind = Outgoing::Kind::request,
             .number = number,
             .frame = wire::encode_queue_request(Command::remove, number, queue)},
            "the delete of \"" + std::string(queue) + "\"");
    std::lock_guard lock(consumers_mutex_);
    std::erase_if(declared_.queues, [&](const QueueDeclaration& declared) { return declared.name == queue; });
    std::erase_if(declared_.bindings, [&](const BindingDeclaration& declared) { return declared.queue == queue; });
}

Health ZmqTransport::check_health(std::chrono::milliseconds timeout) {
    if (closed_.load()) return {.status = Health::Status::down, .detail = "the transport to " + where() + " is closed"};
    if (!ready_.load()) {
        // Known lost: a ping would only wait for the next session, so the answer is now.
        std::lock_guard lock(lost_mutex_);
        return {.status = Health::Status::down,
                .detail = "the session is lost: " + lost_because_ + "; " +
                          (options_.recover ? "reconnecting" : "recovery is off, so open a new transport")};
    }
    const auto started = Clock::now();
    const std::uint64_t number = next_number();
    const auto call = submit({.kind = Outgoing::Kind::request, .number = number, .frame = wire::encode_ping(number)});
    const auto result = call->wait_until(started + timeout);
    if (!result || result->outcome != Call::Outcome::replied)
        return {.status = Health::Status::down,
                .detail = result ? result->text
                                 : where() + " did not answer within " + std::to_string(timeout.count()) + " ms"};
    const auto round_trip = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
    std::string trouble;
    try {
        trouble = wire::read_ping_reply(wire::Frame::parse(result->frame));
    } catch (const wire::ProtocolError& error) {
        trouble = std::string("its answer to a ping could not be read: ") + error.what();
    }
    if (!trouble.empty())
        return {.status = Health::Status::down, .detail = where() + ": " + trouble, .round_trip = round_trip};
    return {.round_trip = round_trip};
}

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
    {
        std::lock_guard lock(queue_mutex_);
        if (closed_.exchange(true)) return;
    }
    wake_.signal();
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(consumers_mutex_);
    for (const auto& consumer : consumers_) {
        std::lock_guard delivering(consumer->delivering);
        consumer->stopped = true;
    }
    consumers_.clear();
}

void ZmqTransport::ack(std::uint64_t delivery_tag) { settle(delivery_tag, std::nullopt); }
void ZmqTransport::nack(std::uint64_t delivery_tag, bool requeue) { settle(delivery_tag, requeue); }

void ZmqTransport::settle(std::uint64_t delivery_tag, std::optional<bool> nack_requeue) {
    const std::uint64_t generation = delivery_tag >> generation_shift;
    // A delivery of an earlier session went back to its queue when that session ended.
    if (generation != generation_.load() || closed_.load()) return;
    submit({.kind = Outgoing::Kind::settle,
            .frame = wire::encode_settle(delivery_tag & tag_mask, nack_requeue),
            .generation = generation});
}

// ---- the I/O thread ---------------------------------------------------------------------

void ZmqTransport::event(ConnectionEvent::Kind kind, std::string detail, int attempt) {
    log(kind == ConnectionEvent::Kind::recovered ? LogLevel::info : LogLevel::warning,
        "zmq transport to " + redacted_url(url_) + ": " + std::string(to_string(kind)) + ": " + detail);
    if (!options_.on_event) return;
    try {
        options_.on_event({kind, std::move(detail), attempt});
    } catch (const std::exception& error) {
        log(LogLevel::error, std::string("zmq transport: on_event threw: ") + error.what());
    }
}

void ZmqTransport::run() {
    bool first = true;
    int attempt = 0;
    auto delay = options_.first_recovery_delay;
    while (!closed_.load()) {
        const auto deadline =
            Clock::now() + (first ? options_.connect_timeout : broker_heartbeat_ * options_.missed_heartbeats);
        if (start_session(deadline, first)) {
            if (first) {
                std::lock_guard lock(open_mutex_);
                opened_ = true;
                open_cv_.notify_all();
            } else {
                event(ConnectionEvent::Kind::recovered, "a new session with " + where(), attempt);
            }
            first = false;
            attempt = 0;
            delay = options_.first_recovery_delay;
            serve_session();
            if (closed_.load()) break;
            event(ConnectionEvent::Kind::lost, lost_because_);
            if (!options_.recover) break;
            continue;
        }
        if (first) {
            std::lock_guard lock(open_mutex_);
            open_failure_ = refused_because_.empty() ? "acemq: no answer from " + where() + " within " +
                                                           std::to_string(options_.connect_timeout.count()) +
                                                           " ms: is an acemq-broker listening on " + endpoint_ + "?"
                                                     : refused_because_;
            open_cv_.notify_all();
            monitor_.reset();
            socket_.reset();
            return;
        }
        if (closed_.load()) break;
        ++attempt;
        event(ConnectionEvent::Kind::retrying,
              (refused_because_.empty() ? "no welcome from " + where() : refused_because_) + "; next attempt in " +
                  std::to_string(delay.count()) + " ms",
              attempt);
        // Waiting out the delay, publishes are refused as unsent; requests wait for the session.
        const auto until = Clock::now() + delay;
        while (!closed_.load() && Clock::now() < until) {
            std::vector<::zmq::pollitem_t> items{{nullptr, wake_.fd(), ZMQ_POLLIN, 0}};
            ::zmq::poll(items, std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()));
            wake_.clear();
            drain_outgoing();
        }
        delay = std::min(delay * 2, options_.max_recovery_delay);
    }
    if (ready_.load() && socket_) send_frame(*socket_, wire::encode_bare(Command::bye));
    if (ready_.load()) lose_session("the transport was closed");
    if (!first && !closed_.load()) event(ConnectionEvent::Kind::gave_up, "recovery is off");
    fail_queued(Call::Outcome::unsent, "acemq: the transport to " + where() + " is closed; open a new one");
    monitor_.reset();
    socket_.reset();
}

void ZmqTransport::open_socket() {
    monitor_.reset();
    socket_.reset();
    socket_.emplace(context_, ::zmq::socket_type::dealer);
    socket_->set(::zmq::sockopt::linger, 0);
    socket_->set(::zmq::sockopt::sndhwm, 0);
    socket_->set(::zmq::sockopt::reconnect_ivl, 100);
    if (options_.curve) {
        socket_->set(::zmq::sockopt::curve_serverkey, server_key_);
        socket_->set(::zmq::sockopt::curve_publickey, public_key_);
        socket_->set(::zmq::sockopt::curve_secretkey, secret_key_);
    }
    // The handshake's failures (a key the broker refuses) are seen only through a monitor.
    monitor_.emplace(
        context_, *socket_,
        ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL);
    socket_->connect(endpoint_);
}

void ZmqTransport::watch_handshake() {
    while (const auto event = monitor_->next()) {
        if (event->kind == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
            refused_because_ = "acemq: " + where() + " refused this client's CurveZMQ key (ZAP status " +
                               std::to_string(event->value) +
                               "): give the broker's operator this client's .pub file to add to its allowed keys";
        else
            refused_because_ = "acemq: the security handshake with " + where() +
                               " failed: do both sides use CurveZMQ, and is the broker's public key the right one?";
    }
}

bool ZmqTransport::start_session(Clock::time_point deadline, bool first) {
    refused_because_.clear();
    open_socket();
    hello_number_ = next_number();
    send_frame(*socket_, wire::encode_hello(hello_number_, options_.client_name,
                                            static_cast<std::uint32_t>(options_.heartbeat.count())));
    while (!closed_.load() && Clock::now() < deadline) {
        std::vector<::zmq::pollitem_t> items{{socket_->handle(), 0, ZMQ_POLLIN, 0},
                                             {monitor_->handle(), 0, ZMQ_POLLIN, 0},
                                             {nullptr, wake_.fd(), ZMQ_POLLIN, 0}};
        ::zmq::poll(items, std::min(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                                    std::chrono::milliseconds(100)));
        if (items[2].revents & ZMQ_POLLIN) wake_.clear();
        if (items[1].revents & ZMQ_POLLIN) watch_handshake();
        if (!refused_because_.empty() && first) return false;
        drain_outgoing();
        ::zmq::message_t message;
        while (socket_->recv(message, ::zmq::recv_flags::dontwait)) {
            const std::span bytes(static_cast<const std::byte*>(message.data()), message.size());
            try {
                const wire::Frame frame = wire::Frame::parse(bytes);
                if (frame.command() == Command::welcome) {
                    const wire::Welcome welcome = wire::read_welcome(frame);
                    if (welcome.request != hello_number_) continue;
                    broker_heartbeat_ = std::chrono::milliseconds(std::max<std::uint32_t>(welcome.heartbeat_millis, 1));
                    max_frame_bytes_.store(welcome.max_frame_bytes);
                    named_in_process_ = inproc::detail::broker_in_errors(welcome.broker_name);
                    named_here_ = "the zmq broker " + inproc::detail::in_quotes(welcome.broker_name) + " at " +
                                  redacted_url(url_);
                    // 1 to 65535, never 0 (no session), so that tags of one session are not taken for the next's.
                    generation_.store(++sessions_started_ % 0xffff + 1);
                    last_heard_ = last_sent_ = Clock::now();
                    replay();
                    ready_.store(true);
                    return true;
                }
                if (frame.command() == Command::error) {
                    const wire::ErrorFrame error = wire::read_error(frame);
                    if (error.code == wire::ErrorCode::unsupported_version) {
                        refused_because_ = "acemq: " + where() + " does not speak this client's protocol version: " +
                                           std::string(without_prefix(error.text));
                        return false;
                    }
                }
            } catch (const wire::ProtocolError& error) {
                log(LogLevel::warning, "zmq transport: an unreadable frame from " + where() + ": " + error.what());
            }
        }
    }
    return false;
}

void ZmqTransport::replay() {
    std::vector<std::shared_ptr<LocalConsumer>> consumers;
    msgpack::sbuffer declare;
    const std::uint64_t declare_number = next_number();
    {
        std::lock_guard lock(consumers_mutex_);
        declare = wire::encode_declare(declare_number, declared_.exchanges, declared_.queues, declared_.bindings);
        consumers.assign(consumers_.begin(), consumers_.end());
    }
    // Sent ahead of anything a caller queued, so the broker has the topology and the
    // consumers again before the first publish of the new session.
    Outgoing again{.kind = Outgoing::Kind::request,
                   .number = declare_number,
                   .frame = std::move(declare),
                   .call = std::make_shared<Call>()};
    send_outgoing(again);
    for (const auto& consumer : consumers) {
        {
            std::lock_guard delivering(consumer->delivering);
            if (consumer->stopped) continue;
        }
        const std::uint64_t number = next_number();
        Outgoing outgoing{
            .kind = Outgoing::Kind::consume,
            .number = number,
            .frame = wire::encode_consume(number, consumer->queue, consumer->spec.prefetch, consumer->spec.tag),
            .call = std::make_shared<Call>(),
            .consumer = consumer};
        send_outgoing(outgoing);
    }
}

void ZmqTransport::serve_session() {
    const auto tick = std::max(std::min(options_.heartbeat, broker_heartbeat_) / 4, std::chrono::milliseconds(1));
    while (!closed_.load() && ready_.load()) {
        std::vector<::zmq::pollitem_t> items{{socket_->handle(), 0, ZMQ_POLLIN, 0},
                                             {nullptr, wake_.fd(), ZMQ_POLLIN, 0}};
        ::zmq::poll(items, tick);
        if (items[1].revents & ZMQ_POLLIN) wake_.clear();
        receive_all();
        if (!ready_.load()) return;
        drain_outgoing();
        const auto now = Clock::now();
        if (now - last_heard_ > broker_heartbeat_ * options_.missed_heartbeats) {
            lose_session(where() + " sent nothing for " + std::to_string(options_.missed_heartbeats) +
                         " heartbeat intervals");
            return;
        }
        if (now - last_sent_ >= options_.heartbeat) {
            send_frame(*socket_, wire::encode_bare(Command::heartbeat));
            last_sent_ = now;
        }
    }
}

void ZmqTransport::drain_outgoing() {
    std::deque<Outgoing> taken;
    {
        std::lock_guard lock(queue_mutex_);
        if (!ready_.load()) {
            // Without a session, publishes are refused (certainly not sent) and settlements
            // dropped (their deliveries went back with the old session); requests wait.
            std::deque<Outgoing> kept;
            for (Outgoing& outgoing : queue_) {
                if (outgoing.kind == Outgoing::Kind::publish)
                    outgoing.call->fail(Call::Outcome::unsent, "the session with " + where() +
                                                                   " is lost and not yet re-established; not sent");
                else if (outgoing.kind != Outgoing::Kind::settle)
                    kept.push_back(std::move(outgoing));
            }
            queue_.swap(kept);
            return;
        }
        taken.swap(queue_);
    }
    for (Outgoing& outgoing : taken) send_outgoing(outgoing);
}

void ZmqTransport::send_outgoing(Outgoing& outgoing) {
    const std::uint64_t generation = generation_.load();
    if (outgoing.call && outgoing.call->abandoned()) return;
    switch (outgoing.kind) {
    case Outgoing::Kind::settle:
        if (outgoing.generation != generation) return;
        break;
    case Outgoing::Kind::publish: confirms_.emplace(outgoing.number, outgoing.call); break;
    case Outgoing::Kind::end_consumer: {
        const std::uint64_t server_id = outgoing.consumer->server_id;
        if (server_id == 0) {
            // Not consuming in this session (its consume failed, or it is being made again):
            // the broker holds nothing of it.
            outgoing.call->reply({});
            return;
        }
        outgoing.frame = wire::encode_consumer_request(outgoing.release ? Command::release : Command::cancel,
                                                       outgoing.number, server_id);
        if (outgoing.release) {
            by_server_id_.erase(server_id);
            outgoing.consumer->server_id = 0;
        }
        [[fallthrough]];
    }
    case Outgoing::Kind::request:
    case Outgoing::Kind::consume: {
        outgoing.call->generation = generation;
        msgpack::sbuffer frame = std::move(outgoing.frame);
        awaiting_.emplace(outgoing.number, std::move(outgoing));
        send_frame(*socket_, std::move(frame));
        last_sent_ = Clock::now();
        return;
    }
    }
    send_frame(*socket_, std::move(outgoing.frame));
    last_sent_ = Clock::now();
}

void ZmqTransport::receive_all() {
    ::zmq::message_t message;
    for (int received = 0; received < 1024 && ready_.load(); ++received) {
        if (!socket_->recv(message, ::zmq::recv_flags::dontwait)) return;
        last_heard_ = Clock::now();
        handle(std::span(static_cast<const std::byte*>(message.data()), message.size()));
    }
}

void ZmqTransport::handle(std::span<const std::byte> bytes) {
    try {
        dispatch(wire::Frame::parse(bytes), bytes);
    } catch (const wire::ProtocolError& error) {
        log(LogLevel::warning, "zmq transport: an unreadable frame from " + where() + ": " + error.what());
    }
}

void ZmqTransport::dispatch(const wire::Frame& frame, std::span<const std::byte> bytes) {
    switch (frame.command()) {
    case Command::heartbeat: return;
    case Command::confirm: {
        const auto found = confirms_.find(frame.unsigned_at(0, "sequence"));
        if (found == confirms_.end()) return;
        const std::shared_ptr<Call> call = std::move(found->second);
        confirms_.erase(found);
        try {
            PublishResult result = wire::read_confirm(frame).result;
            if (!result.return_reason.empty()) result.return_reason = as_named_here(std::move(result.return_reason));
            call->confirm(std::move(result));
        } catch (const wire::ProtocolError& error) {
            call->fail(Call::Outcome::connection, std::string("the confirm could not be read: ") + error.what());
        }
        return;
    }
    case Command::deliver: {
        wire::Deliver deliver = wire::read_deliver(frame);
        const auto found = by_server_id_.find(deliver.consumer);
        if (found == by_server_id_.end()) return;                    // released: the broker takes it back
        const std::shared_ptr<LocalConsumer> owner = found->second;  // outlives the map entry erased below
        LocalConsumer& consumer = *owner;
        const std::uint64_t tag = (generation_.load() << generation_shift) | deliver.delivery_tag;
        std::lock_guard lock(consumer.delivering);
        if (consumer.released) {
            // Released while the session was being made, after it was consumed again: the
            // broker takes this delivery back with the consumer.
            send_frame(*socket_, wire::encode_consumer_request(Command::release, next_number(), deliver.consumer));
            consumer.server_id = 0;
            by_server_id_.erase(found);
            return;
        }
        if (consumer.stopped) {
            // Stopped here before the broker heard of it: back to the queue for someone else.
            send_frame(*socket_, wire::encode_settle(deliver.delivery_tag, true));
            return;
        }
        try {
            consumer.deliver(Delivery(std::move(deliver.message), *this, tag));
        } catch (const std::exception& error) {
            consumer.stopped = true;
            log(LogLevel::error, "zmq transport: a DeliverFn for \"" + consumer.queue +
                                     "\" threw, so it gets no more deliveries: " + error.what());
        }
        return;
    }
    case Command::reply:
    case Command::failure: {
        const auto found = awaiting_.find(frame.unsigned_at(0, "request"));
        if (found == awaiting_.end()) return;
        Outgoing outgoing = std::move(found->second);
        awaiting_.erase(found);
        if (frame.command() == Command::failure) {
            const wire::Failure failure = wire::read_failure(frame);
            if (outgoing.kind == Outgoing::Kind::consume && !outgoing.call->abandoned() &&
                outgoing.call.use_count() == 1)
                log(LogLevel::error, "zmq transport: consuming \"" + outgoing.consumer->queue +
                                         "\" again after a reconnect failed: " + failure.text);
            outgoing.call->fail(Call::Outcome::failed, as_named_here(failure.text), failure.kind);
            return;
        }
        if (outgoing.kind == Outgoing::Kind::consume) {
            const std::uint64_t server_id = frame.unsigned_at(1, "consumer");
            outgoing.consumer->server_id = server_id;
            by_server_id_[server_id] = outgoing.consumer;
        }
        outgoing.call->reply(copy_of(bytes));
        return;
    }
    case Command::error: {
        const wire::ErrorFrame error = wire::read_error(frame);
        if (error.code == wire::ErrorCode::no_session) {
            lose_session(where() + " no longer knows this session (it restarted, or it timed the session out)");
            return;
        }
        log(LogLevel::warning, "zmq transport: " + where() + " refused a frame: " + error.text);
        const auto found = awaiting_.find(error.request);
        if (error.request == 0 || found == awaiting_.end()) return;
        found->second.call->fail(Call::Outcome::failed, as_named_here(error.text));
        awaiting_.erase(found);
        return;
    }
    default:
        log(LogLevel::warning, "zmq transport: " + where() + " sent " + std::string(to_string(frame.command())) +
                                   ", which a client does not take");
    }
}

void ZmqTransport::lose_session(std::string why) {
    {
        std::lock_guard lock(lost_mutex_);
        lost_because_ = why;
    }
    ready_.store(false);
    generation_.store(0);
    const std::string text = "acemq: the session with " + where() + " was lost before it answered (" + why + ")";
    for (auto& [number, outgoing] : awaiting_) outgoing.call->fail(Call::Outcome::connection, text);
    awaiting_.clear();
    for (auto& [sequence, call] : confirms_)
        call->fail(Call::Outcome::connection, "the session with " + where() + " was lost before the confirm came (" +
                                                  why + "): the message may or may not have arrived");
    confirms_.clear();
    for (auto& [server_id, consumer] : by_server_id_) consumer->server_id = 0;
    by_server_id_.clear();
    monitor_.reset();
    socket_.reset();
}

void ZmqTransport::fail_queued(Call::Outcome outcome, const std::string& why) {
    std::deque<Outgoing> taken;
    {
        std::lock_guard lock(queue_mutex_);
        taken.swap(queue_);
    }
    for (Outgoing& outgoing : taken)
        if (outgoing.call) outgoing.call->fail(outcome, why);
}

std::shared_ptr<Transport> open(std::string_view url, Options options) {
    return std::make_shared<ZmqTransport>(std::string(url), endpoint_of_url(url), std::move(options));
}

}  // namespace acemq::zmq
