// A worker of the crash drill through a broker (broker_drill.hpp), started by
// test_crash_amqp.cpp (RabbitMQ) and test_crash_durable_broker.cpp (a durable acemq-broker):
//
//   crash_amqp_worker <url> <database> <payments queue> <receipts queue> <form> <crash point> <payment id>
//
// Takes the payment <payment id> off the payments queue with a real Consumer (prefetch 1),
// charging it in the SQLite <database> the way <form> says (drill.hpp), drains the
// consumer, then relays the outbox to the receipts queue once. It raises SIGKILL at
// <crash point> ("" = nowhere). An empty <payment id> only relays. The broker is the one of
// <url>, any scheme open_transport knows. Exits 0 when done, 1 with a line on stderr when anything failed.
#include <acemq/acemq.hpp>
#include <acemq/idempotency.hpp>
#include <acemq/naming.hpp>
#include <acemq/outbox.hpp>
#include <acemq/zmq.hpp>

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "../support/forwarding_transport.hpp"
#include "../support/tally.hpp"
#include "drill.hpp"

#include <acemq/stores/sql_idempotency_store.hpp>
#include <acemq/stores/sql_outbox_store.hpp>
#include <acemq/stores/sqlite.hpp>

namespace {

using namespace std::chrono_literals;

std::string crash_point;

void crash_if_at(std::string_view here) {
    if (crash_point == here) raise(SIGKILL);
}

// The broker's transport, dying right after the broker confirmed a receipt: the relay has
// published it and has not removed its row.
class CrashAfterReceipt final : public testing_support::ForwardingTransport {
public:
    CrashAfterReceipt(std::shared_ptr<acemq::Transport> inner, std::string receipts)
        : ForwardingTransport(std::move(inner)), receipts_(std::move(receipts)) {}

    acemq::PublishResult publish(acemq::OutboundMessage message) override {
        const bool receipt = message.routing_key == receipts_;
        acemq::PublishResult result = ForwardingTransport::publish(std::move(message));
        if (receipt && result.confirmed) crash_if_at(drill::relay_after_publish);
        return result;
    }

private:
    std::string receipts_;
};

// The SQL store, noting in the books each claim it answered in_progress: the drill checks
// that every redelivery after a kill at the claim met the dead worker's lease.
class NotingStore final : public acemq::IdempotencyStore {
public:
    NotingStore(acemq::sqlite::Database& db, acemq::SqlIdempotencyStore& inner) : db_(db), inner_(inner) {}

    acemq::Claim claim(const std::string& key) override {
        const acemq::Claim answer = inner_.claim(key);
        if (answer == acemq::Claim::in_progress)
            db_.connect()->execute("INSERT INTO met_in_progress (idempotency_key) VALUES (?)", {key});
        return answer;
    }
    void confirm(const std::string& key) override { inner_.confirm(key); }
    void forget(const std::string& key) override { inner_.forget(key); }

private:
    acemq::sqlite::Database& db_;
    acemq::SqlIdempotencyStore& inner_;
};

// RabbitMQ sees a killed worker's connection close at once and hands its payment on.
// acemq-broker takes a client for gone when its own heartbeat to it (every second) cannot be
// sent, or after three of the client's heartbeats are missed (a second each by default): with
// the 1 s lease this drill had, the lease was always over by then. This worker beats every
// 200 ms, so the broker takes its payment back at most 600 ms after a kill.
std::shared_ptr<acemq::Transport> open_broker(const std::string& url) {
    if (url.starts_with("zmq+")) return acemq::zmq::open(url, {.session = {.heartbeat = 200ms}});
    return acemq::open_transport(url);
}

struct Worker {
    std::string payments;
    std::string receipts;
    std::string payment_id;  // the payment this worker waits for
    acemq::sqlite::Database db;
    // A two-second lease: a redelivery after a kill at the claim waits that long, not the
    // default five minutes, and it outlasts the broker's notice of the kill (open_broker) and
    // the start of the next worker, even under a sanitizer, so the redelivery meets it.
    acemq::SqlIdempotencyStore seen{db, {.claim_timeout = 2s}};
    NotingStore noted{db, seen};
    // A relay killed after a publish holds its rows for its lease; 1 ms lets the next
    // worker's relay take them over at once.
    acemq::SqlOutboxStore outbox{db, {.lease = 1ms}};
    acemq::Bus bus;
    // Raised by the handler once the payment is settled in the books (charged now or before).
    testing_support::Tally handled;

