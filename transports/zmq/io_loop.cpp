// The I/O thread: sessions one after another (a new one when one is lost, while recovery is
// on), and within one, what callers handed it, what the broker sends, and heartbeats.
#include "zmq/zmq_transport.hpp"

#include <acemq/log.hpp>

namespace acemq::zmq {

namespace {

using wire::Command;

std::vector<std::byte> copy_of(std::span<const std::byte> bytes) { return {bytes.begin(), bytes.end()}; }

}  // namespace

void ZmqTransport::run() {
    bool first = true;
    int attempt = 0;
    while (!closed_.load()) {
        const auto deadline =
            Clock::now() + (first ? session_.connect_timeout : broker_heartbeat_ * options_.missed_heartbeats);
        if (start_session(deadline, first)) {
            if (first) {
                std::lock_guard lock(open_mutex_);
                opened_ = true;
                open_cv_.notify_all();
            } else {
                events_.emit(ConnectionEvent::Kind::recovered, "a new session with " + where(), attempt);
            }
            first = false;
            attempt = 0;
            backoff_.reset();
            serve_session();
            if (closed_.load()) break;
            events_.emit(ConnectionEvent::Kind::lost, lost_because_);
            if (!session_.recover) break;
            continue;
        }
        if (first) {
            std::lock_guard lock(open_mutex_);
            open_key_refused_ = key_refused_;
            open_failure_ = refused_because_.empty() ? "acemq: no answer from " + where() + " within " +
                                                           std::to_string(session_.connect_timeout.count()) +
                                                           " ms: is an acemq-broker listening on " + endpoint_ + "?"
                                                     : refused_because_;
            open_cv_.notify_all();
            monitor_.reset();
            socket_.reset();
            return;
        }
        if (closed_.load()) break;
        ++attempt;
        const auto delay = backoff_.next();
        events_.emit(ConnectionEvent::Kind::retrying,
                     (refused_because_.empty() ? "no welcome from " + where() : refused_because_) +
                         "; next attempt in " + std::to_string(delay.count()) + " ms",
                     attempt);
        // Waiting out the delay, publishes are refused as unsent; requests wait for the session.
        const auto until = Clock::now() + delay;
        while (!closed_.load() && Clock::now() < until) {
            queue_.wait(-1, std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()));
            drain_outgoing();
        }
    }
    if (ready_.load() && socket_) say_goodbye();
    if (ready_.load()) lose_session("the transport was closed");
    if (!first && !closed_.load()) events_.emit(ConnectionEvent::Kind::gave_up, "recovery is off");
    fail_queued(closed_text());
    monitor_.reset();
    socket_.reset();
}

void ZmqTransport::serve_session() {
    const auto tick = std::max(std::min(session_.heartbeat, broker_heartbeat_) / 4, std::chrono::milliseconds(1));
    while (!closed_.load() && ready_.load()) {
        std::vector<::zmq::pollitem_t> items{{socket_->handle(), 0, ZMQ_POLLIN, 0},
                                             {nullptr, queue_.wake_fd(), ZMQ_POLLIN, 0}};
        ::zmq::poll(items, tick);
        if (items[1].revents & ZMQ_POLLIN) queue_.clear_wake();
        receive_all();
        if (!ready_.load()) return;
        drain_outgoing();
        const auto now = Clock::now();
        if (now - last_heard_ > broker_heartbeat_ * options_.missed_heartbeats) {
            lose_session(where() + " sent nothing for " + std::to_string(options_.missed_heartbeats) +
                         " heartbeat intervals");
            return;
        }
        if (now - last_sent_ >= session_.heartbeat) {
            send_frame(*socket_, wire::encode_bare(Command::heartbeat));
            last_sent_ = now;
        }
    }
}

void ZmqTransport::say_goodbye() {
    // Settlements made before close() go first, so their deliveries are not redelivered.
    std::deque<Outgoing> taken = queue_.take_all();
    std::deque<Outgoing> kept;
    for (Outgoing& outgoing : taken) {
        if (outgoing.kind == Outgoing::Kind::settle)
            send_outgoing(outgoing);
        else
            kept.push_back(std::move(outgoing));
    }
    queue_.put_back(kept);
    send_batched(wire::encode_bare(Command::bye), false);
    // With no linger the socket's close may drop the bye unsent, and the broker would end the
    // session as unreachable; a broker gone away costs close() at most this long.
    socket_->set(::zmq::sockopt::linger, static_cast<int>(goodbye_linger.count()));
}

