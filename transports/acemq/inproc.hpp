// The embedded broker: RabbitMQ's routing and queue semantics, where the AceMQ contract
// depends on them, inside one process; the threads of its own are a durable broker's writer
// and its announcer ("Threads" below). It exists so the engine's whole behaviour (retry rungs that
// really come back, dead-letter queues, redelivery, prefetch) runs in a unit test or an
// edge box without RabbitMQ; a test that passes here and fails on RabbitMQ is a bug here
// ("not kinder than RabbitMQ").
//
// What it does, as RabbitMQ does:
//  - exchanges: direct, topic (`*` one word, `#` zero or more), fanout, and the default
//    exchange "" (routes to the queue named by the routing key; cannot be bound). Headers
//    exchanges are refused at declare with a TopologyError.
//  - redeclaration with other flags or arguments: TopologyError "PRECONDITION_FAILED - ..."
//    naming every difference; an identical redeclaration is a no-op.
//  - queues: FIFO, round-robin over consumers, a prefetch per consumer, requeue to the head
//    marked redelivered, exclusive queues owned by one connection, auto-delete queues that
//    go when their last consumer does.
//  - x-message-ttl with x-dead-letter-exchange / -routing-key: an expired or rejected
//    message is republished through the dead-letter exchange with an `x-death` header
//    (newest first; count, reason, queue, exchange, routing-keys, time as a timestamp) and
//    x-first-death-* / x-last-death-*. A message that would expire back into a queue it
//    already died in, with no rejection on the way, is dropped (RabbitMQ's cycle rule). A
//    dead-letter exchange that does not exist drops the message.
//    Expiry is driven by the broker's Clock, so a ManualClock (<acemq/clock.hpp>) runs a
//    five-minute rung in milliseconds. Like RabbitMQ, only the head of a queue expires: a
//    message requeued behind an older one waits its turn. Handed-out messages never expire;
//    requeued ones keep their first enqueue time.
//  - mandatory publishes that reach no queue come back routed=false, "312 NO_ROUTE";
//    others that reach no queue are dropped. A publish to an exchange that does not exist
//    comes back unconfirmed (refused), "404 NOT_FOUND - no exchange '...'", where RabbitMQ
//    closes the channel. Every other publish is confirmed.
//  - streams (x-queue-type stream, Topology::stream), as RabbitMQ serves them over AMQP
//    0-9-1: an append-only log that consuming does not take from. A consumer starts where
//    its x-stream-offset argument says: "first", "last", "next" (the default: only what is
//    appended after it subscribes), an offset (an integer of any width; below the first
//    kept, the first; past the end, the next), an AMQP timestamp (the first message
//    appended at or after it; one to come, the next), or an interval back from now ("1h",
//    units Y M D h m s); anything else is InvalidArgument naming x-stream-offset. Each
//    delivery carries its offset in the x-stream-offset header (signed 64-bit). A stream
//    consumer needs a prefetch (PRECONDITION_FAILED without), which acks, requeues and
//    rejects alike only give back: nothing is requeued or dead-lettered, and closing a
//    consumer gives nothing back. pull() on a stream is NOT_IMPLEMENTED, as basic.get is; a
//    stream must be durable, not exclusive, not auto-delete; management lists it with the
//    messages in its log and refuses to purge it. Retention: x-max-age ("7D", "3h", "90m",
//    "45s", on the broker's Clock) and x-max-length-bytes (the bodies' bytes) take the
//    oldest messages. Where it differs from RabbitMQ (docs/durability.md §2.10): every
//    message is a chunk of its own, so "last" is the last message and retention goes
//    message by message (x-stream-max-segment-size-bytes is checked and accepted, and
//    shapes nothing); the newest message is never taken, as RabbitMQ never deletes the
//    segment it writes; retention runs when the stream is published to, consumed from,
//    listed or asked its depth, not on a timer. x-message-ttl and dead-lettering do not
//    apply to a stream. A durable broker keeps a stream's log, offsets and append times
//    across a restart.
//  - durability, when given a data file (BrokerOptions::data): what it keeps and when a
//    publish is confirmed and an ack final are docs/durability.md §2.
// What it does not: x-max-length / x-expires / x-overflow / priorities
// (recorded as arguments, never enforced), per-message expiration, alternate exchanges,
// exchange-to-exchange bindings, the predeclared amq.* exchanges, consumer arguments other
// than a stream's x-stream-offset (ignored), single active consumer and filtering on
// streams, server-named queues.
//
// Threads: every member is safe to call from any thread; one mutex guards the broker.
// Deliveries are pushed by calling the consumer's DeliverFn on the thread whose publish,
// settlement, subscription or timer made them possible, or on a durable broker's announcer
// thread (which tells the broker of each commit while the writer makes the next) when a
// commit made them visible, with that lock held: a DeliverFn
// must queue the delivery and return, and must not block (a buffer as large as the
// prefetch never fills). A DeliverFn that calls back into any inproc broker gets an
// acemq::Error instead of a deadlock; a DeliverFn that throws is stopped (no further
// deliveries) and its delivery returns to the queue when its subscription closes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/clock.hpp>
#include <acemq/error.hpp>
#include <acemq/management.hpp>
#include <acemq/topology.hpp>
#include <acemq/transport.hpp>

