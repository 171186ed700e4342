// The acemq ZeroMQ wire protocol, version 3 (docs/zmq-protocol.md says it in words; this
// file and protocol.cpp are its one implementation, shared by the broker and the client).
// Every ZeroMQ message between a client's DEALER and the broker's ROUTER is one frame (the
// ROUTER adds the peer's routing id in front): a msgpack array whose first element is the
// protocol version and whose second is the command number. Internal.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/topology.hpp>
#include <acemq/transport.hpp>

#include <msgpack.hpp>

#include "msgpack/message_pack.hpp"
#include "session/answer.hpp"

namespace acemq::zmq::wire {

// The newest version this side speaks; it reads every version from 1 up to it. A frame
// carries the oldest version that has its command (version_of), except a hello, which
// carries this: the version the client speaks (docs/zmq-protocol.md §9).
inline constexpr std::uint32_t version = 3;

// The most entries one batch frame carries (docs/zmq-protocol.md §12); a reader refuses more.
inline constexpr std::size_t max_batch_entries = 4096;

enum class Command : std::uint8_t {
    // client → broker
    hello = 1,
    declare = 2,
    publish = 3,
    consume = 4,
    cancel = 5,
    release = 6,
    ack = 7,
    nack = 8,
    pull = 9,
    depth = 10,
    exists = 11,
    remove = 12,
    ping = 13,
    heartbeat = 14,  // both ways
    bye = 15,
    manage = 16,  // version 2: a management call (management_wire.hpp)
    batch = 17,   // version 3, both ways: publishes, settlements, confirms and deliveries in one frame
    // broker → client
    welcome = 32,
    reply = 33,
    failure = 34,
    confirm = 35,
    deliver = 36,
    error = 37,
    refusal = 38,  // version 2: a management call refused, by ManagementError::Reason
};

std::string_view to_string(Command command) noexcept;
// The version a frame of `command` carries: 1 for the commands of version 1, 2 for those
// version 2 added, and `version` for hello.
std::uint32_t version_of(Command command) noexcept;

// How a request failed on the broker, so the client throws the same class the embedded
// broker would have thrown in-process: error, topology, invalid_argument or usage (never
// connection, which is the client's own).
using FailureKind = session::FailureKind;

// What the broker says when a frame cannot be answered as a request: it could not be read,
// or it came from a peer that has not said hello (a broker restarted under a client).
enum class ErrorCode : std::uint8_t { malformed = 1, unsupported_version = 2, unknown_command = 3, no_session = 4 };

// A frame that breaks the protocol; what() says which part and how. The broker answers it
// with an error frame and keeps serving.
class ProtocolError : public Error {
public:
    using Error::Error;
};

// Throws the ProtocolError "acemq: malformed zmq protocol frame: WHAT".
[[noreturn]] void malformed(std::string_view what);

// Runs `read`, a reading through message_pack, saying what message_pack could not read as
// the protocol's own refusal, so a peer's bad frame is always a ProtocolError.
template <class Read>
auto protocol_read(Read&& read) -> decltype(read()) {
    try {
        return read();
    } catch (const message_pack::Malformed& error) {
        malformed(error.what());
    }
}

// One frame, unpacked: the command and its fields (after version and command). Refers into
// the frame's bytes, which must outlive it.
class Frame {
public:
    // Throws ProtocolError for anything that is not a frame of a version this side speaks, of
    // a command that version has, with at least its fields: empty, not msgpack, not an array,
    // trailing bytes, nested past the limit, longer than it says, another version
    // (is_unsupported_version), another command.
    static Frame parse(std::span<const std::byte> bytes);
    // Entry `index` of a batch frame (batch_entries), read as the frame it would be alone; it
    // refers into the batch, which must outlive it. ProtocolError when it is not a frame of a
    // command a batch may carry (publish, ack, nack, confirm, deliver).
    static Frame entry(const msgpack::object_array& entries, std::size_t index);

    Command command() const noexcept { return command_; }
    std::uint32_t version() const noexcept { return version_; }
    std::size_t size() const noexcept { return fields_.size; }
    const msgpack::object& field(std::size_t index) const;  // ProtocolError past the end

