// A broker's own state in the Prometheus text format 0.0.4: what `acemq-broker --metrics`
// serves and `acemq metrics` prints, under the names in docs/observability.md ("Broker
// metrics"): per queue its ready and unacked messages, consumers, bytes and oldest message's
// age; the broker's published, delivered and acked totals, commits and their latency, its
// data file's and WAL's bytes, free disk, quarantined messages, sessions, uptime.
//
//   auto broker = acemq::open_management("zmq+ipc:///run/edge/broker.sock");
//   std::cout << acemq::broker_prometheus_text(*broker);
//
// What a broker does not tell (RabbitMQ's commit latency, an in-memory broker's data file)
// is left out rather than shown as 0. Thread-safe (pure), but for the Management overload,
// which uses `broker` as its own header says.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <acemq/management.hpp>

namespace acemq {

std::string broker_prometheus_text(const BrokerInfo& info, std::span<const QueueSummary> queues,
                                   std::uint64_t sessions);

// Asks `broker` for its info, queues and sessions and renders them as above. Throws what
// those calls throw.
std::string broker_prometheus_text(Management& broker);

}  // namespace acemq
