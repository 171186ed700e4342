// Publishes, from the caller to the wire: what cannot be encoded or may not be sent now is
// answered at once; the rest takes slots in the window, is written (by the caller itself
// when the connection is free, else by the I/O thread) and waits for its confirm.

#include <poll.h>

#include <algorithm>

#include "amqp/channels.hpp"
#include "amqp/transport_impl.hpp"
#include "amqp/wire.hpp"

namespace acemq::amqp {

std::vector<PublishResult> AmqpTransport::Impl::publish(std::vector<OutboundMessage> messages) {
    std::vector<PublishResult> results(messages.size());
    // What rabbitmq-c cannot encode is refused here, written never: half a publish on
    // the wire would cost the connection and every delivery in flight on it.
    std::vector<std::size_t> sendable;
    sendable.reserve(messages.size());
    for (std::size_t i = 0; i < messages.size(); ++i) {
        std::string refusal = encoding_refusal(messages[i], frame_max_.load());
        if (refusal.empty())
            sendable.push_back(i);
        else
            results[i] =
                PublishResult{.return_reason = std::move(refusal), .why = PublishResult::Unconfirmed::too_large};
    }
    Chunk pending;
    pending.reserve(sendable.size());
    std::size_t next = 0;
    while (next < sendable.size()) {
        if (const BlockedState state = blocked(); state.blocked) {
            for (; next < sendable.size(); ++next)
                results[sendable[next]] =
                    PublishResult{.return_reason = state.reason, .why = PublishResult::Unconfirmed::paused};
            break;
        }
        const std::size_t granted = window_.take(sendable.size() - next);
        if (granted == 0) {
            const std::string why = window_.full_reason();
            for (; next < sendable.size(); ++next)
                results[sendable[next]] = PublishResult{.return_reason = why, .why = PublishResult::Unconfirmed::lost};
            break;
        }
        Chunk chunk;
        chunk.reserve(granted);
        for (std::size_t i = 0; i < granted; ++i) {
            auto one = std::make_shared<PendingPublish>();
            one->message = std::move(messages[sendable[next + i]]);
            chunk.push_back(one);
            pending.push_back(std::move(one));
        }
        next += granted;
        if (sendable.size() == 1 && publish_directly(chunk, Clock::now() + session_.confirm_timeout)) break;
        post([this, chunk = std::move(chunk)](Connection* connection) mutable { write_publishes(connection, chunk); });
    }
    const auto deadline = Clock::now() + session_.confirm_timeout;
    for (std::size_t i = 0; i < pending.size(); ++i) {
        std::optional<PublishResult> result = pending[i]->answer.wait_until(deadline);
        if (!result) {
            result = PublishResult{
                .return_reason = "no confirm within " + std::to_string(session_.confirm_timeout.count()) + " ms",
                .why = PublishResult::Unconfirmed::lost};
        }
        results[sendable[i]] = std::move(*result);
    }
    return results;
}

// One publish written, and its confirm read, on the caller's own thread when nobody else
// is using the connection: the hand-over to the I/O thread and back costs more than the
// write itself (two thread wake-ups against one). False when the connection is busy or
// down; then the I/O thread takes it. Deliveries that arrive meanwhile are handed to
// their DeliverFn on this thread.
bool AmqpTransport::Impl::publish_directly(Chunk& chunk, Clock::time_point deadline) {
    std::unique_lock io(io_mutex_, std::try_to_lock);
    if (!io.owns_lock() || !connection_) return false;
    try {
        write_publishes(connection_.get(), chunk);
        PendingPublish& pending = *chunk.front();
        while (connection_ && !pending.answer.ready()) {
            pump_frames();
            if (!connection_ || pending.answer.ready()) break;
            if (connection_->has_buffered_input()) continue;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) break;
            pollfd fds[2] = {{connection_->socket_fd(), POLLIN, 0}, {commands_.wake_fd(), POLLIN, 0}};
            ::poll(fds, 2, static_cast<int>(std::min<std::int64_t>(left.count() + 1, 1000)));
            // Work is waiting for the connection: hand it back to the I/O thread, which
            // reads this confirm too (it watches the socket while publishes are unconfirmed).
            if (fds[1].revents != 0) break;
        }
    } catch (const std::exception& lost) {
        drop_connection(lost.what(), true);
    }
    return true;
}

void AmqpTransport::Impl::write_publishes(Connection* connection, Chunk& chunk) {
    if (connection == nullptr) {
        for (auto& pending : chunk)
            pending->answer.set(PublishResult{.return_reason = "the AMQP transport is closed",
                                              .why = PublishResult::Unconfirmed::unsent});
        window_.give_back(chunk.size());
        return;
    }
    for (std::size_t i = 0; i < chunk.size(); ++i) {
        auto& pending = chunk[i];
        if (pending->answer.abandoned()) {
            window_.give_back(1);
            continue;
        }
        confirms_.track(pending);
        try {
            connection->publish(publish_channel, pending->message);
        } catch (const ConnectionLost&) {
            // Those not written yet are certainly not sent; the rest fail with the connection.
            for (std::size_t rest = i + 1; rest < chunk.size(); ++rest)
                chunk[rest]->answer.set(PublishResult{.return_reason = "the connection was lost before its turn",
                                                      .why = PublishResult::Unconfirmed::unsent});
            window_.give_back(chunk.size() - i - 1);
            throw;
        }
    }
}

}  // namespace acemq::amqp
