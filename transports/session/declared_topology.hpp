// The topology a client declared, kept so that a new session declares it again before
// anything else. Not thread-safe: its owner says what guards it. Internal.
//
// A declaration made again replaces the one kept under its name (exchanges, queues); a
// binding is kept once however often it is made. Why: RabbitMQ accepts a declaration of an
// exchange or queue that exists only when it is equivalent to the existing one (else
// PRECONDITION_FAILED, and the channel closes), so a broker holds one declaration per name,
// the last it accepted, and that is what a new session must declare again. Keeping every
// unequal declaration of a name instead would replay one the broker had replaced (a queue
// deleted by someone else and declared anew with other arguments, say) ahead of the one it
// holds, and the replay would be refused. A binding has no name but itself: binding the
// same exchange, queue, key and arguments again changes nothing, and other arguments make
// another binding, so bindings are kept by equality. The embedded broker behind the zmq
// transport refuses a conflicting redeclaration as RabbitMQ does.
#pragma once

#include <string_view>
#include <vector>

#include <acemq/topology.hpp>

namespace acemq::session {

class DeclaredTopology {
public:
    // Call once the broker has accepted the declaration.
    void remember(const ExchangeDeclaration& exchange);
    void remember(const QueueDeclaration& queue);
    void remember(const BindingDeclaration& binding);
    void remember(const Topology& topology);
    // The queue was deleted: forget it and its bindings.
    void forget_queue(std::string_view queue);

    const std::vector<ExchangeDeclaration>& exchanges() const noexcept { return exchanges_; }
    const std::vector<QueueDeclaration>& queues() const noexcept { return queues_; }
    const std::vector<BindingDeclaration>& bindings() const noexcept { return bindings_; }

private:
    std::vector<ExchangeDeclaration> exchanges_;
    std::vector<QueueDeclaration> queues_;
    std::vector<BindingDeclaration> bindings_;
};

}  // namespace acemq::session
