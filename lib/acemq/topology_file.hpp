// Topology files: a Topology (<acemq/topology.hpp>) written as JSON, for a deploy to declare
// and a CI job to compare with the broker (`acemq topology apply|diff`, docs/topology-file.md).
//
//   {
//     "exchanges": [{"name": "orders", "type": "topic"}],
//     "queues": [{"name": "orders.new", "deadLetter": true, "retry": "exponential(6, 10s, 1m)"}],
//     "bindings": [{"queue": "orders.new", "exchange": "orders", "routingKey": "order.*"}]
//   }
//
//   acemq::Topology topology = acemq::read_topology_file("deploy/topology.json");
//   std::cout << acemq::print_topology_file(topology);
//
// The fields are the builder's, camelCase. An exchange: name, type (direct, topic, fanout,
// headers), durable, autoDelete, arguments. A queue: name, and optionally type (quorum,
// classic, stream), durable, exclusive, autoDelete, deadLetter, retry (a policy as the family
// writes one: parse_retry_policy in <acemq/retry.hpp>), arguments. A binding: queue,
// exchange, routingKey, arguments. existingExchanges and existingQueues list names declared
// by their owners (Topology::existing_exchange/existing_queue). Integers in arguments are
// read as 64-bit. YAML is not read: the library has no YAML parser.
//
// Free functions on values: thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <acemq/topology.hpp>

namespace acemq {

// The topology `text` declares, in the file's order. `source` names the file in errors.
// Throws TopologyError for anything wrong, naming the source, where in the file
// (queues[1] ("orders.new").durable) and what is wrong: JSON that does not parse, an
// unknown or repeated field, a value of the wrong type, a declaration the builder refuses,
// a binding to a queue or exchange the file neither declares nor names as existing.
Topology parse_topology_file(std::string_view text, std::string_view source = "topology file");

// The same for the file at `path`; TopologyError also when it cannot be read.
Topology read_topology_file(const std::string& path);

// `topology` as a topology file, every declaration spelled out (a queue's dead-letter and
// retry halves as the queues, exchanges and bindings they are; the queue type always
// named), one declaration a line. What this writes, parse_topology_file reads back into an
// equal Topology, except that 32-bit integer arguments come back 64-bit. Throws
// InvalidArgument for an argument JSON cannot carry (bytes, a timestamp).
std::string print_topology_file(const Topology& topology);

}  // namespace acemq
