#include "zmq/protocol.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "msgpack/message_pack.hpp"

namespace acemq::zmq::wire {

namespace {

using message_pack::message_fields;
using message_pack::message_size_hint;
using message_pack::pack_message;
using message_pack::read_array;
using message_pack::read_bool;
using message_pack::read_bytes;
using message_pack::read_message;
using message_pack::read_packed_table;
using message_pack::read_table;
using message_pack::read_text;
using message_pack::read_unsigned;

template <class Enum>
Enum read_enum(const Frame& frame, std::size_t index, std::string_view name, Enum last) {
    const std::uint64_t value = frame.unsigned_at(index, name);
    if (value > static_cast<std::uint64_t>(last))
        malformed(std::string(name) + " " + std::to_string(value) + " is unknown");
    return static_cast<Enum>(value);
}

}  // namespace

void malformed(std::string_view what) {
    throw ProtocolError("acemq: malformed zmq protocol frame: " + std::string(what));
}

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
    case Command::manage: return "manage";
    case Command::batch: return "batch";
    case Command::welcome: return "welcome";
    case Command::reply: return "reply";
    case Command::failure: return "failure";
    case Command::confirm: return "confirm";
    case Command::deliver: return "deliver";
    case Command::error: return "error";
    case Command::refusal: return "refusal";
    }
    return "unknown";
}

namespace {

// The version that brought `command` in: a frame of an older version does not have it.
std::uint32_t introduced_in(Command command) noexcept {
    if (command == Command::batch) return 3;
    return command == Command::manage || command == Command::refusal ? 2 : 1;
}

}  // namespace

std::uint32_t version_of(Command command) noexcept {
    return command == Command::hello ? version : introduced_in(command);
}

namespace {

// The fields each command carries at least (a later version may append more); nullopt for a
// number that is no command in `frame_version`.
std::optional<std::size_t> fields_of(std::uint64_t command, std::uint64_t frame_version) {
    if (command > 0xff || introduced_in(static_cast<Command>(command)) > frame_version) return std::nullopt;
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
    case Command::manage: return 3;
    case Command::batch: return 1;
    case Command::welcome: return 4;
    case Command::reply: return 2;
    case Command::failure: return 3;
    case Command::confirm: return 5;
    case Command::deliver: return 2 + message_fields;
    case Command::error: return 3;
    case Command::refusal: return 3;
    }
    return std::nullopt;
}

constexpr std::string_view version_refused = "acemq: zmq protocol version ";

}  // namespace

Frame Frame::parse(std::span<const std::byte> bytes) {
    return protocol_read([&] {
        Frame frame;
        frame.handle_ = message_pack::unpack_checked(bytes, "frame");
        frame.read_head(frame.handle_.get());
        return frame;
    });
}

Frame Frame::entry(const msgpack::object_array& entries, std::size_t index) {
    return protocol_read([&] {
        Frame frame;
        frame.read_head(entries.ptr[index]);
        if (!batchable(frame.command_)) malformed(std::string(to_string(frame.command_)) + " cannot travel in a batch");
        return frame;
    });
}

void Frame::read_head(const msgpack::object& top) {
    if (top.type != msgpack::type::ARRAY)
        malformed("it is a " + std::string(message_pack::type_name(top.type)) + ", not an array");
    if (top.via.array.size < 2) malformed("it has no version and command");
    const msgpack::object* head = top.via.array.ptr;
    const std::uint64_t frame_version = read_unsigned(head[0], "version");
    if (frame_version < 1 || frame_version > wire::version)
        throw ProtocolError(std::string(version_refused) + std::to_string(frame_version) +
                            " is not spoken here (this side speaks versions 1 to " + std::to_string(wire::version) +
                            ")");
    const std::uint64_t command = read_unsigned(head[1], "command");
    const auto needed = fields_of(command, frame_version);
    if (!needed)
        malformed("command " + std::to_string(command) + " is unknown in protocol version " +
                  std::to_string(frame_version));
    command_ = static_cast<Command>(command);
    version_ = static_cast<std::uint32_t>(frame_version);
    fields_ = msgpack::object_array{top.via.array.size - 2, top.via.array.ptr + 2};
    if (fields_.size < *needed)
        malformed(std::string(to_string(command_)) + " needs " + std::to_string(*needed) + " fields, has " +
                  std::to_string(fields_.size));
}

