// The family's tutorial 3, "Never processing twice", as one program. In-process by default;
// --url amqp://... runs it on RabbitMQ. --print-ddl postgres prints the tables to create.
//
//   build/examples/exactly_once [--url URL] [--print-ddl sqlite|postgres]
//
// Step 1  the tutorial's handler charges the card, then the receipt service fails: each of
//         its three attempts charges again;
// step 2  the same handler wrapped in idempotent() charges once: the retries find its
//         claim still held (the work may have happened) and are not run;
// step 3  with the claims in SQLite, a restarted consumer still knows;
// step 5  an order is announced through the outbox only if its transaction commits;
// step 6  claim, charge, announcement and confirmation in one transaction.
#include <acemq/acemq.hpp>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>

#include <acemq/stores/memory_idempotency_store.hpp>
#include <acemq/stores/sql_idempotency_store.hpp>
#include <acemq/stores/sql_outbox_store.hpp>
#include <acemq/stores/sqlite.hpp>

#include "command_line.hpp"

using namespace std::chrono_literals;

namespace {

struct Payment {
    std::string payment_id;
    std::int64_t amount_cents;
};

struct OrderPlaced {
    std::string order_id;
    std::int64_t total_cents;
};

struct Receipt {
    std::string payment_id;
    std::int64_t amount_cents;
};

// Publishes `payment` `times` times with one message id: what a sender does when it
// timed out waiting for a confirm and tried again.
void deliver_repeatedly(acemq::Bus& bus, const std::string& queue, const Payment& payment, int times) {
    acemq::Publisher publisher = bus.publisher_to_queue(queue);
    const std::string id = "payment-" + payment.payment_id;
    for (int i = 0; i < times; ++i) publisher.send(payment, {.message_id = id});
}

// Waits until `count` messages of `queue` were settled; a bounded wait, never a sleep.
void settle(acemq::testing::Harness& harness, const std::string& queue, std::size_t count) {
    if (!harness.wait_consumed(queue, count, 10s)) throw std::runtime_error("messages of " + queue + " did not arrive");
}

// Tutorial 3's handler: the money moves, then sending the receipt fails. The exception
// means retry, and every retry moves the money again.
auto charge_then_send_receipt(std::atomic<int>& charged) {
    return [&charged](const acemq::Message<Payment>&) -> acemq::Ack {
        std::printf("charged, total %d\n", ++charged);
        throw std::runtime_error("the receipt email service is down");
    };
}

void step1_see_the_duplicate(acemq::Bus& bus, acemq::testing::Harness& harness) {
    std::puts("step 1: no idempotency");
    bus.declare(acemq::Topology{}.queue("payments.step1", {.dead_letter = true}));
    std::atomic<int> charged{0};
    acemq::Consumer consumer = bus.consume<Payment>("payments.step1", charge_then_send_receipt(charged),
                                                    {.retry = acemq::fixed_retry(3, 200ms)});
    bus.publisher_to_queue("payments.step1").send(Payment{"p-1", 4250});
    if (!harness.wait_dead_lettered("payments.step1", 1, 10s))
        throw std::runtime_error("the payment of step 1 did not reach payments.step1.dlq");
    std::puts("three attempts, three charges; the payment waits in payments.step1.dlq");
}

void step2_remember(acemq::Bus& bus, acemq::testing::Harness& harness) {
    std::puts("step 2: an idempotent consumer, keys in memory");
    bus.declare(acemq::Topology{}.queue("payments.step2", {.dead_letter = true}));
    acemq::InMemoryIdempotencyStore seen;
    std::atomic<int> charged{0};
    // A short in-progress delay only so that the tutorial does not wait 5 s to show it.
    acemq::Consumer consumer = bus.consume<Payment>(
        "payments.step2", acemq::idempotent(seen, charge_then_send_receipt(charged), {.in_progress_delay = 200ms}),
        {.retry = acemq::fixed_retry(3, 200ms)});
    bus.publisher_to_queue("payments.step2").send(Payment{"p-1", 4250});
    if (!harness.wait_settled("payments.step2", acemq::Outcome::in_progress, 2, 10s))
        throw std::runtime_error("the retries of step 2 did not come back");
    consumer.close();
    std::printf(
        "the retries found the claim held and did not charge again (charged %d time(s)); "
        "the claim is a lease and frees after its ttl\n",
        charged.load());
}

void step3_survive_a_restart(acemq::Bus& bus, acemq::testing::Harness& harness, acemq::sqlite::Database& db) {
    std::puts("step 3: keys in SQLite survive a restart of the consumer");
    bus.declare(acemq::Topology{}.queue("payments.step3", {.dead_letter = true}));
    auto charge = [](const char* who) {
        return [who](const acemq::Message<Payment>& message) {
            std::printf("%s charged %s\n", who, message.payload.payment_id.c_str());
            return acemq::accept();
        };
    };
    {
        acemq::SqlIdempotencyStore seen{db};
        acemq::Consumer before = bus.consume<Payment>("payments.step3", acemq::idempotent(seen, charge("consumer 1")));
        deliver_repeatedly(bus, "payments.step3", Payment{"p-2", 990}, 1);
        settle(harness, "payments.step3", 1);
    }
    std::puts("(consumer 1 stopped; consumer 2 starts with a new store on the same file)");
    acemq::SqlIdempotencyStore seen{db};
    acemq::Consumer after = bus.consume<Payment>("payments.step3", acemq::idempotent(seen, charge("consumer 2")));
    deliver_repeatedly(bus, "payments.step3", Payment{"p-2", 990}, 1);
    settle(harness, "payments.step3", 2);
    std::printf("p-2 redelivered to consumer 2: a duplicate, not charged again (confirmed: %s)\n",
                seen.is_confirmed("payment-p-2") ? "yes" : "no");
}

void step5_outbox(acemq::Bus& bus, acemq::testing::Harness& harness, acemq::sqlite::Database& db) {
    std::puts("step 5: orders announced through the outbox");
    bus.declare(acemq::Topology{}.queue("orders.placed", {.dead_letter = true}));
    acemq::SqlOutboxStore outbox{db};
    std::mutex lock;
    std::vector<std::string> announced;
    acemq::Consumer shipping =
        bus.consume<OrderPlaced>("orders.placed", [&](const acemq::Message<OrderPlaced>& message) {
            std::lock_guard guard(lock);
            announced.push_back(message.payload.order_id);
            return acemq::accept();
        });
    auto place = [&](const OrderPlaced& order, bool commit) {
        acemq::sql::Transaction tx = db.begin();
        tx.connection().execute("INSERT INTO orders (order_id, total_cents) VALUES (?, ?)",
                                {order.order_id, order.total_cents});
        outbox.add(acemq::record_to_queue(bus, "orders.placed", order), tx);
        if (commit) tx.commit();  // otherwise the destructor rolls back: no order, no message
    };
    place(OrderPlaced{"o-1", 4250}, true);
    place(OrderPlaced{"o-2", 1200}, false);
    acemq::OutboxRelay relay{bus, outbox};
    std::printf("relay published %zu\n", relay.sweep());
    settle(harness, "orders.placed", 1);
    std::lock_guard guard(lock);
    for (const std::string& order : announced) std::printf("shipping heard of %s\n", order.c_str());
    std::puts("o-2 was rolled back: nothing was sent for it");
}

void step6_all_together(acemq::Bus& bus, acemq::testing::Harness& harness, acemq::sqlite::Database& db) {
    std::puts("step 6: claim, charge, announcement and confirmation in one transaction");
    bus.declare(acemq::Topology{}.queue("payments.step6", {.dead_letter = true}).queue("payments.taken"));
    acemq::SqlIdempotencyStore seen{db};
    acemq::SqlOutboxStore outbox{db};
    auto handle = [&](const acemq::Message<Payment>& m) -> acemq::Ack {
        acemq::sql::Transaction tx = db.begin();
        switch (seen.claim(m.envelope.id, tx)) {
        case acemq::Claim::duplicate: return acemq::accept();
        case acemq::Claim::in_progress: return acemq::in_progress(5s);
        case acemq::Claim::claimed: break;
        }
        tx.connection().execute("INSERT INTO charges (payment_id, amount_cents) VALUES (?, ?)",
                                {m.payload.payment_id, m.payload.amount_cents});
        outbox.add(acemq::record_to_queue(bus, "payments.taken", Receipt{m.payload.payment_id, m.payload.amount_cents}),
                   tx);
        seen.confirm(m.envelope.id, tx);
        tx.commit();  // the claim is durable exactly when the work is
        return acemq::accept();
    };
    acemq::Consumer payments = bus.consume<Payment>("payments.step6", handle);
    deliver_repeatedly(bus, "payments.step6", Payment{"p-3", 7700}, 3);
    settle(harness, "payments.step6", 3);
    acemq::OutboxRelay relay{bus, outbox};
    relay.sweep();
    const auto rows = db.connect()->query("SELECT COUNT(*) FROM charges WHERE payment_id = 'p-3'");
    std::printf("p-3 delivered 3 times: charged %lld time(s), %lld receipt(s) waiting on payments.taken\n",
                static_cast<long long>(rows.at(0).at(0).as_integer()),
                static_cast<long long>(bus.transport().queue_depth("payments.taken")));
}

// A broker keeps queues between runs (the embedded one does not): start from empty ones, so
// that every run tells the same story.
void start_clean(acemq::Bus& bus) {
    for (const char* queue :
         {"payments.step1", "payments.step2", "payments.step3", "payments.step6", "orders.placed", "payments.taken"})
        for (const char* suffix : {"", ".dlq", ".parked"}) bus.transport().delete_queue(std::string(queue) + suffix);
}

}  // namespace

