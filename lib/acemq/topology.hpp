// A description of exchanges, queues and bindings to declare, built as a value and
// printable so a person can read it before it is applied (docs/wire-contract.md §5).
//
//   acemq::Topology topology = acemq::Topology{}
//       .exchange("orders", acemq::ExchangeKind::topic)
//       .queue("orders.new", {.dead_letter = true})
//       .bind("orders.new", "orders", "order.*");
//   std::cout << topology;      // "Topology: 2 exchanges, 3 queues, 3 bindings" and one line each
//
// Queues are durable quorum queues unless told otherwise. They stay classic (no
// x-queue-type argument at all) when exclusive, auto-delete or transient, since RabbitMQ
// refuses quorum for those; asking for quorum with any of those is refused here first.
// Declarations the family shares (acemq.dlx, {queue}.dlq, ...) appear once however many
// queues ask for them; declaring anything else twice is an error.
//
// A Topology is a value; build it on one thread, then share it read-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/field.hpp>
#include <acemq/retry.hpp>

namespace acemq {

enum class ExchangeKind { direct, topic, fanout, headers };
enum class QueueType { quorum, classic, stream };

std::string_view to_string(ExchangeKind kind) noexcept;
std::string_view to_string(QueueType type) noexcept;

struct ExchangeOptions {
    bool durable = true;
    bool auto_delete = false;
    FieldTable arguments{};
};

struct QueueOptions {
    // Adds the dead-letter half: the queue's own x-dead-letter-exchange/-routing-key
    // arguments, acemq.dlx, {queue}.dlq, {queue}.parked and their bindings.
    bool dead_letter = false;
    // Adds what this policy's broker waits need: acemq.retry, one rung queue per broker
    // wait and the binding that brings expired messages home.
    std::optional<RetryPolicy> retry{};
    // nullopt: quorum, or classic where quorum cannot be.
    std::optional<QueueType> type{};
    bool durable = true;
    bool exclusive = false;
    bool auto_delete = false;
    FieldTable arguments{};
};

// Retention of a stream queue. Absent limits are not sent: a default invented here would
// differ from the other languages' declarations of the same stream.
struct StreamOptions {
    std::optional<std::chrono::seconds> max_age{};
    std::optional<std::int64_t> max_length_bytes{};
    std::optional<std::int64_t> max_segment_size_bytes{};
};

struct ExchangeDeclaration {
    std::string name;
    ExchangeKind kind = ExchangeKind::direct;
    bool durable = true;
    bool auto_delete = false;
    FieldTable arguments;
    friend bool operator==(const ExchangeDeclaration&, const ExchangeDeclaration&) = default;
};

// The queue exactly as it goes to the broker: `arguments` is complete, x-queue-type
// included for quorum and stream queues and absent for classic ones.
struct QueueDeclaration {
    std::string name;
    QueueType type = QueueType::quorum;
    bool durable = true;
    bool exclusive = false;
    bool auto_delete = false;
    FieldTable arguments;
    friend bool operator==(const QueueDeclaration&, const QueueDeclaration&) = default;
};

struct BindingDeclaration {
    std::string queue;
    std::string exchange;
    std::string routing_key;
    FieldTable arguments;
    friend bool operator==(const BindingDeclaration&, const BindingDeclaration&) = default;
};

class Topology {
public:
    // Each adder throws TopologyError for a declaration that contradicts itself or one
    // already made, and InvalidArgument for a name that is not a name.
    Topology& exchange(std::string_view name, ExchangeKind kind, ExchangeOptions options = {});
    Topology& queue(std::string_view name, QueueOptions options = {});
    Topology& stream(std::string_view name, StreamOptions options = {});
    Topology& bind(std::string_view queue, std::string_view exchange, std::string_view routing_key,
                   FieldTable arguments = {});
    // Names a queue or exchange that exists already, declared by its owner, so bindings may
    // refer to it. Nothing is declared for it.
    Topology& existing_queue(std::string_view name);
    Topology& existing_exchange(std::string_view name);
    // Adds everything `other` declares; what both declare identically appears once.
    Topology& merge(const Topology& other);

    const std::vector<ExchangeDeclaration>& exchanges() const noexcept { return exchanges_; }
    const std::vector<QueueDeclaration>& queues() const noexcept { return queues_; }
    const std::vector<BindingDeclaration>& bindings() const noexcept { return bindings_; }
    // The names given to existing_queue and existing_exchange, in the order first given.
    const std::vector<std::string>& existing_queues() const noexcept { return existing_queues_; }
    const std::vector<std::string>& existing_exchanges() const noexcept { return existing_exchanges_; }
    const QueueDeclaration* find_queue(std::string_view name) const noexcept;
    const ExchangeDeclaration* find_exchange(std::string_view name) const noexcept;

    // Throws TopologyError when a binding names a queue or exchange this topology neither
    // declares nor names as existing.
    void validate() const;

    // The first line counts; then one line per declaration, exchanges, queues, bindings:
    //   Topology: 1 exchanges, 3 queues, 3 bindings
    //     declare exchange orders (topic)
    //     declare queue orders.new (durable, quorum, x-dead-letter-exchange=acemq.dlx, ...)
    //     declare binding orders.new (from orders on order.*)
    // followed by one "  expect queue NAME (declared by its owner)" line per existing name.
    // An invalid topology prints as "Topology{invalid: <why>}".
    std::string to_string() const;

    friend bool operator==(const Topology&, const Topology&) = default;

private:
    void add_exchange(ExchangeDeclaration declaration, bool shared);
    void add_queue(QueueDeclaration declaration, bool shared);
    void add_binding(BindingDeclaration declaration);
    void add_dead_letter_half(std::string_view queue);
    void add_retry_half(std::string_view queue, const RetryPolicy& policy);

    friend Topology consumer_topology(std::string_view queue, const RetryPolicy& policy);

    std::vector<ExchangeDeclaration> exchanges_;
    std::vector<QueueDeclaration> queues_;
    std::vector<BindingDeclaration> bindings_;
    std::vector<std::string> existing_queues_;
    std::vector<std::string> existing_exchanges_;
};

std::ostream& operator<<(std::ostream& out, const Topology& topology);

// What a consumer of `queue` declares for itself before its first delivery: always the
// dead-letter half (acemq.dlx, {queue}.dlq, {queue}.parked, their bindings); the retry half
// (acemq.retry, the rungs, the return binding) only when the policy has broker waits. Never
// the source queue itself, which belongs to whoever owns it: it is named as existing.
Topology consumer_topology(std::string_view queue, const RetryPolicy& policy);

}  // namespace acemq