const msgpack::object_array& batch_entries(const Frame& frame) {
    return protocol_read([&]() -> const msgpack::object_array& {
        const auto& entries = read_array(frame.field(0), "entries", 0);
        if (entries.size > max_batch_entries)
            malformed("a batch of " + std::to_string(entries.size) + " entries is past the limit of " +
                      std::to_string(max_batch_entries) + " a frame");
        return entries;
    });
}

std::string in_entry(std::string_view error, std::size_t index, std::size_t count) {
    static constexpr std::string_view prefix = "acemq: malformed zmq protocol frame: ";
    const std::string entry = "batch entry " + std::to_string(index + 1) + " of " + std::to_string(count) + ": ";
    if (error.starts_with(prefix)) return std::string(prefix) + entry + std::string(error.substr(prefix.size()));
    if (error.starts_with("acemq: ")) error.remove_prefix(7);
    return "acemq: " + entry + std::string(error);
}

bool batchable(Command command) noexcept {
    switch (command) {
    case Command::publish:
    case Command::ack:
    case Command::nack:
    case Command::confirm:
    case Command::deliver: return true;
    default: return false;
    }
}

bool batchable(const PackedHeaders& headers) noexcept { return !headers.has_nested_values(); }

namespace {

// A batch frame's head: [3, 17, entries] with the entries' array header as an array 32, so
// that it can be written before the entries are counted and filled in after.
constexpr std::size_t batch_head_bytes = 8;
// What a batch's buffer starts with once it holds two frames.
constexpr std::size_t batch_room = 16 * 1024;

void write_head(char* at, std::size_t entries) {
    const auto count = static_cast<std::uint32_t>(entries);
    const char head[batch_head_bytes] = {
        char(0x93),        char(version_of(Command::batch)), char(Command::batch),      char(0xdd),
        char(count >> 24), char((count >> 16) & 0xff),       char((count >> 8) & 0xff), char(count & 0xff)};
    std::memcpy(at, head, batch_head_bytes);
}

}  // namespace

bool Batch::fits(std::size_t bytes) const noexcept {
    if (count_ == 0) return true;
    const std::size_t waiting = count_ == 1 ? batch_head_bytes + buffer_.size() : buffer_.size();
    return count_ < max_batch_entries && waiting + bytes <= max_bytes_;
}

std::size_t Batch::open(std::size_t at_least) {
    if (count_ == 0) {
        // Room for the frame (its fields beside the body), and for the frames said to be coming.
        room_ = std::max(at_least + 256, batch_head_bytes + expected_);
        buffer_ = msgpack::sbuffer(room_);
        return 0;
    }
    if (count_ == 1) {
        // A second frame: the one waiting becomes the batch's first entry, after the head.
        const std::size_t alone = buffer_.size();
        const char head[batch_head_bytes] = {};
        if (room_ >= batch_head_bytes + alone + at_least) {
            buffer_.write(head, batch_head_bytes);
            std::memmove(buffer_.data() + batch_head_bytes, buffer_.data(), alone);
        } else {
            // Moved into a buffer with room for the entries to come: grown a frame at a time, a
            // busy batch of a few hundred would be moved again and again.
            room_ =
                std::max({batch_room, 2 * (batch_head_bytes + alone) + at_least, batch_head_bytes + alone + expected_});
            msgpack::sbuffer batch(room_);
            batch.write(head, batch_head_bytes);
            batch.write(buffer_.data(), alone);
            buffer_ = std::move(batch);
        }
    }
    return buffer_.size();
}

std::optional<msgpack::sbuffer> Batch::close(std::size_t start) {
    ++count_;
    const std::size_t written = buffer_.size() - start;
    expected_ -= std::min(expected_, written);
    room_ = std::max(room_, buffer_.size());
    if (count_ == 1 || (count_ <= max_batch_entries && buffer_.size() <= max_bytes_)) return std::nullopt;
    // Past a limit (the frame larger than its lower bound promised, or fits() not asked): it
    // waits alone, and what waited before it goes, copied out.
    msgpack::sbuffer alone(written);
    alone.write(buffer_.data() + start, written);
    const std::size_t before = count_ - 1;
    // One frame before it had been made a batch's first entry: it goes without the head.
    const std::size_t from = before == 1 ? batch_head_bytes : 0;
    if (before >= 2) write_head(buffer_.data(), before);
    msgpack::sbuffer waited(start - from);
    waited.write(buffer_.data() + from, start - from);
    buffer_ = std::move(alone);
    room_ = written;
    count_ = 1;
    return waited;
}

