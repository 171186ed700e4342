// The transactional outbox: write the message into your database in the same transaction
// as the business rows it announces, and let a relay publish it after the commit. One
// decision, both rows: roll back and the message never existed; commit and it goes out,
// at least once (a crash between the broker's confirm and the delete sends it again, so
// consumers dedupe by message id, e.g. with the idempotency store).
//
//   acemq::SqlOutboxStore outbox{db};
//   {
//       acemq::sql::Transaction tx = db.begin();
//       save_order(tx, order);
//       outbox.add(acemq::record(bus, "orders-events", "order.placed", order), tx);
//       tx.commit();
//   }
//   acemq::OutboxRelay relay{bus, outbox, {.interval = 1s}};
//   relay.start();                                    // twice is a no-op
//
// Stores: InMemoryOutboxStore (<acemq/stores/memory_outbox_store.hpp>, tests only) and SqlOutboxStore
// (<acemq/stores/sql_outbox_store.hpp>, SQLite and PostgreSQL). Adding is store-specific, because the
// SQL store must be handed the caller's transaction and the in-memory one has none; the
// relay needs only what OutboxStore below declares.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/bus.hpp>
#include <acemq/codec.hpp>
#include <acemq/detail/outbox.hpp>
#include <acemq/envelope.hpp>
#include <acemq/error.hpp>
#include <acemq/metrics.hpp>

namespace acemq {

// One message waiting in the outbox: already encoded, so the relay never needs the payload
// types. A plain value.
struct OutboxRecord {
    std::string id;        // the message id (= the envelope id); the outbox's dedup key
    std::string exchange;  // "" = the default exchange
    std::string routing_key;
    Bytes body;
    std::string content_type;
    Headers headers;           // the rendered envelope: x-acemq-* and application headers
    EpochMillis created_at{};  // publish order, and where the relay's lag is measured from
    int attempts = 0;          // failed publishes so far
    std::string last_error;    // why the last publish failed; "" = none
    // Why a store could not read this record back (headers that are not the JSON the
    // outbox writes, a body that is not bytes, ...), naming its id; "" = it could. What
    // could not be read is left empty. The relay counts such a record as a failed publish
    // without sending it, so it retires at max_attempts like any other.
    std::string unreadable;

    friend bool operator==(const OutboxRecord&, const OutboxRecord&) = default;
};

struct RecordOptions {
    // Used as given, except that empty fields take a new message's defaults: id (a fresh
    // UUID), type (the routing key), correlation (the id), first seen (now). The origin is
    // not filled in: a caller's envelope says who it is from, or nobody.
    std::optional<Envelope> envelope{};
    std::shared_ptr<const Codec> codec{};  // default: the bus's codec
};

// Makes the record for `value`, to go to `exchange` with `routing_key`: encodes it now,
// inside the caller's transaction, so what is stored is bytes + content type + headers. No
// I/O. Throws EncodeError for a value the codec cannot carry and InvalidArgument for an
// envelope that must not be sent.
template <class T>
OutboxRecord record(const Bus& bus, std::string exchange, std::string routing_key, const T& value,
                    RecordOptions options = {}) {
    const Codec& codec = options.codec ? *options.codec : *bus.codec();
    Envelope envelope = detail::outbox_envelope(bus, routing_key, std::move(options.envelope));
    Encoded encoded = encode(codec, value);
    OutboxRecord made;
    made.headers = render_headers(envelope);
    made.id = std::move(envelope.id);
    made.exchange = std::move(exchange);
    made.routing_key = std::move(routing_key);
    made.body = std::move(encoded.body);
    made.content_type = std::move(encoded.content_type);
    made.created_at = epoch_millis_now();
    return made;
}

// The same for a message straight to the queue named `queue` (the default exchange, as
// Bus::publisher_to_queue).
template <class T>
OutboxRecord record_to_queue(const Bus& bus, std::string queue, const T& value, RecordOptions options = {}) {
    return record(bus, "", std::move(queue), value, std::move(options));
}

// InvalidArgument ("an outbox record needs an id") for an empty id; every store's add()
// checks with it.
void check_outbox_id(std::string_view id);

// What the relay needs of a store. Every member may be called from any thread.
class OutboxStore {
public:
    virtual ~OutboxStore() = default;

