// The family's names for the queues and exchanges that failures travel through, and the
// arguments of a retry rung (docs/wire-contract.md §5.1–5.3). Byte for byte what every AceMQ
// library declares, so a C++ consumer and a Java one share one set of queues.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <acemq/field.hpp>

namespace acemq {

// Expired rung messages travel back to their source queue through this exchange (direct,
// durable), which binds each source queue on the queue's own name.
inline constexpr std::string_view retry_exchange = "acemq.retry";
// Set-aside messages reach `{queue}.dlq` and `{queue}.parked` through this exchange
// (direct, durable), bound on those queues' own names.
inline constexpr std::string_view dead_letter_exchange = "acemq.dlx";
inline constexpr std::string_view dead_letter_suffix = ".dlq";
inline constexpr std::string_view parked_suffix = ".parked";
inline constexpr std::string_view retry_infix = ".retry.";

// The queue-argument names the contract uses.
namespace argument {
inline constexpr std::string_view queue_type = "x-queue-type";
inline constexpr std::string_view message_ttl = "x-message-ttl";
inline constexpr std::string_view dead_letter_exchange = "x-dead-letter-exchange";
inline constexpr std::string_view dead_letter_routing_key = "x-dead-letter-routing-key";
inline constexpr std::string_view max_age = "x-max-age";
inline constexpr std::string_view max_length_bytes = "x-max-length-bytes";
inline constexpr std::string_view stream_max_segment_size_bytes = "x-stream-max-segment-size-bytes";
// A stream consumer's argument saying where it starts, and the header on each delivery
// from a stream saying where the message sits.
inline constexpr std::string_view stream_offset = "x-stream-offset";
}  // namespace argument

// `{queue}.dlq`: where rejected and exhausted messages go.
std::string dead_letter_queue(std::string_view queue);
// `{queue}.parked`: where undecodable and parked messages wait for a person.
std::string parked_queue(std::string_view queue);

// A rung's delay as the family writes it: whole seconds, then the largest exact unit of
// h, m, s ("2h", "5m", "90s", "160s"). Below one second it is "0s", as Go, Python and
// Ruby write it (Java writes "500ms"; the contract fixture records the disagreement).
std::string rung_delay_name(std::chrono::milliseconds delay);
// `{queue}.retry.{delay}`.
std::string rung_queue(std::string_view queue, std::chrono::milliseconds delay);
// Exactly three arguments, never more: x-message-ttl = the delay in ms,
// x-dead-letter-exchange = acemq.retry, x-dead-letter-routing-key = the source queue.
FieldTable rung_args(std::string_view queue, std::chrono::milliseconds delay);

// The arguments a source queue gains when dead letters are asked for: expiry and drops
// the library never sees still reach `{queue}.dlq`.
FieldTable dead_letter_args(std::string_view queue);

// Which rung a wait of `delay` rides: the shortest rung at least as long, or the longest
// rung when the delay exceeds them all; nullopt when there are no rungs.
std::optional<std::chrono::milliseconds> choose_rung(std::span<const std::chrono::milliseconds> rungs,
                                                     std::chrono::milliseconds delay);

}  // namespace acemq
