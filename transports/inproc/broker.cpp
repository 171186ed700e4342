#include <acemq/inproc.hpp>

#include <algorithm>

#include <acemq/error.hpp>
#include "inproc/broker_impl.hpp"
#include "inproc/quoted.hpp"
#include "inproc/reentry.hpp"
#include "inproc/registry.hpp"

namespace acemq::inproc {

using detail::Consumer;
using detail::Queue;
using detail::quoted;
using detail::Registry;

std::shared_ptr<Broker> broker(std::string_view name, std::shared_ptr<Clock> clock) {
    const std::shared_ptr<Broker> found = Registry::instance().find_or_add(name, [&] {
        return std::make_shared<Broker>(Broker::Key{}, std::string(name), clock ? clock : system_clock());
    });
    if (clock && clock != found->clock())
        throw InvalidArgument("acemq: inproc broker " + quoted(name) +
                              " already exists with another clock; pass no clock to share it, or use another name");
    return found;
}

Broker::Broker(Key, std::string name, std::shared_ptr<Clock> clock)
    : impl_(std::make_unique<Impl>(*this, std::move(name), std::move(clock))) {}

Broker::~Broker() {
    Registry::instance().forget(impl_->name());
    impl_.reset();
}

const std::string& Broker::name() const noexcept { return impl_->name(); }
const std::shared_ptr<Clock>& Broker::clock() const noexcept { return impl_->clock(); }
Broker::ConnectionId Broker::open_connection() { return impl_->open_connection(); }
void Broker::close_connection(ConnectionId connection) { impl_->close_connection(connection); }
void Broker::declare(ConnectionId connection, const Topology& topology) { impl_->declare(connection, topology); }
void Broker::declare_exchange(const ExchangeDeclaration& exchange) { impl_->declare_exchange(exchange); }
void Broker::declare_queue(ConnectionId connection, const QueueDeclaration& queue) {
    impl_->declare_queue(connection, queue);
}
void Broker::bind(ConnectionId connection, const BindingDeclaration& binding) { impl_->bind(connection, binding); }
PublishResult Broker::publish(OutboundMessage message) { return impl_->publish(std::move(message)); }

std::unique_ptr<Subscription> Broker::consume(ConnectionId connection, std::string_view queue, const ConsumeSpec& spec,
                                              DeliverFn deliver) {
    return impl_->consume(connection, queue, spec, std::move(deliver));
}

std::optional<Delivery> Broker::pull(ConnectionId connection, std::string_view queue) {
    return impl_->pull(connection, queue);
}
std::uint64_t Broker::queue_depth(ConnectionId connection, std::string_view queue) {
    return impl_->queue_depth(connection, queue);
}
bool Broker::queue_exists(ConnectionId connection, std::string_view queue) {
    return impl_->queue_exists(connection, queue);
}
void Broker::delete_queue(ConnectionId connection, std::string_view queue) { impl_->delete_queue(connection, queue); }

// ---------------------------------------------------------------------------------------

Broker::Impl::Guard::Guard(Impl& impl, std::string_view action)
    : impl_(impl), lock_((detail::refuse_reentry(action), impl.mutex_)) {}

Broker::Impl::Guard::~Guard() {
    if (impl_.retired_timers_.empty()) return;
    std::vector<Clock::TimerId> retired;
    retired.swap(impl_.retired_timers_);
    lock_.unlock();
    for (Clock::TimerId timer : retired) impl_.clock_->cancel(timer);
}

Broker::Impl::Impl(Broker& owner, std::string name, std::shared_ptr<Clock> clock)
    : owner_(owner), name_(std::move(name)), clock_(std::move(clock)) {}

Broker::Impl::~Impl() {
    // Nobody owns the broker any more, so no operation runs and no timer action gets past
    // its weak pointer; cancel what is armed so nothing keeps firing.
    std::vector<Clock::TimerId> armed;
    {
        std::lock_guard guard(mutex_);
        for (const auto& [name, queue] : queues_)
            if (queue->expiry_timer().id() != 0) armed.push_back(queue->expiry_timer().id());
        armed.insert(armed.end(), retired_timers_.begin(), retired_timers_.end());
    }
    for (Clock::TimerId timer : armed) clock_->cancel(timer);
}

Broker::ConnectionId Broker::Impl::open_connection() {
    Guard guard(*this, "open a connection");
    const ConnectionId connection = next_id_++;
    const std::uint64_t pulls = next_id_++;
    connections_.emplace(connection, pulls);
    consumers_.emplace(pulls, std::make_unique<Consumer>(pulls, connection));
    return connection;
}

void Broker::Impl::close_connection(ConnectionId connection) {
    Guard guard(*this, "close a connection");
    if (connections_.erase(connection) == 0) return;
    std::vector<std::uint64_t> owned;
    for (const auto& [id, consumer] : consumers_)
        if (consumer->connection() == connection) owned.push_back(id);
    std::sort(owned.begin(), owned.end());
    for (std::uint64_t id : owned) close_consumer_locked(id);
    std::vector<std::shared_ptr<Queue>> exclusive;
    for (const auto& [name, queue] : queues_)
        if (queue->owned_by(connection)) exclusive.push_back(queue);
    for (const auto& queue : exclusive) remove_queue(queue);
}

}  // namespace acemq::inproc
