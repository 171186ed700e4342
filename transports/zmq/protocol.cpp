#include "zmq/protocol.hpp"

#include <bit>
#include <cstring>
#include <limits>

namespace acemq::zmq::wire {

namespace {

// Field values travel as msgpack's own types where those keep the AMQP type: nil, bool,
// float64, str, bin, array, map (names to values) and int32 as a plain integer. The widths
// the family tells apart and msgpack does not get an ext type of their own, eight bytes big-endian.
constexpr std::int8_t ext_int64 = 1;
constexpr std::int8_t ext_uint64 = 2;
constexpr std::int8_t ext_timestamp = 3;  // whole seconds since the Unix epoch, signed

// Arrays and maps nested inside one frame at most: the frame's own arrays and 64 levels of
// header tables (RabbitMQ's limit, which the AMQP transport keeps too).
constexpr std::size_t max_depth = 72;

[[noreturn]] void malformed(std::string_view what) {
    throw ProtocolError("acemq: malformed zmq protocol frame: " + std::string(what));
}

// Checks a frame's shape before msgpack-c unpacks it: msgpack-c reserves every array and
// map as its header declares, so a few bytes claiming four billion elements would reserve
// gigabytes. Each element takes at least one byte, so the elements declared in all are
// bounded by the frame's length; nesting is bounded too. Nothing is allocated here.
class ShapeCheck : public msgpack::null_visitor {
public:
    explicit ShapeCheck(std::size_t frame_size) : budget_(frame_size) {}

    bool start_array(std::uint32_t elements) { return open(elements); }
    bool start_map(std::uint32_t entries) { return open(2 * std::size_t{entries}); }
    bool end_array() { return close(); }
    bool end_map() { return close(); }
    void parse_error(std::size_t parsed, std::size_t) {
        malformed("no msgpack value starts at byte " + std::to_string(parsed));
    }
    void insufficient_bytes(std::size_t, std::size_t) {
        malformed("it ends before the values it declares (truncated, or a length larger than the frame)");
    }

private:
    bool open(std::size_t values) {
        if (++depth_ > max_depth)
            malformed("arrays and maps nest deeper than " + std::to_string(max_depth) + " levels");
        if (values > budget_) malformed("an array or map declares more elements than the frame has bytes");
        budget_ -= values;
        return true;
    }
    bool close() {
        --depth_;
        return true;
    }