void ZmqTransport::drain_outgoing() {
    std::deque<Outgoing> taken = queue_.take_all();
    if (!ready_.load()) {
        // Without a session, publishes are refused (certainly not sent) and settlements
        // dropped (their deliveries went back with the old session); requests wait.
        std::deque<Outgoing> kept;
        for (Outgoing& outgoing : taken) {
            if (outgoing.kind == Outgoing::Kind::publish)
                outgoing.confirm->set(PublishResult{
                    .return_reason = "the session with " + where() + " is lost and not yet re-established; not sent",
                    .why = PublishResult::Unconfirmed::unsent});
            else if (outgoing.kind != Outgoing::Kind::settle)
                kept.push_back(std::move(outgoing));
        }
        queue_.put_back(kept);
        return;
    }
    std::size_t batchable_bytes = 0;
    for (const Outgoing& outgoing : taken)
        if (outgoing.batchable) batchable_bytes += outgoing.frame.size();
    outbox_.expect(batchable_bytes);
    for (Outgoing& outgoing : taken) send_outgoing(outgoing);
    flush_outbox();
}

void ZmqTransport::send_batched(msgpack::sbuffer frame, bool batchable) {
    if (!broker_batches_ || !batchable) {
        flush_outbox();
        send_frame(*socket_, std::move(frame));
    } else {
        if (!outbox_.fits(frame.size())) flush_outbox();
        if (std::optional<msgpack::sbuffer> before = outbox_.add(std::move(frame)))
            send_frame(*socket_, std::move(*before));
    }
    last_sent_ = Clock::now();
}

void ZmqTransport::flush_outbox() {
    if (!outbox_.empty()) send_frame(*socket_, outbox_.take());
}

void ZmqTransport::send_outgoing(Outgoing& outgoing) {
    if (outgoing.abandoned()) return;
    if (outgoing.kind == Outgoing::Kind::consume && !outgoing.consumer->spec.arguments.empty() &&
        !broker_takes_arguments_) {
        std::string names;
        for (const auto& [name, value] : outgoing.consumer->spec.arguments) names += (names.empty() ? "" : ", ") + name;
        const std::string text = "acemq: cannot consume \"" + outgoing.consumer->queue +
                                 "\" with consumer arguments (" + names + ") from " + where() +
                                 ": that broker predates them and would ignore them, starting a stream read in the "
                                 "wrong place; upgrade the broker";
        if (outgoing.reply.use_count() == 1) log(LogLevel::error, "zmq", "zmq transport: " + text);  // a replay
        outgoing.reply->fail(session::FailureKind::usage, text);
        return;
    }
    switch (outgoing.kind) {
    case Outgoing::Kind::settle:
        if (outgoing.generation != generation_.load()) return;
        break;
    case Outgoing::Kind::publish: confirms_.emplace(outgoing.number, outgoing.confirm); break;
    case Outgoing::Kind::end_consumer: {
        const std::uint64_t server_id = outgoing.consumer->server_id;
        if (server_id == 0) {
            // Not consuming in this session (its consume failed, or it is being made again):
            // the broker holds nothing of it.
            outgoing.reply->set(Reply{});
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
        msgpack::sbuffer frame = std::move(outgoing.frame);
        awaiting_.emplace(outgoing.number, std::move(outgoing));
        send_batched(std::move(frame), false);
        return;
    }
    }
    send_batched(std::move(outgoing.frame), outgoing.batchable);
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
        log(LogLevel::warning, "zmq", "zmq transport: an unreadable frame from " + where() + ": " + error.what());
    }
}