    // Up to `limit` records (0 = all) that are due, oldest first (created_at, then id or
    // insertion order), never one at max_attempts or more. A store that leases rows hands
    // each row to one caller at a time until it is published, failed, released or the
    // lease runs out.
    virtual std::vector<OutboxRecord> pending(std::size_t limit) = 0;
    // The broker confirmed it: remove it. Unknown ids are fine (twice is fine).
    virtual void mark_published(std::string_view id) = 0;
    // One more failed attempt, with why; the record is kept (and retired at the limit).
    virtual void record_failure(std::string_view id, std::string_view error) = 0;
    // Gives back records pending() handed out that the relay did not get to (it stops at
    // the first failure to keep order). A store without leases has nothing to give back.
    virtual void release(std::span<const std::string> ids);
    // Records at max_attempts or more, oldest first: kept for a person to look at.
    virtual std::vector<OutboxRecord> retired() = 0;
    // Every record, retired ones included.
    virtual std::size_t count() = 0;
};

// What the relay did with one record: the family's acemq.outbox.total{exchange,
// routing.key, outcome} and, for a published one, acemq.outbox.lag (seconds since the
// record's created_at, never negative). Telemetry maps these to those names.
enum class RelayOutcome { published, failed };

struct RelayedEvent {
    std::string_view id;
    std::string_view exchange;
    std::string_view routing_key;
    RelayOutcome outcome;
    std::optional<std::chrono::duration<double>> lag;  // published only
    std::string_view error;                            // failed only
};

// Called on the relay's sweeping thread, after the publish; quick, must not throw (an
// exception from it is logged and dropped).
class OutboxObserver {
public:
    virtual ~OutboxObserver() = default;
    virtual void relayed(const RelayedEvent& event) = 0;
};

// An observer that reports the relay under the family's metric names: acemq.outbox.total
// {exchange, routing.key, outcome} for every record, and acemq.outbox.lag (seconds, same
// labels) for every published one. Pass it as RelayOptions::observer.
std::shared_ptr<OutboxObserver> outbox_metrics(std::shared_ptr<Metrics> metrics);

struct RelayOptions {
    std::chrono::milliseconds interval{1000};  // between sweeps of the running relay; > 0
    std::size_t batch = 100;                   // records per sweep; >= 1
    std::shared_ptr<OutboxObserver> observer{};
};

// Publishes what the outbox holds, oldest first, through the bus's transport directly
// (beneath the interceptors: relayed messages are not publishes of this process, and the
// outbox's own counters are their only signal). Every message goes out persistent and
// mandatory, with the stored id, headers, body and content type. A message that reaches
// no queue or is not confirmed is a PublishError in the words and with the reason a send
// would have (refused, in_doubt, paused when the broker blocked the connection, ...), and a record
// the store could not read back (OutboxRecord::unreadable) is a DecodeError naming it,
// sent nowhere. Either way the record's failure is recorded and the sweep stops there, so
// nothing overtakes it. A record that failed max_attempts times retires and stops
// blocking the rest (a paused publish counts too, as in the family).
//
// Several relays on one SqlOutboxStore table are safe: each claims its batch with a lease.
// Order then holds within one relay's batch, not across relays.
//
// Thread-safe. Sweeps of one relay never overlap: a sweep() called while the running relay
// sweeps waits for it. Neither copyable nor movable (the sweeping thread points at it).
class OutboxRelay {
public:
    // Keeps references to `bus` and `store`: both must outlive the relay. Throws
    // InvalidArgument for an interval that is not positive or a batch of 0.
    OutboxRelay(Bus& bus, OutboxStore& store, RelayOptions options = {});
    ~OutboxRelay();  // close()
    OutboxRelay(const OutboxRelay&) = delete;
    OutboxRelay& operator=(const OutboxRelay&) = delete;

    // Starts sweeping every interval (on the bus's clock, BusOptions.clock), on a thread of
    // the relay's own, the first sweep one interval from now. A sweep that throws is logged
    // and the next one comes an interval later. Calling it again while running does
    // nothing; after close() it throws UsageError (make a new relay).
    void start();
    // Publishes one batch now and returns how many records went out. Throws what stopped
    // it (PublishError, a store's DatabaseError, ...) with the records still in the outbox.
    std::size_t sweep();
    // Stops the running relay, waiting for a sweep in flight to finish (stopping between
    // a publish and its removal is what sends a message twice). Idempotent.
    void close();

    // Totals since construction, for tests and health checks.
    std::uint64_t published() const noexcept;
    std::uint64_t failed() const noexcept;

private:
    void publish(OutboxRecord& record);
    void tell(const RelayedEvent& event) const;

    struct State;  // the bus, the store, the options, the locks and the sweeping thread
    std::unique_ptr<State> state_;
};

}  // namespace acemq