    std::size_t budget_;
    std::size_t depth_ = 0;
};

bool refer_to_frame(msgpack::type::object_type, std::size_t, void*) { return true; }

std::string_view type_name(msgpack::type::object_type type) {
    switch (type) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "bool";
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER: return "integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return "float";
    case msgpack::type::STR: return "str";
    case msgpack::type::BIN: return "bin";
    case msgpack::type::ARRAY: return "array";
    case msgpack::type::MAP: return "map";
    case msgpack::type::EXT: return "ext";
    }
    return "unknown";
}

[[noreturn]] void wrong_type(std::string_view name, std::string_view wanted, const msgpack::object& got) {
    malformed("field " + std::string(name) + " should be " + std::string(wanted) + ", is " +
              std::string(type_name(got.type)));
}

std::uint64_t read_unsigned(const msgpack::object& object, std::string_view name) {
    if (object.type != msgpack::type::POSITIVE_INTEGER) wrong_type(name, "an unsigned integer", object);
    return object.via.u64;
}

std::string_view read_text(const msgpack::object& object, std::string_view name) {
    if (object.type != msgpack::type::STR) wrong_type(name, "a str", object);
    return {object.via.str.ptr, object.via.str.size};
}

bool read_bool(const msgpack::object& object, std::string_view name) {
    if (object.type != msgpack::type::BOOLEAN) wrong_type(name, "a bool", object);
    return object.via.boolean;
}

const msgpack::object_array& read_array(const msgpack::object& object, std::string_view name, std::size_t at_least) {
    if (object.type != msgpack::type::ARRAY) wrong_type(name, "an array", object);
    if (object.via.array.size < at_least)
        malformed(std::string(name) + " has " + std::to_string(object.via.array.size) + " elements, needs " +
                  std::to_string(at_least));
    return object.via.array;
}

void pack_eight(msgpack::packer<msgpack::sbuffer>& out, std::int8_t type, std::uint64_t value) {
    char bytes[8];
    for (int i = 7; i >= 0; --i, value >>= 8) bytes[i] = static_cast<char>(value & 0xff);
    out.pack_ext(8, type);
    out.pack_ext_body(bytes, 8);
}

// msgpack-c's pack_double writes a whole double (2.0, -0.0, 2^40) as an integer, which would
// read back as an int32 or be refused as wider: a double goes out as float64 always, its
// header and big-endian bits appended as they are (pack_*_body appends without a header).
void pack_float64(msgpack::packer<msgpack::sbuffer>& out, double value) {
    char bytes[9];
    bytes[0] = static_cast<char>(0xcb);
    auto bits = std::bit_cast<std::uint64_t>(value);
    for (int i = 8; i >= 1; --i, bits >>= 8) bytes[i] = static_cast<char>(bits & 0xff);
    out.pack_bin_body(bytes, 9);
}

std::uint64_t read_eight(const msgpack::object_ext& ext) {
    if (ext.size != 8) malformed("an ext field value of type " + std::to_string(ext.type()) + " is not 8 bytes");
    std::uint64_t value = 0;
    for (std::uint32_t i = 0; i < 8; ++i) value = (value << 8) | static_cast<unsigned char>(ext.data()[i]);
    return value;
}

void pack_value(msgpack::packer<msgpack::sbuffer>& out, const FieldValue& value);

void pack_table(msgpack::packer<msgpack::sbuffer>& out, const FieldTable& table) {
    out.pack_map(static_cast<std::uint32_t>(table.size()));
    for (const auto& [name, value] : table) {
        out.pack_str(static_cast<std::uint32_t>(name.size()));
        out.pack_str_body(name.data(), static_cast<std::uint32_t>(name.size()));
        pack_value(out, value);
    }
}

void pack_value(msgpack::packer<msgpack::sbuffer>& out, const FieldValue& value) {
    std::visit(
        [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::monostate>) {
                out.pack_nil();
            } else if constexpr (std::is_same_v<V, bool>) {
                if (v)
                    out.pack_true();
                else
                    out.pack_false();
            } else if constexpr (std::is_same_v<V, std::int32_t>) {
                out.pack_int32(v);
            } else if constexpr (std::is_same_v<V, std::int64_t>) {
                pack_eight(out, ext_int64, static_cast<std::uint64_t>(v));
            } else if constexpr (std::is_same_v<V, std::uint64_t>) {
                pack_eight(out, ext_uint64, v);
            } else if constexpr (std::is_same_v<V, double>) {
                pack_float64(out, v);
            } else if constexpr (std::is_same_v<V, std::string>) {
                out.pack_str(static_cast<std::uint32_t>(v.size()));
                out.pack_str_body(v.data(), static_cast<std::uint32_t>(v.size()));
            } else if constexpr (std::is_same_v<V, Bytes>) {
                out.pack_bin(static_cast<std::uint32_t>(v.size()));
                out.pack_bin_body(reinterpret_cast<const char*>(v.data()), static_cast<std::uint32_t>(v.size()));
            } else if constexpr (std::is_same_v<V, FieldArray>) {
                out.pack_array(static_cast<std::uint32_t>(v.size()));
                for (const FieldValue& element : v) pack_value(out, element);
            } else if constexpr (std::is_same_v<V, FieldTable>) {
                pack_table(out, v);
            } else {
                static_assert(std::is_same_v<V, FieldTimestamp>);
                pack_eight(out, ext_timestamp, static_cast<std::uint64_t>(v.time_since_epoch().count()));
            }
        },
        value.get());
}

FieldTable read_table(const msgpack::object& object, std::string_view name);