int main(int argc, char** argv) {
    const std::string url = example::option(argc, argv, "--url").value_or("inproc://exactly-once");
    if (const auto dialect = example::option(argc, argv, "--print-ddl")) {
        if (*dialect != "postgres" && *dialect != "sqlite") {
            std::fprintf(stderr, "--print-ddl takes sqlite or postgres, not %s\n", dialect->c_str());
            return 2;
        }
        for (const std::string& statement :
             acemq::schema_ddl(*dialect == "postgres" ? acemq::sql::Dialect::postgres : acemq::sql::Dialect::sqlite))
            std::printf("%s;\n\n", statement.c_str());
        return 0;
    }

    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("acemq-exactly-once-" + acemq::new_uuid());
    std::filesystem::create_directories(dir);
    int status = 0;
    try {
        acemq::sqlite::Database db{(dir / "shop.db").string()};
        acemq::create_schema(db);  // development only: production copies schema_ddl into its migrations
        db.connect()->execute("CREATE TABLE orders (order_id TEXT PRIMARY KEY, total_cents INTEGER NOT NULL)");
        db.connect()->execute("CREATE TABLE charges (payment_id TEXT NOT NULL, amount_cents INTEGER NOT NULL)");

        acemq::Bus bus = acemq::connect(url, {.origin = "payments@tutorial"});
        acemq::testing::Harness harness{bus};
        start_clean(bus);
        step1_see_the_duplicate(bus, harness);
        step2_remember(bus, harness);
        step3_survive_a_restart(bus, harness, db);
        step5_outbox(bus, harness, db);
        step6_all_together(bus, harness, db);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "exactly_once failed: %s\n", error.what());
        status = 1;
    }
    std::error_code ignored;  // the temporary database is ours to remove; a leftover harms nothing
    std::filesystem::remove_all(dir, ignored);
    return status;
}