    // Typed readers of field `index`; ProtocolError naming the field when it has another type.
    std::uint64_t unsigned_at(std::size_t index, std::string_view name) const;
    bool bool_at(std::size_t index, std::string_view name) const;
    std::string string_at(std::size_t index, std::string_view name) const;
    Bytes bytes_at(std::size_t index, std::string_view name) const;
    FieldTable table_at(std::size_t index, std::string_view name) const;
    bool is_nil(std::size_t index) const;

private:
    Frame() = default;
    void read_head(const msgpack::object& top);
    msgpack::object_handle handle_;
    Command command_{};
    std::uint32_t version_ = 0;
    msgpack::object_array fields_{};
};

// The request number a frame carries first, when it has one, so that an answer to a bad
// request can name it; 0 when it cannot be read.
std::uint64_t request_of(std::span<const std::byte> bytes) noexcept;
// True when the frame names a protocol version this side does not speak.
bool is_unsupported_version(const ProtocolError& error) noexcept;

// The entries of a batch frame: ProtocolError when there are more than max_batch_entries.
const msgpack::object_array& batch_entries(const Frame& frame);
// The text of `error`, refused in entry `index` (from 0) of a batch of `count`, naming the entry.
std::string in_entry(std::string_view error, std::size_t index, std::size_t count);
// True when `command` may travel as a batch entry.
bool batchable(Command command) noexcept;
// True when a message with these headers may travel in a batch: none of its values is a
// table or an array, so a batch (two levels deeper than a frame alone) stays far below the
// nesting limit. A message whose headers nest travels alone.
bool batchable(const PackedHeaders& headers) noexcept;

// Frames for one peer, waiting to be sent as few frames as they fit in (docs/zmq-protocol.md
// §12): one waiting alone is sent as it is, two or more as one batch frame of at most
// max_batch_entries entries and `max_bytes` bytes. The frames are written where they wait,
// in one buffer: a frame written for the batch (add with a writer) is never a buffer of its
// own copied in afterwards. Nothing is sent on a timer: the I/O thread sends what waits
// whenever it has taken everything it was woken for.
class Batch {
public:
    explicit Batch(std::size_t max_bytes) : max_bytes_(max_bytes) {}

    // Whether a frame of `bytes` may join what waits without passing a limit; always, when
    // nothing waits. When it may not, send what waits (take) before adding it.
    bool fits(std::size_t bytes) const noexcept;
    // Adds the frame `write(buffer)` appends to the buffer it is given; `at_least` is a lower
    // bound of the frame's size (its body's, say). When the frame came out too large to join
    // what waited (the bound too low, or fits() not asked), it waits alone and what waited
    // before it is returned, a frame to send first; nothing otherwise. When `write` throws, the
    // frame is not added and what waited stays (if there is memory left to keep it apart from
    // the bytes written: else it is dropped too).
    template <class Write>
    [[nodiscard]] std::optional<msgpack::sbuffer> add(std::size_t at_least, const Write& write) {
        const std::size_t start = open(at_least);
        try {
            write(buffer_);
        } catch (...) {
            drop_from(start);
            throw;
        }
        return close(start);
    }
    // The same for a frame written already: the first to wait is kept as it is, without a copy.
    [[nodiscard]] std::optional<msgpack::sbuffer> add(msgpack::sbuffer frame);
    // Says that about `bytes` of frames are about to be added (what the I/O thread took at
    // once), so that a batch of them gets its room once instead of growing frame by frame. A
    // hint: it limits nothing.
    void expect(std::size_t bytes) noexcept { expected_ = bytes; }
    bool empty() const noexcept { return count_ == 0; }
    // The frame to send (what waits alone, or a batch of it all); leaves this empty.
    msgpack::sbuffer take();

private:
    // Makes room for one more frame; returns where it starts in buffer_.
    std::size_t open(std::size_t at_least);
    // Counts the frame written from `start`; when it passed a limit, it stays to wait alone
    // and what waited before it is returned.
    std::optional<msgpack::sbuffer> close(std::size_t start);
    // Forgets what a throwing writer wrote from `start` (and the head open() put before a lone frame).
    void drop_from(std::size_t start);