void ZmqTransport::dispatch(const wire::Frame& frame, std::span<const std::byte> bytes) {
    switch (frame.command()) {
    case Command::heartbeat: return;
    case Command::confirm: {
        const auto found = confirms_.find(frame.unsigned_at(0, "sequence"));
        if (found == confirms_.end()) return;
        const std::shared_ptr<ConfirmAnswer> confirm = std::move(found->second);
        confirms_.erase(found);
        try {
            PublishResult result = wire::read_confirm(frame).result;
            if (!result.return_reason.empty()) result.return_reason = as_named_here(std::move(result.return_reason));
            confirm->set(std::move(result));
        } catch (const wire::ProtocolError& error) {
            confirm->set(PublishResult{.return_reason = std::string("the confirm could not be read: ") + error.what(),
                                       .why = PublishResult::Unconfirmed::lost});
        }
        return;
    }
    case Command::deliver: deliver(wire::read_deliver(frame)); return;
    case Command::batch: {
        const msgpack::object_array& entries = wire::batch_entries(frame);
        for (std::size_t index = 0; index < entries.size && ready_.load(); ++index) {
            try {
                dispatch(wire::Frame::entry(entries, index), {});
            } catch (const wire::ProtocolError& error) {
                log(LogLevel::warning, "zmq",
                    "zmq transport: an unreadable frame from " + where() + ": " +
                        wire::in_entry(error.what(), index, entries.size));
            }
        }
        return;
    }
    case Command::reply:
    case Command::failure:
    case Command::refusal: answer(frame, bytes); return;
    case Command::error: {
        const wire::ErrorFrame error = wire::read_error(frame);
        if (error.code == wire::ErrorCode::no_session) {
            lose_session(where() + " no longer knows this session (it restarted, or it timed the session out)");
            return;
        }
        log(LogLevel::warning, "zmq", "zmq transport: " + where() + " refused a frame: " + error.text);
        const auto found = awaiting_.find(error.request);
        if (error.request == 0 || found == awaiting_.end()) return;
        found->second.reply->fail(session::FailureKind::error, as_named_here(error.text));
        awaiting_.erase(found);
        return;
    }
    default:
        log(LogLevel::warning, "zmq",
            "zmq transport: " + where() + " sent " + std::string(to_string(frame.command())) +
                ", which a client does not take");
    }
}

void ZmqTransport::deliver(wire::Deliver deliver) {
    const auto found = by_server_id_.find(deliver.consumer);
    if (found == by_server_id_.end()) return;                    // released: the broker takes it back
    const std::shared_ptr<LocalConsumer> owner = found->second;  // outlives the map entry erased below
    LocalConsumer& consumer = *owner;
    const std::uint64_t tag = session::tag_for(generation_.load(), deliver.delivery_tag);
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
        log(LogLevel::error, "zmq",
            "zmq transport: a DeliverFn for \"" + consumer.queue +
                "\" threw, so it gets no more deliveries: " + error.what());
    }
}

void ZmqTransport::answer(const wire::Frame& frame, std::span<const std::byte> bytes) {
    const auto found = awaiting_.find(frame.unsigned_at(0, "request"));
    if (found == awaiting_.end()) return;
    Outgoing outgoing = std::move(found->second);
    awaiting_.erase(found);
    if (frame.command() == Command::failure) {
        const wire::Failure failure = wire::read_failure(frame);
        if (outgoing.kind == Outgoing::Kind::consume && !outgoing.reply->abandoned() && outgoing.reply.use_count() == 1)
            log(LogLevel::error, "zmq",
                "zmq transport: consuming \"" + outgoing.consumer->queue +
                    "\" again after a reconnect failed: " + failure.text);
        outgoing.reply->fail(failure.kind, as_named_here(failure.text));
        return;
    }
    if (frame.command() == Command::refusal) {
        wire::Refusal refusal = wire::read_refusal(frame);
        refusal.text = as_named_here(std::move(refusal.text));
        outgoing.reply->set(Reply{.frame = {}, .generation = generation_.load(), .refusal = std::move(refusal)});
        return;
    }
    if (outgoing.kind == Outgoing::Kind::consume) {
        const std::uint64_t server_id = frame.unsigned_at(1, "consumer");
        outgoing.consumer->server_id = server_id;
        by_server_id_[server_id] = outgoing.consumer;
    }
    outgoing.reply->set(Reply{copy_of(bytes), generation_.load()});
}

}  // namespace acemq::zmq