void Batch::drop_from(std::size_t start) {
    const std::size_t from = count_ == 1 ? batch_head_bytes : 0;
    if (start == from) {
        buffer_ = msgpack::sbuffer(0);
        room_ = 0;
        return;
    }
    try {
        // An sbuffer cannot be cut short: what waited is copied out without the partial frame.
        msgpack::sbuffer kept(start - from);
        kept.write(buffer_.data() + from, start - from);
        buffer_ = std::move(kept);
        room_ = start - from;
    } catch (const std::bad_alloc&) {
        // Nothing left to keep it with: dropped, as add() says, rather than sent torn.
        buffer_ = msgpack::sbuffer(0);
        count_ = 0;
        room_ = 0;
        throw;
    }
}

std::optional<msgpack::sbuffer> Batch::add(msgpack::sbuffer frame) {
    if (count_ == 0) {
        expected_ -= std::min(expected_, frame.size());
        room_ = frame.size();
        buffer_ = std::move(frame);
        count_ = 1;
        return std::nullopt;
    }
    return add(frame.size(), [&frame](msgpack::sbuffer& onto) { onto.write(frame.data(), frame.size()); });
}

msgpack::sbuffer Batch::take() {
    if (count_ >= 2) write_head(buffer_.data(), count_);
    count_ = 0;
    return std::exchange(buffer_, msgpack::sbuffer(0));
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
    return protocol_read([&] { return read_unsigned(field(index), name); });
}
bool Frame::bool_at(std::size_t index, std::string_view name) const {
    return protocol_read([&] { return read_bool(field(index), name); });
}
std::string Frame::string_at(std::size_t index, std::string_view name) const {
    return protocol_read([&] { return std::string(read_text(field(index), name)); });
}
Bytes Frame::bytes_at(std::size_t index, std::string_view name) const {
    return protocol_read([&] {
        const std::span<const std::byte> bytes = read_bytes(field(index), name);
        return Bytes(bytes.begin(), bytes.end());
    });
}
FieldTable Frame::table_at(std::size_t index, std::string_view name) const {
    return protocol_read([&] { return read_table(field(index), name); });
}
bool Frame::is_nil(std::size_t index) const { return field(index).type == msgpack::type::NIL; }

// Inlined into both constructors: every frame starts here, a publish's and an ack's on the
// client's I/O path (out of line it cost about 27 instructions a frame, callgrind).
[[gnu::always_inline]] inline void Writer::begin(Command command, std::uint32_t fields, std::uint32_t frame_version) {
    packer_.pack_array(fields + 2);
    packer_.pack(frame_version != 0 ? frame_version : version_of(command));
    packer_.pack(static_cast<std::uint8_t>(command));
}
Writer::Writer(Command command, std::uint32_t fields, std::size_t expected_bytes, std::uint32_t frame_version)
    : own_(expected_bytes), buffer_(&own_), packer_(own_) {
    begin(command, fields, frame_version);
}
Writer::Writer(msgpack::sbuffer& onto, Command command, std::uint32_t fields) : buffer_(&onto), packer_(onto) {
    begin(command, fields, 0);
}
Writer& Writer::text(std::string_view value) {
    message_pack::pack_text(packer_, value);
    return *this;
}
Writer& Writer::bytes(std::span<const std::byte> value) {
    message_pack::pack_bytes(packer_, value);
    return *this;
}
Writer& Writer::table(const FieldTable& value) {
    message_pack::pack_table(packer_, value);
    return *this;
}
Writer& Writer::table(const PackedHeaders& value) {
    message_pack::pack_table(packer_, value);
    return *this;
}
Writer& Writer::nil() {
    packer_.pack_nil();
    return *this;
}

msgpack::sbuffer encode_hello(std::uint64_t request, std::string_view client_name, std::uint32_t heartbeat_millis,
                              std::uint32_t speaks) {
    Writer out(Command::hello, 3, 64, speaks);
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
    for (const ExchangeDeclaration& exchange : exchanges) pack_exchange(out, exchange);
    packer.pack_array(static_cast<std::uint32_t>(queues.size()));
    for (const QueueDeclaration& queue : queues) pack_queue(out, queue);
    packer.pack_array(static_cast<std::uint32_t>(bindings.size()));
    for (const BindingDeclaration& binding : bindings) pack_binding(out, binding);
    return std::move(out.buffer());
}