    std::size_t max_bytes_;
    std::size_t count_ = 0;
    std::size_t room_ = 0;      // what buffer_ is known to hold without growing
    std::size_t expected_ = 0;  // bytes of frames said to be coming (expect)
    // One frame alone, or (from the second) the batch's head followed by its entries.
    msgpack::sbuffer buffer_{0};
};

// Writes one frame. Each encode_* below returns the frame's bytes.
class Writer {
public:
    // `expected_bytes`: room reserved up front (msgpack-c's default is 8 KiB a frame, most of
    // which a confirm or an ack never uses). `frame_version`: 0 for the version the command's
    // frames carry (version_of); a hello's is the version the client asks for.
    Writer(Command command, std::uint32_t fields, std::size_t expected_bytes = 64, std::uint32_t frame_version = 0);
    // Appends the frame to `onto` (a batch's buffer) instead of a buffer of its own.
    Writer(msgpack::sbuffer& onto, Command command, std::uint32_t fields);
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    msgpack::packer<msgpack::sbuffer>& out() noexcept { return packer_; }
    Writer& text(std::string_view value);
    Writer& bytes(std::span<const std::byte> value);
    Writer& table(const FieldTable& value);
    Writer& table(const PackedHeaders& value);
    template <class T>
    Writer& value(const T& value) {
        packer_.pack(value);
        return *this;
    }
    Writer& nil();
    msgpack::sbuffer& buffer() noexcept { return *buffer_; }

private:
    void begin(Command command, std::uint32_t fields, std::uint32_t frame_version);

