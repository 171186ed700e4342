// The envelope: what the AceMQ family knows about a message beyond its body, carried in
// reserved "x-acemq-*" headers (docs/wire-contract.md §2). One value type for both directions:
// `render_headers` writes it onto a message, `read_envelope` reads one off a delivery.
//
// Envelope is a plain value: copy it, change it, hand it to another thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/field.hpp>
#include <acemq/packed_table.hpp>

namespace acemq {

using EpochMillis = std::chrono::sys_time<std::chrono::milliseconds>;

// The reserved header names, byte for byte as the family writes them. Membership of the
// reserved namespace is a prefix test (`is_reserved_header`), not this list: names from
// newer libraries are reserved too.
namespace header {
inline constexpr std::string_view reserved_prefix = "x-acemq-";
inline constexpr std::string_view id = "x-acemq-id";
inline constexpr std::string_view type = "x-acemq-type";
inline constexpr std::string_view version = "x-acemq-version";
inline constexpr std::string_view correlation = "x-acemq-correlation";
inline constexpr std::string_view causation = "x-acemq-causation";
inline constexpr std::string_view attempt = "x-acemq-attempt";
inline constexpr std::string_view first_seen = "x-acemq-first-seen";
inline constexpr std::string_view origin = "x-acemq-origin";
inline constexpr std::string_view error = "x-acemq-error";
inline constexpr std::string_view claim = "x-acemq-claim";
inline constexpr std::string_view route = "x-acemq-route";
inline constexpr std::string_view route_position = "x-acemq-route-position";
inline constexpr std::string_view route_id = "x-acemq-route-id";
// W3C trace context travels unprefixed, as an ordinary application header.
inline constexpr std::string_view traceparent = "traceparent";
inline constexpr std::string_view tracestate = "tracestate";
// The shared "acemq-" namespace is defined but not reserved: handlers see these.
inline constexpr std::string_view replayed_from = "acemq-replayed-from";
inline constexpr std::string_view replayed_at = "acemq-replayed-at";
inline constexpr std::string_view replay_count = "acemq-replay-count";
}  // namespace header

bool is_reserved_header(std::string_view name) noexcept;

struct Envelope {
    std::string id;                         // UUID v4 when generated; any non-empty string when given
    std::string type;                       // what the message is; defaults to the routing key
    std::int32_t version = 1;               // schema version of the body, >= 1
    std::string correlation;                // the conversation; defaults to the id
    std::string causation;                  // the message that caused this one; empty = none
    std::int32_t attempt = 1;               // which delivery this is, from 1; advanced by retries
    std::optional<EpochMillis> first_seen;  // when the first attempt was published; unknown = nullopt
    std::string origin;                     // "service@host" that first published it; empty = none
    std::string error;                      // why it was set aside (written by the engine only)
    std::string claim;                      // claim-check key (set by the application only)
    std::vector<std::string> route;         // declared-pipeline steps; empty = none
    std::int32_t route_position = 0;
    std::string route_id;
    Headers headers;  // application headers, traceparent and tracestate included
    // Set by read_envelope when the delivery carried no id (no x-acemq-id header, no
    // message-id property) and `id` was made up: a redelivery of it gets another one.
    bool id_generated = false;

    // A new message's envelope: fresh id, correlation = id, type = routing key (the literal
    // "message" for an empty key, as a fanout publish has), first seen now.
    static Envelope for_new_message(std::string_view routing_key, std::string_view origin = {});

    // Age since first_seen, or nullopt when that is not known: an unknown age never trips
    // a retry policy's age limit (contract: "counts as young enough"). Never negative: a
    // first_seen after `now` (the sender's clock runs ahead) is an age of zero.
    std::optional<std::chrono::milliseconds> age(EpochMillis now) const;

    std::optional<std::string> traceparent() const;
    std::optional<std::string> tracestate() const;

    friend bool operator==(const Envelope&, const Envelope&) = default;
};

// Sets an application header, refusing (ReservedHeaderError) a name in the reserved
// namespace: the library owns those and strips them on the way in.
void set_header(Envelope& envelope, FieldName name, FieldValue value);

// The headers a publish puts on the wire: the reserved ones (absent when empty, never
// written as "" or void; integers with the family's widths) merged with the application
// headers. Throws InvalidArgument for an envelope that must not be sent (empty id,
// version or attempt below 1, a route step containing ',' or blank, a negative route
// position) and ReservedHeaderError for a reserved name among the application headers.
// `added` (a tracer's traceparent and tracestate, say) are merged in as well, each in its
// place and replacing an application header of its name; a reserved name among them is
// refused as among the application headers.
Headers render_headers(const Envelope& envelope, Headers added = {});
// The same headers, packed (what an OutboundMessage carries), written without a table between:
// what the Publisher sends. Throws as render_headers does.
PackedTable pack_headers(const Envelope& envelope, Headers added = {});

// Throws what render_headers(envelope) would throw, and nothing else: for a caller that starts
// something it would have to undo (a span) before it renders.
void check_sendable(const Envelope& envelope);

// Reads a delivery's headers tolerantly (docs/wire-contract.md §2.2–2.5): unreadable
// values take their defaults, never throw; the id falls back to the AMQP message-id
// property and then to a fresh id (id_generated set); the type to the routing key; the
// correlation to the id.
// An AMQP timestamp is no integer: as version, attempt or route position it takes the
// default; as first-seen it is the instant it names (seconds, where the contract's integer
// is milliseconds). Every "x-acemq-*" header is removed from the application headers,
// known or not.
Envelope read_envelope(
    const Headers& headers, std::string_view routing_key,
    std::string_view message_id_property =
        {});  // A delivered message's envelope (InboundMessage, transport.hpp, has the overload that reads
// its headers, routing key and message id).

// The current time at the envelope's precision.
EpochMillis epoch_millis_now();

}  // namespace acemq