namespace acemq::inproc {

class Broker;

// A data file that cannot be used: held by another broker, not a broker's file, corrupt, or
// unreadable. The file is left as it was.
class DataFileError : public Error {
public:
    using Error::Error;
};

struct BrokerOptions {
    // Drives message expiry; nullptr: acemq::system_clock() for a new broker, and
    // "whatever it has" for an existing one.
    std::shared_ptr<Clock> clock = nullptr;
    // The SQLite file the broker keeps its durable state in, made when it does not exist;
    // "" keeps everything in memory.
    std::string data{};
    // The SQLite VFS to open `data` with; "" is SQLite's default. For tests that simulate a
    // disk (power cuts, a full disk) and for unusual filesystems.
    std::string sqlite_vfs{};
    // The most the data file may hold, in bytes; 0: as much as the disk has. Past it,
    // persistent publishes are refused as on a full disk.
    std::uint64_t max_data_bytes = 0;
};

// The live broker named `name`, or a new one when none is alive: every transport that
// names it shares it, and it lives while any of them (or any holder of the pointer) does.
// `clock` drives message expiry; nullptr means acemq::system_clock() for a new broker and
// "whatever it has" for an existing one. Throws InvalidArgument when the broker exists
// with a different clock. A test makes the broker with a ManualClock first and keeps the
// pointer; open_transport("inproc://name") then finds it.
std::shared_ptr<Broker> broker(std::string_view name, std::shared_ptr<Clock> clock = nullptr);
// The same with every option. A new broker with `data` opens that file (DataFileError when
// it cannot be used); an existing broker must have been made with the same data file,
// else InvalidArgument.
std::shared_ptr<Broker> broker(std::string_view name, const BrokerOptions& options);

// What salvage() copied, and what it could not.
struct SalvageReport {
    std::uint64_t exchanges = 0;
    std::uint64_t queues = 0;
    std::uint64_t bindings = 0;
    std::uint64_t messages = 0;
    // One sentence for each thing that could not be copied: a row that fails its checksum
    // or cannot be read, a damaged stretch of a table, a message whose queue was not saved.
    std::vector<std::string> lost{};
};

// Copies every declaration and message of the data file `from` that can be read and passes
// its checksum into the new data file `to`, for a file a broker refuses as damaged. `from`
// is read through a copy and never changed; no broker may hold it. Throws DataFileError when
// `to` exists, or when nothing of `from` can be read (its header is damaged, say). What
// `to` holds opens like any data file, every message in it marked as it was.
SalvageReport salvage(const std::string& from, const std::string& to);

// What a connection asks of the broker.
struct ConnectionOptions {
    // On a durable broker, an ack is applied at once and its deletion rides the broker's next
    // transaction: a crash of the process before that commit brings the message back, marked
    // redelivered, never lost (an idempotent consumer makes that exactly-once). True makes an
    // ack return only once its deletion is committed, for a consumer that must not see an
    // acked message again after a crash of the process; each ack then costs a commit of its
    // own. docs/durability.md §2.3.
    bool acks_wait = false;
    // Who the connection is, for Management::sessions(): where it connects from and the name
    // its client gave ("" for none). The zmq server fills both; "" peer shows "in-process".
    std::string peer{};
    std::string client_name{};
};

// A connection to a broker as a Transport, the shape every transport opens with
// (<acemq/session.hpp>): "inproc://NAME" is the broker NAME, made when no live one has that
// name (see broker()); "inproc://NAME?data=FILE" the durable broker NAME keeping its state in
// FILE (BrokerOptions::data). InvalidArgument for another URL. acemq::connect("inproc://NAME")
// opens the same with default options.
std::shared_ptr<Transport> open(std::string_view url, ConnectionOptions options = {});

// Management (<acemq/management.hpp>) of `broker`, through its own API in this process.
// open_management("inproc://NAME[?data=FILE]") opens the broker as open() does and manages it.
std::unique_ptr<Management> manage(std::shared_ptr<Broker> broker);

// What a publish's ConfirmFn is told; see Broker::publish.
using ConfirmFn = std::function<void(PublishResult)>;
// What publish_batch tells of its i-th message; see Broker::publish_batch.
using BatchConfirmFn = std::function<void(std::size_t index, PublishResult)>;

class Broker : public std::enable_shared_from_this<Broker> {
    struct Key {
        explicit Key() = default;
    };

public:
    // A connection owns the exclusive queues it declares, the messages it pulled and its
    // subscriptions; closing it hands back what it had unsettled and deletes those queues.
    using ConnectionId = std::uint64_t;