FieldValue read_value(const msgpack::object& object, std::string_view name) {
    switch (object.type) {
    case msgpack::type::NIL: return {};
    case msgpack::type::BOOLEAN: return object.via.boolean;
    case msgpack::type::POSITIVE_INTEGER:
        if (object.via.u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
            malformed("an integer in " + std::string(name) + " is wider than 32 bits without its ext type");
        return static_cast<std::int32_t>(object.via.u64);
    case msgpack::type::NEGATIVE_INTEGER:
        if (object.via.i64 < std::numeric_limits<std::int32_t>::min())
            malformed("an integer in " + std::string(name) + " is wider than 32 bits without its ext type");
        return static_cast<std::int32_t>(object.via.i64);
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return object.via.f64;
    case msgpack::type::STR: return std::string(object.via.str.ptr, object.via.str.size);
    case msgpack::type::BIN: {
        const auto* data = reinterpret_cast<const std::byte*>(object.via.bin.ptr);
        return Bytes(data, data + object.via.bin.size);
    }
    case msgpack::type::ARRAY: {
        FieldArray array;
        array.reserve(object.via.array.size);
        for (std::uint32_t i = 0; i < object.via.array.size; ++i)
            array.push_back(read_value(object.via.array.ptr[i], name));
        return array;
    }
    case msgpack::type::MAP: return read_table(object, name);
    case msgpack::type::EXT: {
        const msgpack::object_ext& ext = object.via.ext;
        switch (ext.type()) {
        case ext_int64: return static_cast<std::int64_t>(read_eight(ext));
        case ext_uint64: return read_eight(ext);
        case ext_timestamp: return FieldTimestamp(std::chrono::seconds(static_cast<std::int64_t>(read_eight(ext))));
        default:
            malformed("a value in " + std::string(name) + " has the unknown ext type " + std::to_string(ext.type()));
        }
    }
    }
    malformed("a value in " + std::string(name) + " has an unknown msgpack type");
}

FieldTable read_table(const msgpack::object& object, std::string_view name) {
    if (object.type != msgpack::type::MAP) wrong_type(name, "a map", object);
    FieldTable table;
    table.reserve(object.via.map.size);
    for (std::uint32_t i = 0; i < object.via.map.size; ++i) {
        const msgpack::object_kv& entry = object.via.map.ptr[i];
        const std::string_view key = read_text(entry.key, std::string(name) + " name");
        if (!table.emplace(std::string(key), read_value(entry.val, name)).second)
            malformed(std::string(name) + " names \"" + std::string(key) + "\" twice");
    }
    return table;
}

void pack_text(msgpack::packer<msgpack::sbuffer>& out, std::string_view text) {
    out.pack_str(static_cast<std::uint32_t>(text.size()));
    out.pack_str_body(text.data(), static_cast<std::uint32_t>(text.size()));
}

void pack_bytes(msgpack::packer<msgpack::sbuffer>& out, std::span<const std::byte> bytes) {
    out.pack_bin(static_cast<std::uint32_t>(bytes.size()));
    out.pack_bin_body(reinterpret_cast<const char*>(bytes.data()), static_cast<std::uint32_t>(bytes.size()));
}

// Room for a frame carrying a message: its body, and a guess for the names, ids and headers.
std::size_t message_size_hint(std::size_t body, std::size_t headers) { return body + 256 + 64 * headers; }

// The fields of a delivered message, in the order deliver and the reply to pull share.
constexpr std::uint32_t message_fields = 8;

void pack_message(msgpack::packer<msgpack::sbuffer>& out, const InboundMessage& message) {
    pack_text(out, message.exchange);
    pack_text(out, message.routing_key);
    pack_bytes(out, message.body);
    pack_text(out, message.content_type);
    pack_text(out, message.message_id);
    pack_table(out, message.headers);
    pack_text(out, message.reply_to);
    out.pack(message.redelivered);
}

InboundMessage read_message(const msgpack::object* fields) {
    InboundMessage message;
    message.exchange = read_text(fields[0], "exchange");
    message.routing_key = read_text(fields[1], "routing_key");
    if (fields[2].type != msgpack::type::BIN) wrong_type("body", "a bin", fields[2]);
    const auto* body = reinterpret_cast<const std::byte*>(fields[2].via.bin.ptr);
    message.body.assign(body, body + fields[2].via.bin.size);
    message.content_type = read_text(fields[3], "content_type");
    message.message_id = read_text(fields[4], "message_id");
    message.headers = read_table(fields[5], "headers");
    message.reply_to = read_text(fields[6], "reply_to");
    message.redelivered = read_bool(fields[7], "redelivered");
    return message;
}

template <class Enum>
Enum read_enum(const Frame& frame, std::size_t index, std::string_view name, Enum last) {
    const std::uint64_t value = frame.unsigned_at(index, name);
    if (value > static_cast<std::uint64_t>(last))
        malformed(std::string(name) + " " + std::to_string(value) + " is unknown");
    return static_cast<Enum>(value);
}

}  // namespace