    Worker(const std::string& url, std::string database, std::string payments_queue, std::string receipts_queue,
           std::string payment)
        : payments(std::move(payments_queue)), receipts(std::move(receipts_queue)), payment_id(std::move(payment)),
          db(std::move(database)), bus(acemq::connect(std::make_shared<CrashAfterReceipt>(open_broker(url), receipts),
                                                      {.origin = "payments@crash-drill"})) {}

    // The business half: the charge and its receipt, on the caller's transaction.
    void charge(acemq::sql::Transaction& tx, const drill::Payment& payment) {
        tx.connection().execute("INSERT INTO charged (payment_id, amount_cents) VALUES (?, ?)",
                                {payment.payment_id, payment.amount_cents});
        crash_if_at(drill::mid_transaction);
        acemq::Envelope envelope;
        envelope.id = drill::receipt_id(payment.payment_id);
        outbox.add(acemq::record_to_queue(bus, receipts, drill::Receipt{payment.payment_id, payment.amount_cents},
                                          {.envelope = envelope}),
                   tx);
    }

    acemq::Handler<drill::Payment> guarded() {
        auto take_payment = [this](const acemq::Message<drill::Payment>& message) {
            crash_if_at(drill::after_claim);  // the wrapper's claim is committed, its lease running
            acemq::sql::Transaction tx = db.begin();
            charge(tx, message.payload);
            tx.commit();
            crash_if_at(drill::after_commit_before_ack);
            settled(message.payload);
            return acemq::accept();
        };
        auto key = [](const acemq::Message<drill::Payment>& m) { return drill::idempotency_key(m.payload.payment_id); };
        return acemq::idempotent(noted, take_payment, {.key = key, .in_progress_delay = 200ms});
    }

    acemq::Handler<drill::Payment> transactional() {
        return [this](const acemq::Message<drill::Payment>& message) {
            const std::string key = drill::idempotency_key(message.payload.payment_id);
            acemq::sql::Transaction tx = db.begin();
            switch (seen.claim(key, tx)) {
            case acemq::Claim::claimed: break;
            case acemq::Claim::duplicate:  // committed before a crash: only the ack was missing
                settled(message.payload);
                return acemq::accept();
            case acemq::Claim::in_progress:  // not expected: this form never commits a claim alone
                return acemq::in_progress(200ms);
            }
            crash_if_at(drill::after_claim);
            charge(tx, message.payload);
            seen.confirm(key, tx);
            tx.commit();
            crash_if_at(drill::after_commit_before_ack);
            settled(message.payload);
            return acemq::accept();
        };
    }

    void settled(const drill::Payment& payment) {
        if (payment.payment_id == payment_id) handled.add();
    }

    void take_payment(std::string_view form) {
        if (form != drill::guard_form && form != drill::transaction_form)
            throw acemq::Error("unknown form \"" + std::string(form) + "\": give \"guard\" or \"transaction\"");
        acemq::Consumer consumer =
            bus.consume<drill::Payment>(payments, form == drill::guard_form ? guarded() : transactional(),
                                        {.prefetch = 1, .concurrency = 1, .declare = false});
        // Generous: under a sanitizer, and after a kill at the claim the lease must run out.
        if (!handled.wait_at_least(1, 30s))
            throw acemq::Error("the payment was not handled within 30 s: look for it in " +
                               acemq::dead_letter_queue(payments) + " and for the consumer's log lines above");
        // The drain lets the handler return and the consumer ack before the connection goes.
        if (!consumer.close()) throw acemq::Error("the consumer did not drain");
    }

    void relay() {
        acemq::OutboxRelay relay{bus, outbox};
        relay.sweep();
    }
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 8) {
        std::fprintf(stderr,
                     "usage: crash_amqp_worker <url> <database> <payments queue> <receipts queue> <form> "
                     "<crash point> <payment id>\n");
        return 1;
    }
    crash_point = argv[6];
    try {
        Worker worker{argv[1], argv[2], argv[3], argv[4], argv[7]};
        if (!worker.payment_id.empty()) worker.take_payment(argv[5]);
        worker.relay();
        worker.bus.close();
    } catch (const std::exception& error) {
        std::fprintf(stderr, "crash_amqp_worker (point \"%s\", payment \"%s\"): %s\n", argv[6], argv[7], error.what());
        return 1;
    }
    return 0;
}