    Broker(Key, std::string name, const BrokerOptions& options);  // made by broker() only
    ~Broker();
    Broker(const Broker&) = delete;
    Broker& operator=(const Broker&) = delete;

    const std::string& name() const noexcept;
    const std::shared_ptr<Clock>& clock() const noexcept;
    // The data file, "" for a broker in memory only.
    const std::string& data() const noexcept;
    // Why the data file refuses commits now (its last commit's error text, e.g. "disk full
    // ..."): persistent publishes to durable queues are refused until a commit succeeds
    // again. nullopt while commits succeed, and for a broker in memory only. Takes the
    // broker's lock, so an answer also says the broker is not stuck.
    std::optional<std::string> commit_failure();
    // How many messages the data file holds in quarantine: stored messages whose row failed
    // its checksum when read back at an open (a byte changed on the disk), set aside in the
    // file's `quarantine` table as they were found, never delivered. The open that finds one
    // logs it at error level. 0 for a broker in memory only. Thread-safe.
    std::uint64_t quarantined_messages() const noexcept;

    ConnectionId open_connection(ConnectionOptions options = {});
    // Closes the connection's subscriptions (their unsettled deliveries go back to their
    // queues, redelivered), returns its unsettled pulls, deletes its exclusive queues.
    // Idempotent. The members taking a ConnectionId refuse a closed one with acemq::Error.
    void close_connection(ConnectionId connection);

    // The members below mirror Transport (see transport.hpp for their contract); errors
    // are acemq::Error (TopologyError for declarations) and name RabbitMQ's reply code.
    // Deliveries are settled through this broker: settle them before the last owner of
    // the broker lets go of it.
    void declare(ConnectionId connection, const Topology& topology);
    void declare_exchange(const ExchangeDeclaration& exchange);
    void declare_queue(ConnectionId connection, const QueueDeclaration& queue);
    void bind(ConnectionId connection, const BindingDeclaration& binding);

    // Waits for the broker's word, so on a durable broker for the commit of a persistent
    // message routed to a durable queue; when no commit is under way it makes that commit on
    // this thread (docs/durability.md §2.2), running the ConfirmFns it settles here.
    PublishResult publish(OutboundMessage message);
    // Does not wait: `confirmed` is called once, on this thread before publish returns when
    // the broker decided at once, else after the commit on the announcer thread (or on that of
    // a publish waiting as above), both counted as the writer's. It must hand the result on
    // and return: it runs with the confirms and deliveries of later commits waiting behind it.
    void publish(OutboundMessage message, ConfirmFn confirmed);
    // publish(messages[i], ...) for each i in order, `confirmed(i, result)` standing for its
    // ConfirmFn, but taking the lock once for a run of messages rather than once for each: a
    // consumer settling meanwhile meets the lock held far less often.
    void publish_batch(std::vector<OutboundMessage> messages, BatchConfirmFn confirmed);

