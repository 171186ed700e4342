// A message and its field values as msgpack, the one encoding the zmq protocol sends and
// the durable broker stores. Field values keep their AMQP types: nil, bool, float64 (always,
// even for whole doubles), str, bin, array, map and int32 as msgpack's own types; int64,
// uint64 and timestamps (whole seconds) as ext types 1, 2 and 3, eight bytes big-endian.
//
// Readers check a buffer's shape as msgpack-c unpacks it (unpack_checked, with the module's
// one defence against a hostile length, bounds.hpp).
//
// Internal to libacemq. Free functions of their arguments only, so thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <msgpack.hpp>

#include <acemq/error.hpp>
#include <acemq/field.hpp>
#include <acemq/packed_table.hpp>
#include <acemq/transport.hpp>

namespace acemq::message_pack {

// What cannot be read, without the prefix of the format it was read as; each user says
// what it was reading (the zmq protocol: "malformed zmq protocol frame: ...").
class Malformed : public Error {
public:
    using Error::Error;
};

// Arrays and maps nested inside one buffer at most: a frame's own arrays and 64 levels of
// header tables (RabbitMQ's limit, which the AMQP transport keeps too).
inline constexpr std::size_t max_depth = 72;

// Unpacks `bytes`, referring into them (they must outlive the handle). Throws Malformed
// unless they hold one msgpack value whose arrays and maps declare no more elements than the
// buffer has bytes and nest at most max_depth deep, checked at each header before msgpack-c
// reserves room for its elements, so nothing is allocated in proportion to what the bytes
// declare. `whole` is what the user calls the buffer ("frame"), for the texts that speak of it.
msgpack::object_handle unpack_checked(std::span<const std::byte> bytes, std::string_view whole);

// A msgpack type as the texts of Malformed name it: "str", "bin", "integer", ...
std::string_view type_name(msgpack::type::object_type type);

using Packer = msgpack::packer<msgpack::sbuffer>;

void pack_text(Packer& out, std::string_view text);
void pack_bytes(Packer& out, std::span<const std::byte> bytes);
void pack_value(Packer& out, const FieldValue& value);
void pack_table(Packer& out, const FieldTable& table);
// A delivered message's headers, as the same map.
void pack_table(Packer& out, const PackedHeaders& table);

// Typed readers; Malformed naming `name` when the object has another type.
std::uint64_t read_unsigned(const msgpack::object& object, std::string_view name);
std::int64_t read_signed(const msgpack::object& object, std::string_view name);
std::string_view read_text(const msgpack::object& object, std::string_view name);
std::span<const std::byte> read_bytes(const msgpack::object& object, std::string_view name);
bool read_bool(const msgpack::object& object, std::string_view name);
const msgpack::object_array& read_array(const msgpack::object& object, std::string_view name, std::size_t at_least);
FieldValue read_value(const msgpack::object& object, std::string_view name);
FieldTable read_table(const msgpack::object& object, std::string_view name);
// A map read straight into the packed form, for the message whose id is `message_id` (a text
// equal to it held as a reference, as PackedTable's constructor with an id does). A map whose
// names are in order, each once (as this module writes them), goes in as it is read; any
// other is read as a table first, which orders it and refuses a name given twice.
PackedTable read_packed_table(const msgpack::object& object, std::string_view name, std::string_view message_id);

// A delivered message as `message_fields` consecutive values: exchange, routing_key, body,
// content_type, message_id, headers, reply_to, redelivered.
inline constexpr std::uint32_t message_fields = 8;
void pack_message(Packer& out, const InboundMessage& message);
// Reads the `message_fields` values starting at `fields`.
InboundMessage read_message(const msgpack::object* fields);
// The delivery of `message`, as read from bytes another process wrote (a zmq deliver frame, a
// durable row): made as InboundMessage(OutboundMessage) makes it, its packed headers copied,
// and marked `redelivered`. Malformed, naming what, when a message cannot hold its parts
// (short texts past 64 KiB in all), rather than InvalidArgument.
InboundMessage message_of(OutboundMessage&& message, bool redelivered);

// Room for a buffer carrying a message: its body, and a guess for the names, ids and headers.
std::size_t message_size_hint(std::size_t body, std::size_t headers);

}  // namespace acemq::message_pack
