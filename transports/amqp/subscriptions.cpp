#include "amqp/subscriptions.hpp"

#include <algorithm>

#include <acemq/naming.hpp>

#include "amqp/connection.hpp"
#include "amqp/wire.hpp"
#include "session/delivery_tags.hpp"

namespace acemq::amqp {

void Settler::settle(std::uint64_t delivery_tag, Outcome outcome) {
    link_.write_soon([this, delivery_tag, outcome](Connection& connection, std::uint64_t generation) {
        // A settlement for another connection's delivery: the broker gave that message back
        // already, so nothing is settled.
        if (session::generation_of(delivery_tag) != generation) return;
        connection.settle(channel_, {.outcome = outcome, .broker_tag = session::broker_tag_of(delivery_tag)});
    });
}

void ConsumerSettler::add(std::uint64_t delivery_tag, Outcome outcome) {
    bool first = false;
    {
        std::lock_guard lock(mutex_);
        if (closed_) return;
        first = waiting_.empty();
        waiting_.push_back({.broker_tag = delivery_tag, .outcome = outcome});
    }
    // The thread takes everything waiting once awake: only the first of a burst wakes it.
    if (first) link_.wake();
}

std::vector<Settlement> ConsumerSettler::take(std::uint64_t generation) {
    std::vector<Settlement> taken;
    {
        std::lock_guard lock(mutex_);
        taken.swap(waiting_);
    }
    std::erase_if(taken, [generation](const Settlement& settlement) {
        return session::generation_of(settlement.broker_tag) != generation;
    });
    for (Settlement& settlement : taken) settlement.broker_tag = session::broker_tag_of(settlement.broker_tag);
    return taken;
}

void ConsumerSettler::close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    waiting_.clear();
}

void Subscriptions::add(Connection& connection, std::shared_ptr<SubscriptionState> state) {
    settlers_.push_back(std::make_unique<ConsumerSettler>(link_));
    state->settler = settlers_.back().get();
    start_consuming(connection, *state);
    states_.push_back(std::move(state));
}

void Subscriptions::stop(Connection* connection, SubscriptionState& state) {
    state.stopped = true;
    if (connection == nullptr || state.channel == 0) return;
    try {
        connection->cancel(state.channel, state.spec.tag);
    } catch (const ChannelClosed&) {
        release(state);
    }
}

void Subscriptions::close(Connection* connection, const std::shared_ptr<SubscriptionState>& state) {
    if (connection != nullptr && state->channel != 0) {
        // Settled before the close: written ahead of it, or the broker would hand them out again.
        try {
            settle_waiting(*connection, *state);
        } catch (const ConnectionLost&) {
            // The broker gives back all the channel held; the I/O loop meets the loss at its
            // next read. A close that threw would reach ~Consumer, which cannot throw.
        }
        connection->close_channel(state->channel);
    }
    state->settler->close();
    release(*state);
    states_.erase(std::remove(states_.begin(), states_.end(), state), states_.end());
    state->deliver = {};  // its settler keeps the state; not what the callback holds
}

void Subscriptions::deliver(Connection& connection, Incoming delivery) {
    for (auto& state : states_) {
        if (state->channel != delivery.channel) continue;
        if (state->stopped) {
            // Sent before the broker saw our basic.cancel: straight back to the queue. A
            // stream keeps every message whatever its readers do and takes no nack (RabbitMQ
            // closes the connection, 540), so there the ack only returns the credit.
            if (state->spec.arguments.contains(argument::stream_offset))
                connection.settle(delivery.channel, {.outcome = Outcome::ack, .broker_tag = delivery.broker_tag});
            else
                connection.give_back(delivery.channel, delivery.broker_tag);
            return;
        }
        state->open.delivered(delivery.broker_tag);
        state->deliver(Delivery(std::move(delivery.message), *state->settler,
                                session::tag_for(state->generation, delivery.broker_tag)));
        return;
    }
}

void Subscriptions::settle_waiting(Connection& connection) {
    for (auto& state : states_) settle_waiting(connection, *state);
}

void Subscriptions::settle_waiting(Connection& connection, SubscriptionState& state) {
    std::vector<Settlement> waiting = state.settler->take(state.generation);
    if (waiting.empty() || state.channel == 0) return;
    for (const SettlementFrame& frame : state.open.settle(std::move(waiting))) connection.settle(state.channel, frame);
}

void Subscriptions::cancelled_by_broker(amqp_channel_t channel) {
    for (auto& state : states_)
        if (state->channel == channel) state->cancelled_by_broker = true;
}

void Subscriptions::channel_closed(amqp_channel_t channel) {
    for (auto& state : states_)
        if (state->channel == channel) release(*state);
}

void Subscriptions::on_new_connection() {
    channels_.reset();
    for (auto& state : states_) state->channel = 0;
}

void Subscriptions::release_all() {
    for (auto& state : states_) release(*state);
}

void Subscriptions::resume(Connection& connection) {
    for (auto& state : states_) {
        if (state->channel != 0 || state->stopped || state->cancelled_by_broker) continue;
        try {
            start_consuming(connection, *state);
        } catch (const TopologyError&) {
            // Retried later; the others go on.
        }
    }
}

std::vector<std::string> Subscriptions::stopped_queues() const {
    std::vector<std::string> stopped;
    for (const auto& state : states_)
        if (!state->stopped && (state->cancelled_by_broker || state->channel == 0)) stopped.push_back(state->queue);
    return stopped;
}

void Subscriptions::start_consuming(Connection& connection, SubscriptionState& state) {
    const amqp_channel_t channel = channels_.take();
    const std::string what = "consume from queue " + in_quotes(state.queue);
    try {
        connection.open_channel(channel);
        connection.set_prefetch(channel, state.spec.prefetch, what);
        connection.consume(channel, state.queue, state.spec, what);
    } catch (const ChannelClosed& closed) {
        channels_.give_back(channel);
        throw TopologyError(closed.what());
    }
    state.channel = channel;
    state.generation = generations_.next();
    state.open = OpenDeliveries();
}

void Subscriptions::release(SubscriptionState& state) {
    incoming_.drop(state.channel);
    if (state.channel != 0) channels_.give_back(state.channel);
    state.channel = 0;
}

}  // namespace acemq::amqp
