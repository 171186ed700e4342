// Broker::Impl: declaring, binding, inspecting and deleting exchanges and queues, and the
// checks every call naming a queue makes (open connection, exclusive owner).
#include <acemq/error.hpp>
#include "inproc/broker_impl.hpp"
#include "inproc/declarations.hpp"
#include "inproc/quoted.hpp"

namespace acemq::inproc {

using detail::Exchange;
using detail::in_quotes;
using detail::Queue;

void Broker::Impl::declare(ConnectionId connection, const Topology& topology) {
    {
        Guard guard(*this, "declare a topology");
        require_open(connection, "declare a topology");
    }
    for (const ExchangeDeclaration& exchange : topology.exchanges()) declare_exchange(exchange);
    for (const QueueDeclaration& queue : topology.queues()) declare_queue(connection, queue);
    for (const BindingDeclaration& binding : topology.bindings()) bind(connection, binding);
}

void Broker::Impl::declare_exchange(const ExchangeDeclaration& asked) {
    Guard guard(*this, "declare an exchange");
    if (asked.name.empty())
        throw TopologyError(
            "acemq: cannot declare the default exchange \"\": ACCESS_REFUSED - it always exists; "
            "publish to it with exchange \"\" and the queue's name as routing key");
    if (asked.kind == ExchangeKind::headers)
        throw TopologyError("acemq: cannot declare exchange " + in_quotes(asked.name) +
                            " (headers): the inproc broker does not route headers exchanges; use a direct, "
                            "topic or fanout exchange, or run against RabbitMQ");
    if (auto found = exchanges_.find(asked.name); found != exchanges_.end()) {
        detail::check_redeclaration(found->second->declaration(), asked);
        return;
    }
    exchanges_.emplace(asked.name, std::make_unique<Exchange>(asked));
    if (durable() && asked.durable) guard.wait_for_commit(record(detail::journal::PutExchange{asked}));
}

void Broker::Impl::declare_queue(ConnectionId connection, const QueueDeclaration& asked) {
    Guard guard(*this, "declare a queue");
    require_open(connection, "declare queue " + in_quotes(asked.name));
    if (asked.name.empty())
        throw TopologyError(
            "acemq: cannot declare a queue without a name on the inproc broker: it does not "
            "generate names; give the queue one");
    if (auto found = queues_.find(asked.name); found != queues_.end()) {
        require_access(*found->second, connection, "declare");
        detail::check_redeclaration(found->second->declaration(), asked);
        return;
    }
    auto queue = std::make_shared<Queue>(asked, asked.exclusive ? connection : 0);
    // An exclusive queue goes with its connection, so a restart never finds it.
    if (durable() && asked.durable && !asked.exclusive) {
        queue->set_stored_id(next_queue_id_++);
        guard.wait_for_commit(record(detail::journal::PutQueue{queue->stored_id(), asked}));
    }
    queues_.emplace(asked.name, std::move(queue));
}

void Broker::Impl::bind(ConnectionId connection, const BindingDeclaration& asked) {
    Guard guard(*this, "bind a queue");
    const std::string what = "bind queue " + in_quotes(asked.queue) + " to exchange " + in_quotes(asked.exchange);
    require_open(connection, what);
    if (asked.exchange.empty())
        throw TopologyError("acemq: cannot " + what +
                            ": ACCESS_REFUSED - the default exchange cannot be bound; every queue is reachable "
                            "through it by its own name already");
    const auto exchange = exchanges_.find(asked.exchange);
    if (exchange == exchanges_.end())
        throw TopologyError("acemq: cannot " + what + ": NOT_FOUND - no exchange " + in_quotes(asked.exchange) +
                            " on " + detail::broker_in_errors(name_) + "; declare the exchange first");
    const auto queue = queues_.find(asked.queue);
    if (queue == queues_.end())
        throw TopologyError("acemq: cannot " + what + ": NOT_FOUND - no queue " + in_quotes(asked.queue) + " on " +
                            detail::broker_in_errors(name_) + "; declare the queue first");
    require_access(*queue->second, connection, "bind");
    const bool added = exchange->second->bind(*queue->second, asked.routing_key, asked.arguments);
    if (added && queue->second->stored_id() != 0 && exchange->second->declaration().durable)
        guard.wait_for_commit(record(detail::journal::PutBinding{detail::StoredBinding{
            .exchange = asked.exchange,
            .queue = queue->second->stored_id(),
            .routing_key = asked.routing_key,
            .arguments = asked.arguments,
        }}));
}

std::uint64_t Broker::Impl::queue_depth(ConnectionId connection, std::string_view queue_name) {
    Guard guard(*this, "ask a queue's depth");
    Queue& queue = *existing_queue(connection, queue_name, "ask the depth of");
    if (queue.is_stream()) retain(queue);  // a stream's depth is its log, which retention may have shortened
    return queue.depth();
}

bool Broker::Impl::queue_exists(ConnectionId connection, std::string_view queue_name) {
    Guard guard(*this, "ask whether a queue exists");
    require_open(connection, "ask whether queue " + in_quotes(queue_name) + " exists");
    const auto found = queues_.find(queue_name);
    if (found == queues_.end()) return false;
    require_access(*found->second, connection, "inspect");
    return true;
}

void Broker::Impl::delete_queue(ConnectionId connection, std::string_view queue_name) {
    Guard guard(*this, "delete a queue");
    require_open(connection, "delete queue " + in_quotes(queue_name));
    const auto found = queues_.find(queue_name);
    if (found == queues_.end()) return;
    require_access(*found->second, connection, "delete");
    delete_queue_locked(guard, found->second);
}

void Broker::Impl::delete_queue_locked(Guard& guard, std::shared_ptr<Queue> queue) {
    const bool stored = queue->stored_id() != 0;
    remove_queue(std::move(queue));
    if (stored) guard.wait_for_commit(journal_->last_recorded());
}

void Broker::Impl::require_open(ConnectionId connection, const std::string& what) const {
    if (!connections_.contains(connection))
        throw UsageError("acemq: cannot " + what + ": the connection to " + detail::broker_in_errors(name_) +
                         " is closed; open a new transport");
}

void Broker::Impl::require_access(const Queue& queue, ConnectionId connection, std::string_view action) const {
    if (queue.locked_for(connection))
        throw Error("acemq: cannot " + std::string(action) + " queue " + in_quotes(queue.name()) +
                    ": RESOURCE_LOCKED - it is exclusive to the connection that declared it; use that "
                    "connection, or declare a queue that is not exclusive");
}

const std::shared_ptr<Queue>& Broker::Impl::existing_queue(ConnectionId connection, std::string_view name,
                                                           std::string_view action) {
    require_open(connection, std::string(action) + " queue " + in_quotes(name));
    const auto found = queues_.find(name);
    if (found == queues_.end())
        throw Error("acemq: cannot " + std::string(action) + " queue " + in_quotes(name) +
                    ": NOT_FOUND - no such queue on " + detail::broker_in_errors(name_) + "; declare it first");
    require_access(*found->second, connection, action);
    return found->second;
}

// Unlists the queue, drops its messages, stops its consumers and unbinds it; the
// deliveries it handed out keep it alive until they are settled, into nowhere.
void Broker::Impl::remove_queue(std::shared_ptr<Queue> queue) {
    queues_.erase(queue->name());
    queue->mark_deleted();
    retire_timer(*queue);
    if (queue->stored_id() != 0) record(detail::journal::DeleteQueue{queue->stored_id()});
    for (auto exchange = exchanges_.begin(); exchange != exchanges_.end();) {
        Exchange& from = *exchange->second;
        const std::size_t removed = from.unbind(*queue);
        // RabbitMQ deletes an auto-delete exchange when its last binding goes.
        if (removed > 0 && !from.has_bindings() && from.declaration().auto_delete) {
            if (durable() && from.declaration().durable)
                record(detail::journal::DeleteExchange{from.declaration().name});
            exchange = exchanges_.erase(exchange);
        } else {
            ++exchange;
        }
    }
}

}  // namespace acemq::inproc