std::string_view to_string(Command command) noexcept {
    switch (command) {
    case Command::hello: return "hello";
    case Command::declare: return "declare";
    case Command::publish: return "publish";
    case Command::consume: return "consume";
    case Command::cancel: return "cancel";
    case Command::release: return "release";
    case Command::ack: return "ack";
    case Command::nack: return "nack";
    case Command::pull: return "pull";
    case Command::depth: return "depth";
    case Command::exists: return "exists";
    case Command::remove: return "remove";
    case Command::ping: return "ping";
    case Command::heartbeat: return "heartbeat";
    case Command::bye: return "bye";
    case Command::welcome: return "welcome";
    case Command::reply: return "reply";
    case Command::failure: return "failure";
    case Command::confirm: return "confirm";
    case Command::deliver: return "deliver";
    case Command::error: return "error";
    }
    return "unknown";
}

namespace {

// The fields each command carries at least (a later version may append more).
std::optional<std::size_t> fields_of(std::uint64_t command) {
    switch (static_cast<Command>(command)) {
    case Command::hello: return 3;
    case Command::declare: return 4;
    case Command::publish: return 10;
    case Command::consume: return 4;
    case Command::cancel:
    case Command::release: return 2;
    case Command::ack: return 1;
    case Command::nack: return 2;
    case Command::pull:
    case Command::depth:
    case Command::exists:
    case Command::remove: return 2;
    case Command::ping: return 1;
    case Command::heartbeat:
    case Command::bye: return 0;
    case Command::welcome: return 4;
    case Command::reply: return 2;
    case Command::failure: return 3;
    case Command::confirm: return 5;
    case Command::deliver: return 2 + message_fields;
    case Command::error: return 3;
    }
    return std::nullopt;
}

constexpr std::string_view version_refused = "acemq: zmq protocol version ";

}  // namespace

Frame Frame::parse(std::span<const std::byte> bytes) {
    if (bytes.empty()) malformed("it is empty");
    const char* data = reinterpret_cast<const char*>(bytes.data());
    ShapeCheck shape(bytes.size());
    std::size_t checked = 0;
    if (!msgpack::parse(data, bytes.size(), checked, shape)) malformed("it is not one msgpack value");
    if (checked != bytes.size())
        malformed(std::to_string(bytes.size() - checked) + " bytes follow the frame's msgpack value");

    Frame frame;
    std::size_t offset = 0;
    try {
        frame.handle_ = msgpack::unpack(data, bytes.size(), offset, refer_to_frame);
    } catch (const std::exception& error) {
        malformed(error.what());
    }
    const msgpack::object& top = frame.handle_.get();
    if (top.type != msgpack::type::ARRAY) malformed("it is a " + std::string(type_name(top.type)) + ", not an array");
    if (top.via.array.size < 2) malformed("it has no version and command");
    const msgpack::object* head = top.via.array.ptr;
    const std::uint64_t frame_version = read_unsigned(head[0], "version");
    if (frame_version != version)
        throw ProtocolError(std::string(version_refused) + std::to_string(frame_version) +
                            " is not spoken here (this side speaks version " + std::to_string(version) + ")");
    const std::uint64_t command = read_unsigned(head[1], "command");
    const auto needed = command <= 0xff ? fields_of(command) : std::nullopt;
    if (!needed) malformed("command " + std::to_string(command) + " is unknown");
    frame.command_ = static_cast<Command>(command);
    frame.fields_ = msgpack::object_array{top.via.array.size - 2, top.via.array.ptr + 2};
    if (frame.fields_.size < *needed)
        malformed(std::string(to_string(frame.command_)) + " needs " + std::to_string(*needed) + " fields, has " +
                  std::to_string(frame.fields_.size));
    return frame;
}

bool is_unsupported_version(const ProtocolError& error) noexcept {
    return std::string_view(error.what()).starts_with(version_refused);
}

std::uint64_t request_of(std::span<const std::byte> bytes) noexcept {
    try {
        const Frame frame = Frame::parse(bytes);
        if (frame.size() > 0 && frame.field(0).type == msgpack::type::POSITIVE_INTEGER) return frame.field(0).via.u64;
    } catch (const std::exception&) {
        // An unreadable frame has no request number to name: 0 says so.
    }
    return 0;
}

const msgpack::object& Frame::field(std::size_t index) const {
    if (index >= fields_.size) malformed(std::string(to_string(command_)) + " has no field " + std::to_string(index));
    return fields_.ptr[index];
}