void pack_exchange(Writer& out, const ExchangeDeclaration& exchange, std::uint32_t appended) {
    out.out().pack_array(5 + appended);
    out.text(exchange.name).value(static_cast<std::uint8_t>(exchange.kind));
    out.value(exchange.durable).value(exchange.auto_delete).table(exchange.arguments);
}

void pack_queue(Writer& out, const QueueDeclaration& queue, std::uint32_t appended) {
    out.out().pack_array(6 + appended);
    out.text(queue.name).value(static_cast<std::uint8_t>(queue.type)).value(queue.durable);
    out.value(queue.exclusive).value(queue.auto_delete).table(queue.arguments);
}

void pack_binding(Writer& out, const BindingDeclaration& binding) {
    out.out().pack_array(4);
    out.text(binding.queue).text(binding.exchange).text(binding.routing_key).table(binding.arguments);
}

msgpack::sbuffer encode_publish(std::uint64_t sequence, const OutboundMessage& message) {
    Writer out(Command::publish, 10, message_size_hint(message.body.size(), message.headers.size()));
    out.value(sequence).text(message.exchange).text(message.routing_key).bytes(message.body);
    out.text(message.content_type).text(message.message_id).table(message.headers.view()).text(message.reply_to);
    out.value(message.persistent).value(message.mandatory);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_consume(std::uint64_t request, std::string_view queue, std::uint16_t prefetch,
                                std::string_view tag, const FieldTable& arguments) {
    Writer out(Command::consume, arguments.empty() ? 4 : 5);
    out.value(request).text(queue).value(prefetch).text(tag);
    if (!arguments.empty()) out.table(arguments);
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
    Writer out(Command::welcome, 5);
    out.value(request).text(broker_name).value(heartbeat_millis).value(max_frame_bytes).value(true);
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

msgpack::sbuffer encode_reply_ping(std::uint64_t request, std::string_view trouble) {
    Writer out(Command::reply, 3);
    out.value(request).nil().text(trouble);
    return std::move(out.buffer());
}

msgpack::sbuffer encode_reply_pulled(std::uint64_t request, std::uint64_t delivery_tag, const InboundMessage& message) {
    Writer out(Command::reply, 2, message_size_hint(message.body().size(), message.headers().size()));
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

void write_confirm(msgpack::sbuffer& onto, std::uint64_t sequence, const PublishResult& result) {
    Writer out(onto, Command::confirm, 5);
    out.value(sequence).value(result.confirmed).value(result.routed).value(static_cast<std::uint8_t>(result.why));
    out.text(result.return_reason);
}

msgpack::sbuffer encode_confirm(std::uint64_t sequence, const PublishResult& result) {
    msgpack::sbuffer frame(64);
    write_confirm(frame, sequence, result);
    return frame;
}

void write_deliver(msgpack::sbuffer& onto, std::uint64_t consumer, std::uint64_t delivery_tag,
                   const InboundMessage& message) {
    Writer out(onto, Command::deliver, 2 + message_fields);
    out.value(consumer).value(delivery_tag);
    pack_message(out.out(), message);
}

msgpack::sbuffer encode_deliver(std::uint64_t consumer, std::uint64_t delivery_tag, const InboundMessage& message) {
    msgpack::sbuffer frame(message_size_hint(message.body().size(), message.headers().size()));
    write_deliver(frame, consumer, delivery_tag, message);
    return frame;
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

ExchangeDeclaration read_exchange(const msgpack::object& element) {
    return protocol_read([&] {
        const auto& fields = read_array(element, "exchange", 5);
        const std::uint64_t kind = read_unsigned(fields.ptr[1], "exchange kind");
        if (kind > static_cast<std::uint64_t>(ExchangeKind::headers))
            malformed("exchange kind " + std::to_string(kind) + " is unknown");
        return ExchangeDeclaration{.name = std::string(read_text(fields.ptr[0], "exchange name")),
                                   .kind = static_cast<ExchangeKind>(kind),
                                   .durable = read_bool(fields.ptr[2], "durable"),
                                   .auto_delete = read_bool(fields.ptr[3], "auto_delete"),
                                   .arguments = read_table(fields.ptr[4], "arguments")};
    });
}

QueueDeclaration read_queue(const msgpack::object& element) {
    return protocol_read([&] {
        const auto& fields = read_array(element, "queue", 6);
        const std::uint64_t type = read_unsigned(fields.ptr[1], "queue type");
        if (type > static_cast<std::uint64_t>(QueueType::stream))
            malformed("queue type " + std::to_string(type) + " is unknown");
        return QueueDeclaration{.name = std::string(read_text(fields.ptr[0], "queue name")),
                                .type = static_cast<QueueType>(type),
                                .durable = read_bool(fields.ptr[2], "durable"),
                                .exclusive = read_bool(fields.ptr[3], "exclusive"),
                                .auto_delete = read_bool(fields.ptr[4], "auto_delete"),
                                .arguments = read_table(fields.ptr[5], "arguments")};
    });
}

BindingDeclaration read_binding(const msgpack::object& element) {
    return protocol_read([&] {
        const auto& fields = read_array(element, "binding", 4);
        return BindingDeclaration{.queue = std::string(read_text(fields.ptr[0], "binding queue")),
                                  .exchange = std::string(read_text(fields.ptr[1], "binding exchange")),
                                  .routing_key = std::string(read_text(fields.ptr[2], "binding routing_key")),
                                  .arguments = read_table(fields.ptr[3], "arguments")};
    });
}

Declare read_declare(const Frame& frame) {
    return protocol_read([&] {
        Declare declare{.request = frame.unsigned_at(0, "request"), .exchanges = {}, .queues = {}, .bindings = {}};
        const auto& exchanges = read_array(frame.field(1), "exchanges", 0);
        for (std::uint32_t i = 0; i < exchanges.size; ++i) declare.exchanges.push_back(read_exchange(exchanges.ptr[i]));
        const auto& queues = read_array(frame.field(2), "queues", 0);
        for (std::uint32_t i = 0; i < queues.size; ++i) declare.queues.push_back(read_queue(queues.ptr[i]));
        const auto& bindings = read_array(frame.field(3), "bindings", 0);
        for (std::uint32_t i = 0; i < bindings.size; ++i) declare.bindings.push_back(read_binding(bindings.ptr[i]));
        return declare;
    });
}

Publish read_publish(const Frame& frame) {
    Publish publish{frame.unsigned_at(0, "sequence"),
                    OutboundMessage{.exchange = frame.string_at(1, "exchange"),
                                    .routing_key = frame.string_at(2, "routing_key"),
                                    .body = frame.bytes_at(3, "body"),
                                    .content_type = frame.string_at(4, "content_type"),
                                    .message_id = frame.string_at(5, "message_id")}};
    OutboundMessage& message = publish.message;
    // Packed for the message's id, as the broker's message block keeps them: copied, not packed again.
    message.headers = protocol_read([&] { return read_packed_table(frame.field(6), "headers", message.message_id); });
    message.reply_to = frame.string_at(7, "reply_to");
    message.persistent = frame.bool_at(8, "persistent");
    message.mandatory = frame.bool_at(9, "mandatory");
    return publish;
}

Consume read_consume(const Frame& frame) {
    const std::uint64_t prefetch = frame.unsigned_at(2, "prefetch");
    if (prefetch > std::numeric_limits<std::uint16_t>::max()) malformed("prefetch does not fit 16 bits");
    return {frame.unsigned_at(0, "request"), frame.string_at(1, "queue"), static_cast<std::uint16_t>(prefetch),
            frame.string_at(3, "tag"), frame.size() > 4 ? frame.table_at(4, "arguments") : FieldTable{}};
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
            frame.unsigned_at(3, "max_frame_bytes"), frame.size() > 4 && frame.bool_at(4, "consumer_arguments")};
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
    return protocol_read([&] {
        return Deliver{frame.unsigned_at(0, "consumer"), frame.unsigned_at(1, "delivery_tag"),
                       read_message(&frame.field(2))};
    });
}

std::optional<Deliver> read_pulled(const Frame& frame) {
    if (frame.is_nil(1)) return std::nullopt;
    return protocol_read([&] {
        const auto& fields = read_array(frame.field(1), "pulled", 1 + message_fields);
        return std::optional<Deliver>(
            Deliver{0, read_unsigned(fields.ptr[0], "delivery_tag"), read_message(fields.ptr + 1)});
    });
}

std::string read_ping_reply(const Frame& frame) {
    return frame.size() > 2 ? frame.string_at(2, "trouble") : std::string();
}

ErrorFrame read_error(const Frame& frame) {
    return {frame.unsigned_at(0, "request"), read_enum(frame, 1, "error code", ErrorCode::no_session),
            frame.string_at(2, "text")};
}

}  // namespace acemq::zmq::wire
