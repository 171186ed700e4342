// The I/O thread: runs what callers handed it, reads what the broker sends, consumes again
// where it must, and sleeps until any of that is due; with the connection down, recovers it.

#include <algorithm>

#include "amqp/transport_impl.hpp"

namespace acemq::amqp {

void AmqpTransport::Impl::post(Command work) {
    if (commands_.push(work)) return;
    std::lock_guard io(io_mutex_);  // after the queue's lock, never inside it (lock order)
    work(nullptr);
}

void AmqpTransport::Impl::run() {
    int attempt = 0;
    while (!commands_.is_shut()) {
        std::unique_lock io(io_mutex_);
        if (!connection_) {
            if (!session_.recover) {
                io.unlock();
                fail_queued_commands();
                commands_.wait(-1, std::chrono::milliseconds(500));
                continue;
            }
            const auto now = Clock::now();
            if (now < next_attempt_) {
                io.unlock();
                commands_.wait(-1, std::chrono::duration_cast<std::chrono::milliseconds>(next_attempt_ - now));
                continue;
            }
            if (recover(++attempt)) attempt = 0;
            continue;
        }
        int socket = -1;
        try {
            run_commands();
            pump_frames();
            if (connection_) subscriptions_.settle_waiting(*connection_);
            if (connection_ && Clock::now() >= next_resume_) resume_subscriptions();
            if (!connection_) continue;
            if (connection_->has_buffered_input()) continue;
            // The socket is watched only when something is expected on it that nobody else
            // reads: deliveries, or confirms of publishes whose callers wait on us. Otherwise
            // a publisher reading its own confirm would wake this thread for nothing; what
            // the broker says unasked (blocked, a close) is read at the next tick.
            if (!subscriptions_.empty() || !confirms_.empty()) socket = connection_->socket_fd();
        } catch (const std::exception& lost) {
            // ConnectionLost, or a failure half-way through re-opening a channel the
            // broker closed: either way the connection is not in a state to go on with.
            drop_connection(lost.what(), true);
            continue;
        }
        io.unlock();
        if (commands_.empty()) commands_.wait(socket, tick());
    }
    std::lock_guard io(io_mutex_);
    if (connection_) {
        // What callers posted before close() (an ack, a nack) still goes out ahead of the
        // channel's close: a settlement made just before closing must not be dropped unsent,
        // which would hand the message out again.
        try {
            run_commands();
            subscriptions_.settle_waiting(*connection_);
        } catch (const ConnectionLost&) {
            // The connection went while flushing; shut_down fails what is left to its callers.
        }
        subscriptions_.release_all();
        confirms_.fail_all("the transport was closed before the broker confirmed it");
        connection_->close();
    }
    if (attempt > 0) events_.emit(ConnectionEvent::Kind::gave_up, address_.printable(), attempt);
}

// How long the I/O thread sleeps at most: often enough to send heartbeats in time and to
// notice what the broker says unasked.
std::chrono::milliseconds AmqpTransport::Impl::tick() const {
    const auto heartbeat = session_.heartbeat;
    return heartbeat.count() > 0 ? std::min(heartbeat / 4, std::chrono::milliseconds(1000))
                                 : std::chrono::milliseconds(1000);
}

void AmqpTransport::Impl::run_commands() {
    std::deque<Command> batch = commands_.take_all();
    while (!batch.empty() && connection_) {
        auto work = std::move(batch.front());
        batch.pop_front();
        try {
            work(connection_.get());
        } catch (const ConnectionLost&) {
            // Put back what has not run: it runs on the next connection.
            commands_.put_back(batch);
            throw;
        } catch (const Error&) {
            // The work's own failure went to its caller through its Answer.
        }
    }
    if (!batch.empty()) commands_.put_back(batch);
}

void AmqpTransport::Impl::fail_queued_commands() {
    std::deque<Command> batch = commands_.take_all();
    std::lock_guard io(io_mutex_);
    for (auto& work : batch) {
        try {
            work(nullptr);
        } catch (const Error&) {
            // Each command reports to its own caller; nothing more to do here.
        }
    }
}

}  // namespace acemq::amqp