std::uint64_t Frame::unsigned_at(std::size_t index, std::string_view name) const {
    return read_unsigned(field(index), name);
}
bool Frame::bool_at(std::size_t index, std::string_view name) const { return read_bool(field(index), name); }
std::string Frame::string_at(std::size_t index, std::string_view name) const {
    return std::string(read_text(field(index), name));
}
Bytes Frame::bytes_at(std::size_t index, std::string_view name) const {
    const msgpack::object& object = field(index);
    if (object.type != msgpack::type::BIN) wrong_type(name, "a bin", object);
    const auto* data = reinterpret_cast<const std::byte*>(object.via.bin.ptr);
    return Bytes(data, data + object.via.bin.size);
}
FieldTable Frame::table_at(std::size_t index, std::string_view name) const { return read_table(field(index), name); }
bool Frame::is_nil(std::size_t index) const { return field(index).type == msgpack::type::NIL; }

Writer::Writer(Command command, std::uint32_t fields, std::size_t expected_bytes)
    : buffer_(expected_bytes), packer_(buffer_) {
    packer_.pack_array(fields + 2);
    packer_.pack(version);
    packer_.pack(static_cast<std::uint8_t>(command));
}
Writer& Writer::text(std::string_view value) {
    pack_text(packer_, value);
    return *this;
}
Writer& Writer::bytes(std::span<const std::byte> value) {
    pack_bytes(packer_, value);
    return *this;
}
Writer& Writer::table(const FieldTable& value) {
    pack_table(packer_, value);
    return *this;
}
Writer& Writer::nil() {
    packer_.pack_nil();
    return *this;
}

