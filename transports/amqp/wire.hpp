// Conversions between acemq's value types and rabbitmq-c's. Internal to the transport.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include <amqp.h>

#include <acemq/field.hpp>
#include <acemq/transport.hpp>

#include "quoted_text.hpp"

namespace acemq::amqp {

inline amqp_bytes_t bytes_of(std::string_view text) {
    return amqp_bytes_t{text.size(), const_cast<char*>(text.data())};
}
inline std::string string_of(amqp_bytes_t bytes) {
    return bytes.len == 0 ? std::string() : std::string(static_cast<const char*>(bytes.bytes), bytes.len);
}

// Lays a FieldTable out as an amqp_table_t. The result points into `table` and into
// storage this object owns: keep both alive until the frame is written.
class TableView {
public:
    explicit TableView(const FieldTable& table);
    TableView(const TableView&) = delete;
    TableView& operator=(const TableView&) = delete;
    const amqp_table_t& get() const noexcept { return root_; }

private:
    amqp_table_t lay_out(const FieldTable& table);
    amqp_field_value_t value_of(const FieldValue& value);

    std::deque<std::vector<amqp_table_entry_t>> tables_;
    std::deque<std::vector<amqp_field_value_t>> arrays_;
    amqp_table_t root_;
};

// How deep tables and arrays may nest in headers and arguments, both ways: the headers
// table is level 1, a table or array in it level 2, and so on up to this. RabbitMQ sets no
// limit of its own (a 131072-byte frame holds ~18,000 levels) and every level read or
// written costs stack, so deeper ones are refused on publish and a delivery carrying one is
// handed on undecodable (the engine parks it).
inline constexpr int max_table_depth = 64;

// Every AMQP field kind read into the nearest FieldValue: narrow integers widen to 32 bits,
// unsigned 32 to 64, decimals and floats to double, timestamps to FieldTimestamp (one past
// the signed 64-bit range to unsigned 64). Throws DecodeError, saying so, for tables and
// arrays nested deeper than max_table_depth; reads at most that deep, so a hostile table
// cannot exhaust the stack.
FieldTable table_of(const amqp_table_t& table);

// The bytes amqp_encode_table writes for `table` (its 4-byte length included), or, in
// `refusal`, why it cannot be written: a name longer than 255 bytes, or nesting deeper than
// max_table_depth. Measured without recursion, so any depth is safe to ask about.
struct TableSize {
    std::size_t bytes = 0;
    std::string refusal;  // empty when the table can be written
};
TableSize encoded_size(const FieldTable& table);

// Why rabbitmq-c could not put `message` on the wire as it is, naming the field, its size
// and the limit; empty when it can. Checked before anything is written, because
// amqp_basic_publish sends the method frame before it finds the content header does not
// encode, and a half-sent publish costs the connection. `frame_max` is the connection's.
std::string encoding_refusal(const OutboundMessage& message, std::size_t frame_max);

// What one content header frame holds of a message's properties on a connection whose
// frame_max is `frame_max`: the frame less its framing (TransportInfo::max_properties_bytes).
std::size_t property_room(std::size_t frame_max);

// A delivery's properties (content type, message id, reply-to, headers) read into
// `message`. Headers nested past max_table_depth are not read: the message gets none and
// decode_failure says why, for the engine to park it.
void read_properties(InboundParts& message, const amqp_basic_properties_t& properties);

// `"orders"`: a name as error messages quote it, the library's way (escaped and bounded, as
// a name may come from anyone).
using acemq::detail::in_quotes;

// "404 NOT_FOUND - no queue 'x' in vhost '/'" from a channel.close or connection.close.
std::string reply_text(std::uint16_t code, amqp_bytes_t text);

}  // namespace acemq::amqp
