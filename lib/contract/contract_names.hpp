// The names the family's contract fixes (its headers, RabbitMQ's dead-letter headers the
// embedded broker writes, the queue arguments it declares), each with a small number. A
// FieldName of one of the longer ones points at it here instead of holding a copy, and a
// message's packed headers write the number, one byte, instead of the name's bytes
// (docs/design.md decision 12). Internal: the numbers live only in this process's memory,
// never on a wire or a disk, so the list may change between releases.
#pragma once

#include <array>
#include <string_view>

#include <acemq/envelope.hpp>
#include <acemq/naming.hpp>

namespace acemq::contract_names {

// The envelope's reserved headers come first, in name order: read_envelope's slots are the
// first entries of this list, in this order. The strings are the header constants
// themselves, so a name read from here is the constant's own pointer.
inline constexpr auto all = std::to_array<std::string_view>({
    header::attempt,
    header::causation,
    header::claim,
    header::correlation,
    header::error,
    header::first_seen,
    header::id,
    header::origin,
    header::route,
    header::route_id,
    header::route_position,
    header::type,
    header::version,
    header::traceparent,
    header::tracestate,
    header::replayed_from,
    header::replayed_at,
    header::replay_count,
    // The scheduler's (scheduler.hpp, a layer above this one).
    "x-schedule-exchange",
    "x-schedule-routing-key",
    "x-schedule-due-at",
    "x-schedule-content-type",
    argument::dead_letter_exchange,
    argument::dead_letter_routing_key,
    argument::max_length_bytes,
    argument::stream_max_segment_size_bytes,
    // RabbitMQ's dead-letter headers, as the embedded broker writes them, and the entries of
    // an x-death table.
    "x-death",
    "x-first-death-reason",
    "x-first-death-queue",
    "x-first-death-exchange",
    "x-last-death-reason",
    "x-last-death-queue",
    "x-last-death-exchange",
    "x-delivery-count",
    "count",
    "exchange",
    "queue",
    "reason",
    "routing-keys",
    "time",
});

// The number of `name` in `all`, or -1 when it is not one of them. A perfect hash: one slot
// read and one compare, whatever the name.
int index_of(std::string_view name) noexcept;

}  // namespace acemq::contract_names