    msgpack::sbuffer own_{0};
    msgpack::sbuffer* buffer_;
    msgpack::packer<msgpack::sbuffer> packer_;
};

// The requests. `request` numbers a request within a session; the answer carries it back.
// A hello carries `speaks`, the version the client asks for (a client falls back to 2 for a
// broker that refuses 3, docs/zmq-protocol.md §9).
msgpack::sbuffer encode_hello(std::uint64_t request, std::string_view client_name, std::uint32_t heartbeat_millis,
                              std::uint32_t speaks = version);
msgpack::sbuffer encode_declare(std::uint64_t request, const Topology& topology);
msgpack::sbuffer encode_declare(std::uint64_t request, std::span<const ExchangeDeclaration> exchanges,
                                std::span<const QueueDeclaration> queues, std::span<const BindingDeclaration> bindings);
msgpack::sbuffer encode_publish(std::uint64_t sequence, const OutboundMessage& message);
// `arguments` (the consumer's, e.g. x-stream-offset) travel as a fifth field, appended within
// version 1 and only when there are any: to a broker whose welcome says it reads them.
msgpack::sbuffer encode_consume(std::uint64_t request, std::string_view queue, std::uint16_t prefetch,
                                std::string_view tag, const FieldTable& arguments = {});
msgpack::sbuffer encode_consumer_request(Command command, std::uint64_t request, std::uint64_t consumer);
msgpack::sbuffer encode_settle(std::uint64_t delivery_tag, std::optional<bool> nack_requeue);
msgpack::sbuffer encode_queue_request(Command command, std::uint64_t request, std::string_view queue);
msgpack::sbuffer encode_ping(std::uint64_t request);
msgpack::sbuffer encode_bare(Command command);  // heartbeat, bye

// The elements of declare's lists (docs/zmq-protocol.md §3.1), which the management answers reuse with fields
// `appended` after them (management_wire.hpp). Readers check for at least their own fields.
void pack_exchange(Writer& out, const ExchangeDeclaration& exchange, std::uint32_t appended = 0);
void pack_queue(Writer& out, const QueueDeclaration& queue, std::uint32_t appended = 0);
void pack_binding(Writer& out, const BindingDeclaration& binding);
ExchangeDeclaration read_exchange(const msgpack::object& element);
QueueDeclaration read_queue(const msgpack::object& element);
BindingDeclaration read_binding(const msgpack::object& element);

// The answers.
// With a fifth field, appended within version 1: true, this broker reads a consume's arguments.
msgpack::sbuffer encode_welcome(std::uint64_t request, std::string_view broker_name, std::uint32_t heartbeat_millis,
                                std::uint64_t max_frame_bytes);
// A reply's value: nil, an unsigned number or a bool, as the request asks (see the document).
msgpack::sbuffer encode_reply_nil(std::uint64_t request);
msgpack::sbuffer encode_reply_unsigned(std::uint64_t request, std::uint64_t value);
msgpack::sbuffer encode_reply_bool(std::uint64_t request, bool value);
// The answer to ping: nil, then `trouble`, why the broker is not fully serving ("" when it
// is; a field appended within version 1, docs/zmq-protocol.md §4.1).
msgpack::sbuffer encode_reply_ping(std::uint64_t request, std::string_view trouble);
// The answer to pull: nil for an empty queue, else the delivery.
msgpack::sbuffer encode_reply_pulled(std::uint64_t request, std::uint64_t delivery_tag, const InboundMessage& message);
msgpack::sbuffer encode_failure(std::uint64_t request, FailureKind kind, std::string_view text);
msgpack::sbuffer encode_confirm(std::uint64_t sequence, const PublishResult& result);
msgpack::sbuffer encode_deliver(std::uint64_t consumer, std::uint64_t delivery_tag, const InboundMessage& message);
// The same two frames appended to `onto` (what a Batch's writer is given).
void write_confirm(msgpack::sbuffer& onto, std::uint64_t sequence, const PublishResult& result);
void write_deliver(msgpack::sbuffer& onto, std::uint64_t consumer, std::uint64_t delivery_tag,
                   const InboundMessage& message);
msgpack::sbuffer encode_error(std::uint64_t request, ErrorCode code, std::string_view text);

// Readers of the fields of each command, after Frame::parse; ProtocolError when a field is
// missing or of another type.
struct Hello {
    std::uint64_t request;
    std::string client_name;
    std::uint32_t heartbeat_millis;
};
Hello read_hello(const Frame& frame);

struct Declare {
    std::uint64_t request;
    std::vector<ExchangeDeclaration> exchanges;
    std::vector<QueueDeclaration> queues;
    std::vector<BindingDeclaration> bindings;
};
Declare read_declare(const Frame& frame);

struct Publish {
    std::uint64_t sequence;
    OutboundMessage message;
};
Publish read_publish(const Frame& frame);

struct Consume {
    std::uint64_t request;
    std::string queue;
    std::uint16_t prefetch;
    std::string tag;
    FieldTable arguments;  // empty when the frame has none
};
Consume read_consume(const Frame& frame);

struct ConsumerRequest {  // cancel, release
    std::uint64_t request;
    std::uint64_t consumer;
};
ConsumerRequest read_consumer_request(const Frame& frame);

struct Settle {  // ack, nack
    std::uint64_t delivery_tag;
    bool requeue = false;  // nack only
};
Settle read_settle(const Frame& frame);

struct QueueRequest {  // pull, depth, exists, remove
    std::uint64_t request;
    std::string queue;
};
QueueRequest read_queue_request(const Frame& frame);

std::uint64_t read_request(const Frame& frame);  // ping, and the first field of every answer

struct Welcome {
    std::uint64_t request;
    std::string broker_name;
    std::uint32_t heartbeat_millis;
    std::uint64_t max_frame_bytes;
    // The broker reads a consume's arguments; false from a broker older than them, whose
    // welcome has four fields.
    bool consumer_arguments = false;
};
Welcome read_welcome(const Frame& frame);

struct Failure {
    std::uint64_t request;
    FailureKind kind;
    std::string text;
};
Failure read_failure(const Frame& frame);

struct Confirm {
    std::uint64_t sequence;
    PublishResult result;
};
Confirm read_confirm(const Frame& frame);

struct Deliver {
    std::uint64_t consumer;
    std::uint64_t delivery_tag;
    InboundMessage message;
};
Deliver read_deliver(const Frame& frame);
// The reply to pull: nullopt for an empty queue.
std::optional<Deliver> read_pulled(const Frame& frame);
// The reply to ping: its `trouble`; "" from a broker that is fully serving, or that predates the field.
std::string read_ping_reply(const Frame& frame);

struct ErrorFrame {
    std::uint64_t request;
    ErrorCode code;
    std::string text;
};
ErrorFrame read_error(const Frame& frame);

}  // namespace acemq::zmq::wire
