#include "amqp/subscriptions.hpp"

#include <algorithm>

#include "amqp/connection.hpp"
#include "amqp/wire.hpp"
#include "session/delivery_tags.hpp"

namespace acemq::amqp {

void Settler::settle(std::uint64_t delivery_tag, bool ack, bool requeue) {
    link_.write_soon([this, delivery_tag, ack, requeue](Connection& connection, std::uint64_t generation) {
        // A settlement for another connection's delivery, or after the channel closed: the
        // broker gave that message back already, so nothing is settled.
        const amqp_channel_t channel = subscription_ ? subscription_->channel : fixed_channel_;
        if (session::generation_of(delivery_tag) != generation || channel == 0) return;
        if (ack)
            connection.ack(channel, session::broker_tag_of(delivery_tag));
        else
            connection.nack(channel, session::broker_tag_of(delivery_tag), requeue);
    });
}

void Subscriptions::add(Connection& connection, std::shared_ptr<SubscriptionState> state) {
    settlers_.push_back(std::make_unique<Settler>(link_, state));
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
    if (connection != nullptr && state->channel != 0) connection->close_channel(state->channel);
    release(*state);
    states_.erase(std::remove(states_.begin(), states_.end(), state), states_.end());
    state->deliver = {};  // its settler keeps the state; not what the callback holds
}

void Subscriptions::deliver(Connection& connection, Incoming delivery, std::uint64_t generation) {
    for (auto& state : states_) {
        if (state->channel != delivery.channel) continue;
        if (state->stopped) {
            // Sent before the broker saw our basic.cancel: straight back to the queue.
            connection.give_back(delivery.channel, delivery.broker_tag);
            return;
        }
        state->deliver(
            Delivery(std::move(delivery.message), *state->settler, session::tag_for(generation, delivery.broker_tag)));
        return;
    }
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
}

void Subscriptions::release(SubscriptionState& state) {
    incoming_.drop(state.channel);
    if (state.channel != 0) channels_.give_back(state.channel);
    state.channel = 0;
}

}  // namespace acemq::amqp