    // prefetch 0: no limit (refused for a stream). A non-empty tag must be unique on the
    // connection. spec.arguments: a stream's x-stream-offset (above); others are ignored.
    std::unique_ptr<Subscription> consume(ConnectionId connection, std::string_view queue, const ConsumeSpec& spec,
                                          DeliverFn deliver);
    std::optional<Delivery> pull(ConnectionId connection, std::string_view queue);

    // Each throws acemq::Error (NOT_FOUND) for a queue that does not exist, except
    // queue_exists and delete_queue; all throw RESOURCE_LOCKED for another connection's
    // exclusive queue.
    std::uint64_t queue_depth(ConnectionId connection, std::string_view queue);
    bool queue_exists(ConnectionId connection, std::string_view queue);
    // Drops its messages and cancels its consumers; their unsettled deliveries can still
    // be settled, and go nowhere.
    void delete_queue(ConnectionId connection, std::string_view queue);

    // What an operator asks (<acemq/management.hpp>; manage() wraps these). None takes a
    // connection or minds whose exclusive queue it is. Each but backup() takes the broker's
    // lock once, so an answer is one moment of the broker; each refuses a call from inside a
    // DeliverFn.
    // A queue or exchange that does not exist is ManagementError not_found.

    // Every exchange but the default one "", by name.
    std::vector<ExchangeSummary> exchanges();
    // Every queue, by name: its declaration, its ready messages, the deliveries handed out
    // and not settled (pulls included), its subscriptions, the bytes of the bodies of both,
    // and how long its head has waited there on the broker's Clock (a dead-lettered message
    // waits from when it came; a requeued one keeps its time). On a durable broker a message
    // whose commit is still under way is not ready yet.
    std::vector<QueueSummary> queues();
    // Every binding, by exchange, queue and routing key; the default exchange's implicit
    // ones are not listed.
    std::vector<BindingDeclaration> bindings();
    // The open connections, in the order they opened: ConnectionOptions::peer ("in-process"
    // when ""), client_name, the system clock's time at open, their subscriptions, and the
    // deliveries they hold unsettled (pulled ones too).
    std::vector<SessionSummary> sessions();
    // Copies of the ready messages at positions [from, from + count) in the order they will
    // be delivered, each as a consumer would receive it now. Nothing is taken, marked
    // (redelivered stays as it was) or written to the data file.
    std::vector<BrowsedMessage> browse(std::string_view queue, BrowseOptions options = {});
    // Drops the queue's ready messages and returns how many; on a durable broker once their
    // deletion is committed. Deliveries handed out stay with their consumers, and a requeue
    // brings one back.
    std::uint64_t purge(std::string_view queue);
    // As delete_queue above, for any connection's queue; ManagementError in_use for a queue
    // with subscriptions unless options.even_if_consumed.
    void delete_queue(std::string_view queue, DeleteOptions options);
    // The exchange and its bindings, also in the data file; InvalidArgument for "".
    void delete_exchange(std::string_view exchange);
    // Product "acemq in-process broker", ACEMQ_VERSION, the name, the time since it was made,
    // its data file: sizes of the file and its -wal, free space on its file system, opens in
    // the file's life (this one included), messages in quarantine, the commits since it
    // opened the file and how long they took (from BEGIN to a successful COMMIT, sync
    // included); details: max_data_bytes, sqlite_vfs when set, commit_failure while commits
    // fail.
    BrokerInfo info();
    // Copies the data file to the new file `path` while the broker runs, through SQLite's
    // backup API on the broker's own connection, on the writer's thread a few pages between
    // its transactions (publishers wait at most for one step, docs/durability.md §2.9). The
    // copy holds every change committed when it finished, and opens as a data file
    // (broker(..., {.data = path})). ManagementError unsupported for a broker in memory
    // only, failed when `path` exists or cannot be written (a copy begun is removed);
    // UsageError from a ConfirmFn, which runs on the writer's side.
    BackupResult backup(const std::string& path);

private:
    class Impl;
    class ConsumerSubscription;
    friend std::shared_ptr<Broker> broker(std::string_view, std::shared_ptr<Clock>);
    friend std::shared_ptr<Broker> broker(std::string_view, const BrokerOptions&);
    friend class CommitBurst;
    // Both broker(): `same_data` refuses an existing broker with another data file.
    static std::shared_ptr<Broker> find_or_make(std::string_view name, const BrokerOptions& options, bool same_data);

    std::unique_ptr<Impl> impl_;
};

}  // namespace acemq::inproc