msgpack::sbuffer encode_hello(std::uint64_t request, std::string_view client_name, std::uint32_t heartbeat_millis) {
    Writer out(Command::hello, 3);
    out.value(request).text(client_name).value(heartbeat_millis);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_declare(std::uint64_t request, const Topology& topology) {
    return encode_declare(request, topology.exchanges(), topology.queues(), topology.bindings());
}

msgpack::sbuffer encode_declare(std::uint64_t request, std::span<const ExchangeDeclaration> exchanges,
                                std::span<const QueueDeclaration> queues,
                                std::span<const BindingDeclaration> bindings) {
    Writer out(Command::declare, 4);
    out.value(request);
    auto& packer = out.out();
    packer.pack_array(static_cast<std::uint32_t>(exchanges.size()));
    for (const ExchangeDeclaration& exchange : exchanges) {
        packer.pack_array(5);
        out.text(exchange.name).value(static_cast<std::uint8_t>(exchange.kind));
        out.value(exchange.durable).value(exchange.auto_delete).table(exchange.arguments);
    }
    packer.pack_array(static_cast<std::uint32_t>(queues.size()));
    for (const QueueDeclaration& queue : queues) {
        packer.pack_array(6);
        out.text(queue.name).value(static_cast<std::uint8_t>(queue.type)).value(queue.durable);
        out.value(queue.exclusive).value(queue.auto_delete).table(queue.arguments);
    }
    packer.pack_array(static_cast<std::uint32_t>(bindings.size()));
    for (const BindingDeclaration& binding : bindings) {
        packer.pack_array(4);
        out.text(binding.queue).text(binding.exchange).text(binding.routing_key).table(binding.arguments);
    }
    return std::move(out.buffer());
}

msgpack::sbuffer encode_publish(std::uint64_t sequence, const OutboundMessage& message) {
    Writer out(Command::publish, 10, message_size_hint(message.body.size(), message.headers.size()));
    out.value(sequence).text(message.exchange).text(message.routing_key).bytes(message.body);
    out.text(message.content_type).text(message.message_id).table(message.headers).text(message.reply_to);
    out.value(message.persistent).value(message.mandatory);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_consume(std::uint64_t request, std::string_view queue, std::uint16_t prefetch,
                                std::string_view tag) {
    Writer out(Command::consume, 4);
    out.value(request).text(queue).value(prefetch).text(tag);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_consumer_request(Command command, std::uint64_t request, std::uint64_t consumer) {
    Writer out(command, 2);
    out.value(request).value(consumer);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_settle(std::uint64_t delivery_tag, std::optional<bool> nack_requeue) {
    Writer out(nack_requeue ? Command::nack : Command::ack, nack_requeue ? 2 : 1);
    out.value(delivery_tag);
    if (nack_requeue) out.value(*nack_requeue);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_queue_request(Command command, std::uint64_t request, std::string_view queue) {
    Writer out(command, 2);
    out.value(request).text(queue);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_ping(std::uint64_t request) {
    Writer out(Command::ping, 1);
    out.value(request);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_bare(Command command) { return std::move(Writer(command, 0).buffer()); }

msgpack::sbuffer encode_welcome(std::uint64_t request, std::string_view broker_name, std::uint32_t heartbeat_millis,
                                std::uint64_t max_frame_bytes) {
    Writer out(Command::welcome, 4);
    out.value(request).text(broker_name).value(heartbeat_millis).value(max_frame_bytes);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_reply_nil(std::uint64_t request) {
    Writer out(Command::reply, 2);
    out.value(request).nil();
    return std::move(out.buffer());
}

msgpack::sbuffer encode_reply_unsigned(std::uint64_t request, std::uint64_t value) {
    Writer out(Command::reply, 2);
    out.value(request).value(value);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_reply_bool(std::uint64_t request, bool value) {
    Writer out(Command::reply, 2);
    out.value(request).value(value);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_reply_pulled(std::uint64_t request, std::uint64_t delivery_tag, const InboundMessage& message) {
    Writer out(Command::reply, 2, message_size_hint(message.body.size(), message.headers.size()));
    out.value(request);
    out.out().pack_array(1 + message_fields);
    out.value(delivery_tag);
    pack_message(out.out(), message);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_failure(std::uint64_t request, FailureKind kind, std::string_view text) {
    Writer out(Command::failure, 3);
    out.value(request).value(static_cast<std::uint8_t>(kind)).text(text);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_confirm(std::uint64_t sequence, const PublishResult& result) {
    Writer out(Command::confirm, 5);
    out.value(sequence).value(result.confirmed).value(result.routed).value(static_cast<std::uint8_t>(result.why));
    out.text(result.return_reason);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_deliver(std::uint64_t consumer, std::uint64_t delivery_tag, const InboundMessage& message) {
    Writer out(Command::deliver, 2 + message_fields, message_size_hint(message.body.size(), message.headers.size()));
    out.value(consumer).value(delivery_tag);
    pack_message(out.out(), message);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_error(std::uint64_t request, ErrorCode code, std::string_view text) {
    Writer out(Command::error, 3);
    out.value(request).value(static_cast<std::uint8_t>(code)).text(text);
    return std::move(out.buffer());
}

Hello read_hello(const Frame& frame) {
    const std::uint64_t heartbeat = frame.unsigned_at(2, "heartbeat");
    if (heartbeat > std::numeric_limits<std::uint32_t>::max()) malformed("heartbeat does not fit 32 bits");
    return {frame.unsigned_at(0, "request"), frame.string_at(1, "client_name"), static_cast<std::uint32_t>(heartbeat)};
}

Declare read_declare(const Frame& frame) {
    Declare declare{.request = frame.unsigned_at(0, "request"), .exchanges = {}, .queues = {}, .bindings = {}};
    const auto& exchanges = read_array(frame.field(1), "exchanges", 0);
    for (std::uint32_t i = 0; i < exchanges.size; ++i) {
        const auto& fields = read_array(exchanges.ptr[i], "exchange", 5);
        const std::uint64_t kind = read_unsigned(fields.ptr[1], "exchange kind");
        if (kind > static_cast<std::uint64_t>(ExchangeKind::headers))
            malformed("exchange kind " + std::to_string(kind) + " is unknown");
        declare.exchanges.push_back({.name = std::string(read_text(fields.ptr[0], "exchange name")),
                                     .kind = static_cast<ExchangeKind>(kind),
                                     .durable = read_bool(fields.ptr[2], "durable"),
                                     .auto_delete = read_bool(fields.ptr[3], "auto_delete"),
                                     .arguments = read_table(fields.ptr[4], "arguments")});
    }
    const auto& queues = read_array(frame.field(2), "queues", 0);
    for (std::uint32_t i = 0; i < queues.size; ++i) {
        const auto& fields = read_array(queues.ptr[i], "queue", 6);
        const std::uint64_t type = read_unsigned(fields.ptr[1], "queue type");
        if (type > static_cast<std::uint64_t>(QueueType::stream))
            malformed("queue type " + std::to_string(type) + " is unknown");
        declare.queues.push_back({.name = std::string(read_text(fields.ptr[0], "queue name")),
                                  .type = static_cast<QueueType>(type),
                                  .durable = read_bool(fields.ptr[2], "durable"),
                                  .exclusive = read_bool(fields.ptr[3], "exclusive"),
                                  .auto_delete = read_bool(fields.ptr[4], "auto_delete"),
                                  .arguments = read_table(fields.ptr[5], "arguments")});
    }
    const auto& bindings = read_array(frame.field(3), "bindings", 0);
    for (std::uint32_t i = 0; i < bindings.size; ++i) {
        const auto& fields = read_array(bindings.ptr[i], "binding", 4);
        declare.bindings.push_back({.queue = std::string(read_text(fields.ptr[0], "binding queue")),
                                    .exchange = std::string(read_text(fields.ptr[1], "binding exchange")),
                                    .routing_key = std::string(read_text(fields.ptr[2], "binding routing_key")),
                                    .arguments = read_table(fields.ptr[3], "arguments")});
    }
    return declare;
}

Publish read_publish(const Frame& frame) {
    return {frame.unsigned_at(0, "sequence"), OutboundMessage{.exchange = frame.string_at(1, "exchange"),
                                                              .routing_key = frame.string_at(2, "routing_key"),
                                                              .body = frame.bytes_at(3, "body"),
                                                              .content_type = frame.string_at(4, "content_type"),
                                                              .message_id = frame.string_at(5, "message_id"),
                                                              .headers = frame.table_at(6, "headers"),
                                                              .reply_to = frame.string_at(7, "reply_to"),
                                                              .persistent = frame.bool_at(8, "persistent"),
                                                              .mandatory = frame.bool_at(9, "mandatory")}};
}

Consume read_consume(const Frame& frame) {
    const std::uint64_t prefetch = frame.unsigned_at(2, "prefetch");
    if (prefetch > std::numeric_limits<std::uint16_t>::max()) malformed("prefetch does not fit 16 bits");
    return {frame.unsigned_at(0, "request"), frame.string_at(1, "queue"), static_cast<std::uint16_t>(prefetch),
            frame.string_at(3, "tag")};
}

ConsumerRequest read_consumer_request(const Frame& frame) {
    return {frame.unsigned_at(0, "request"), frame.unsigned_at(1, "consumer")};
}

Settle read_settle(const Frame& frame) {
    Settle settle{.delivery_tag = frame.unsigned_at(0, "delivery_tag")};
    if (frame.command() == Command::nack) settle.requeue = frame.bool_at(1, "requeue");
    return settle;
}

QueueRequest read_queue_request(const Frame& frame) {
    return {frame.unsigned_at(0, "request"), frame.string_at(1, "queue")};
}

std::uint64_t read_request(const Frame& frame) { return frame.unsigned_at(0, "request"); }

Welcome read_welcome(const Frame& frame) {
    const std::uint64_t heartbeat = frame.unsigned_at(2, "heartbeat");
    if (heartbeat > std::numeric_limits<std::uint32_t>::max()) malformed("heartbeat does not fit 32 bits");
    return {frame.unsigned_at(0, "request"), frame.string_at(1, "broker_name"), static_cast<std::uint32_t>(heartbeat),
            frame.unsigned_at(3, "max_frame_bytes")};
}

Failure read_failure(const Frame& frame) {
    return {frame.unsigned_at(0, "request"), read_enum(frame, 1, "failure kind", FailureKind::usage),
            frame.string_at(2, "text")};
}

Confirm read_confirm(const Frame& frame) {
    return {frame.unsigned_at(0, "sequence"),
            PublishResult{.confirmed = frame.bool_at(1, "confirmed"),
                          .routed = frame.bool_at(2, "routed"),
                          .return_reason = frame.string_at(4, "reason"),
                          .why = read_enum(frame, 3, "why", PublishResult::Unconfirmed::unsent)}};
}

Deliver read_deliver(const Frame& frame) {
    return {frame.unsigned_at(0, "consumer"), frame.unsigned_at(1, "delivery_tag"), read_message(&frame.field(2))};
}

std::optional<Deliver> read_pulled(const Frame& frame) {
    if (frame.is_nil(1)) return std::nullopt;
    const auto& fields = read_array(frame.field(1), "pulled", 1 + message_fields);
    return Deliver{0, read_unsigned(fields.ptr[0], "delivery_tag"), read_message(fields.ptr + 1)};
}

ErrorFrame read_error(const Frame& frame) {
    return {frame.unsigned_at(0, "request"), read_enum(frame, 1, "error code", ErrorCode::no_session),
            frame.string_at(2, "text")};
}

}  // namespace acemq::zmq::wire
