// Internal: a message's headers packed with its publish span's trace context written in its
// place, for the Publisher (issue 32's decision 5: the traceparent needs no heap string). Not
// API: pack_headers(envelope, added) is what a caller outside the library uses.
#pragma once

#include <optional>
#include <string_view>

#include <acemq/envelope.hpp>
#include <acemq/packed_table.hpp>

namespace acemq::detail {

// pack_headers(envelope, added) with `added` the traceparent and tracestate headers, here texts
// the caller formatted (the traceparent on its stack), written in their places with no table
// or string between. No `tracestate` (the span has none): an application header of that name
// is dropped, as inject_trace drops it.
PackedTable pack_traced_headers(const Envelope& envelope, std::string_view traceparent,
                                std::optional<std::string_view> tracestate);

}  // namespace acemq::detail
