// What the crash drill through RabbitMQ (test_crash_amqp.cpp) and its worker program
// (crash_amqp_worker.cpp) agree on: the messages, the books and the names of the points where
// a worker dies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace drill {

// A payment to take, on the payments queue.
struct Payment {
    std::string payment_id;
    std::int64_t amount_cents = 0;
};

// The announcement of a taken payment, written to the outbox in the payment's transaction
// and relayed to the receipts queue; its message id is receipt_id(payment_id).
struct Receipt {
    std::string payment_id;
    std::int64_t amount_cents = 0;
};

inline std::string receipt_id(std::string_view payment_id) { return "receipt-" + std::string(payment_id); }
inline std::string idempotency_key(std::string_view payment_id) { return "pay-" + std::string(payment_id); }

// The books: one row per charge, no uniqueness on purpose, so a second charge of one
// payment shows up as a second row.
inline constexpr std::string_view charged_ddl =
    "CREATE TABLE charged (charge_no INTEGER PRIMARY KEY AUTOINCREMENT, payment_id TEXT NOT NULL, "
    "amount_cents INTEGER NOT NULL)";

// Where the guard form notes each claim its store answered in_progress: a redelivery that
// met the claim of a killed worker before its lease ran out.
inline constexpr std::string_view in_progress_ddl = "CREATE TABLE met_in_progress (idempotency_key TEXT NOT NULL)";

// Where a worker raises SIGKILL.
inline constexpr std::string_view after_claim = "after-claim";
inline constexpr std::string_view mid_transaction = "mid-transaction";  // charged, not committed
inline constexpr std::string_view after_commit_before_ack = "after-commit-before-ack";
inline constexpr std::string_view relay_after_publish = "relay-after-publish";  // confirmed, row not removed

// How the worker's handler keeps a payment from being charged twice.
//   guard:       idempotent(seen, take_payment): the wrapper claims the key in a transaction
//                of its own (committed, a 2 s lease), the handler charges and records the
//                receipt in another, the wrapper confirms after it returns. A kill after the
//                claim leaves the lease to run out; a kill after the commit and before the
//                confirm would charge twice (idempotency.hpp: "a guard, not exactly-once").
//   transaction: tutorial step 6: claim, charge, receipt and confirm in one transaction, so
//                a kill before the commit rolls the claim back with the charge and a kill
//                after it leaves a confirmed key that answers the redelivery as a duplicate.
inline constexpr std::string_view guard_form = "guard";
inline constexpr std::string_view transaction_form = "transaction";

}  // namespace drill
