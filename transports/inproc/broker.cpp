#include <acemq/inproc.hpp>

#include <algorithm>

#include <acemq/error.hpp>
#include "inproc/broker_impl.hpp"
#include "inproc/quoted.hpp"
#include "inproc/reentry.hpp"
#include "inproc/registry.hpp"

namespace acemq::inproc {

using detail::Consumer;
using detail::in_quotes;
using detail::Queue;
using detail::Registry;

std::shared_ptr<Broker> Broker::find_or_make(std::string_view name, const BrokerOptions& options, bool same_data) {
    const std::shared_ptr<Broker> found = Registry::instance().find_or_add(name, [&] {
        auto made = std::make_shared<Broker>(Broker::Key{}, std::string(name), options);
        made->impl_->start();
        return made;
    });
    if (options.clock && options.clock != found->clock())
        throw InvalidArgument("acemq: inproc broker " + in_quotes(name) +
                              " already exists with another clock; pass no clock to share it, or use another name");
    if (same_data && options.data != found->data())
        throw InvalidArgument(
            "acemq: inproc broker " + in_quotes(name) + " already exists with " +
            (found->data().empty() ? std::string("no data file") : "data file " + in_quotes(found->data())) + ", not " +
            (options.data.empty() ? std::string("none") : in_quotes(options.data)) +
            "; open it as it is, or use another name");
    return found;
}

std::shared_ptr<Broker> broker(std::string_view name, std::shared_ptr<Clock> clock) {
    return Broker::find_or_make(name, BrokerOptions{.clock = std::move(clock)}, false);
}

std::shared_ptr<Broker> broker(std::string_view name, const BrokerOptions& options) {
    return Broker::find_or_make(name, options, true);
}

Broker::Broker(Key, std::string name, const BrokerOptions& options)
    : impl_(std::make_unique<Impl>(*this, std::move(name), options)) {}

Broker::~Broker() {
    Registry::instance().forget(impl_->name());
    impl_.reset();
}

const std::string& Broker::name() const noexcept { return impl_->name(); }
const std::shared_ptr<Clock>& Broker::clock() const noexcept { return impl_->clock(); }
const std::string& Broker::data() const noexcept { return impl_->data(); }
std::optional<std::string> Broker::commit_failure() { return impl_->commit_failure(); }
std::uint64_t Broker::quarantined_messages() const noexcept { return impl_->quarantined_messages(); }
Broker::ConnectionId Broker::open_connection(ConnectionOptions options) { return impl_->open_connection(options); }
void Broker::close_connection(ConnectionId connection) { impl_->close_connection(connection); }
void Broker::declare(ConnectionId connection, const Topology& topology) { impl_->declare(connection, topology); }
void Broker::declare_exchange(const ExchangeDeclaration& exchange) { impl_->declare_exchange(exchange); }
void Broker::declare_queue(ConnectionId connection, const QueueDeclaration& queue) {
    impl_->declare_queue(connection, queue);
}
void Broker::bind(ConnectionId connection, const BindingDeclaration& binding) { impl_->bind(connection, binding); }
PublishResult Broker::publish(OutboundMessage message) { return impl_->publish(std::move(message)); }
void Broker::publish(OutboundMessage message, ConfirmFn confirmed) {
    impl_->publish(std::move(message), std::move(confirmed));
}
void Broker::publish_batch(std::vector<OutboundMessage> messages, BatchConfirmFn confirmed) {
    impl_->publish_batch(std::move(messages), std::move(confirmed));
}

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
std::vector<ExchangeSummary> Broker::exchanges() { return impl_->exchanges(); }
std::vector<QueueSummary> Broker::queues() { return impl_->queues(); }
std::vector<BindingDeclaration> Broker::bindings() { return impl_->bindings(); }
std::vector<SessionSummary> Broker::sessions() { return impl_->sessions(); }
std::vector<BrowsedMessage> Broker::browse(std::string_view queue, BrowseOptions options) {
    return impl_->browse(queue, options);
}
std::uint64_t Broker::purge(std::string_view queue) { return impl_->purge(queue); }
void Broker::delete_queue(std::string_view queue, DeleteOptions options) { impl_->delete_queue(queue, options); }
void Broker::delete_exchange(std::string_view exchange) { impl_->delete_exchange(exchange); }
BrokerInfo Broker::info() { return impl_->info(); }
BackupResult Broker::backup(const std::string& path) { return impl_->backup(path); }

// ---------------------------------------------------------------------------------------

Broker::Impl::Guard::Guard(Impl& impl, std::string_view action)
    : impl_(impl), lock_((detail::refuse_reentry(action), impl.mutex_)) {}

Broker::Impl::Guard::~Guard() {
    std::vector<Clock::TimerId> retired;
    retired.swap(impl_.retired_timers_);
    lock_.unlock();
    for (Clock::TimerId timer : retired) impl_.clock_->cancel(timer);
    if (commit_ != 0 && !detail::Journal::on_writer_thread()) impl_.journal_->wait(commit_);
}

std::optional<std::string> Broker::Impl::commit_failure() {
    Guard guard(*this, "check its health");
    return journal_ ? journal_->failure() : std::nullopt;
}

Broker::ConnectionId Broker::Impl::open_connection(ConnectionOptions options) {
    Guard guard(*this, "open a connection");
    const ConnectionId connection = next_id_++;
    const std::uint64_t pulls = next_id_++;
    connections_.emplace(connection, Connection{.pulls = pulls,
                                                .acks_wait = options.acks_wait,
                                                .peer = std::move(options.peer),
                                                .client_name = std::move(options.client_name),
                                                .opened = std::chrono::system_clock::now()});
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
