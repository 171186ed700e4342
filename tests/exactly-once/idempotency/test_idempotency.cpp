// The idempotent wrapper, with_idempotency and the in-memory store (docs/patterns.md
// §1.1-§1.3, §1.5; §8 items 1-14), with the family's rule that a throwing handler keeps its
// claim (docs/patterns.md §1.5). Handlers are called directly with hand-made messages,
// except the last test, which runs a consumer on the embedded broker.
#include <catch2/catch.hpp>
#include "../../support/gate.hpp"
#include "../../support/handmade.hpp"

#include <acemq/acemq.hpp>
#include <acemq/idempotency.hpp>
#include <acemq/sql.hpp>
#include <acemq/stores/memory_idempotency_store.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include "../../support/messages.hpp"

using namespace std::chrono_literals;
using acemq::Ack;
using acemq::AckKind;
using acemq::Claim;
using acemq::InMemoryIdempotencyStore;
using acemq::Message;
using handmade::CapturedLog;
using handmade::contains;
using handmade::message_of;

namespace {

using test_messages::Payment;

// The same message again, as a redelivery would bring it: same envelope id.
Message<Payment> again(const Message<Payment>& message) { return message; }

// A store that records every call and fails where a test says so.
class RecordingStore final : public acemq::IdempotencyStore {
public:
    Claim claim(const std::string& key) override {
        record("claim " + key);
        if (fail_claim) throw acemq::sql::DatabaseError("database is locked", "SQLITE_BUSY");
        return inner.claim(key);
    }
    void confirm(const std::string& key) override {
        record("confirm " + key);
        if (fail_confirm) throw std::runtime_error("the confirm went nowhere");
        inner.confirm(key);
    }
    void forget(const std::string& key) override {
        record("forget " + key);
        if (fail_forget) throw std::runtime_error("the forget went nowhere");
        inner.forget(key);
    }
    std::vector<std::string> calls() {
        std::lock_guard guard(lock_);
        return calls_;
    }

    std::atomic<bool> fail_claim{false};
    std::atomic<bool> fail_confirm{false};
    std::atomic<bool> fail_forget{false};
    InMemoryIdempotencyStore inner;

private:
    void record(std::string call) {
        std::lock_guard guard(lock_);
        calls_.push_back(std::move(call));
    }
    std::mutex lock_;
    std::vector<std::string> calls_;
};

using testing_support::Gate;

Ack take_payment_function(const Message<Payment>& message) {
    return message.payload.cents > 0 ? acemq::accept() : acemq::reject(std::invalid_argument("nothing to charge"));
}

// A handler that counts its runs in `runs` and answers `answer` every time.
auto counting(int& runs, Ack answer = acemq::accept()) {
    return [&runs, answer = std::move(answer)](const Message<Payment>&) {
        ++runs;
        return answer;
    };
}

// Keys a payment by its business id instead of the envelope id.
std::string payment_key(const Message<Payment>& message) { return message.payload.payment_id; }

}  // namespace

TEST_CASE("Claim has the family's words") {
    CHECK(acemq::to_string(Claim::claimed) == "claimed");
    CHECK(acemq::to_string(Claim::duplicate) == "duplicate");
    CHECK(acemq::to_string(Claim::in_progress) == "in_progress");
}

TEST_CASE("1 a second delivery of the same id does not run the handler; both accept") {
    InMemoryIdempotencyStore store;
    int runs = 0;
    auto handler = acemq::idempotent(store, counting(runs));
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    CHECK(handler(message) == acemq::accept());
    CHECK(handler(again(message)) == acemq::accept());
    CHECK(runs == 1);
    CHECK(store.size() == 1);
}

TEST_CASE("2 a handler answering retry runs again on the next delivery; nothing is remembered") {
    InMemoryIdempotencyStore store;
    int runs = 0;
    auto handler = acemq::idempotent(store, counting(runs, acemq::retry(std::runtime_error("bank offline"))));
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    CHECK(handler(message).kind() == AckKind::retry);
    CHECK(handler(again(message)).kind() == AckKind::retry);
    CHECK(runs == 2);
    CHECK(store.size() == 0);
}

TEST_CASE("3 a reject is forgotten too, and keeps its failure") {
    InMemoryIdempotencyStore store;
    auto handler = acemq::idempotent(store, take_payment_function);
    const Ack ack = handler(message_of(Payment{"p-1", 0}));
    CHECK(ack == acemq::reject(std::invalid_argument("nothing to charge")));
    CHECK(store.size() == 0);
}

TEST_CASE("4 a key function dedupes two message ids carrying the same business key") {
    InMemoryIdempotencyStore store;
    int runs = 0;
    auto handler = acemq::idempotent(store, counting(runs), {.key = payment_key});
    const Message<Payment> first = message_of(Payment{"p-1", 4250});
    const Message<Payment> resent = message_of(Payment{"p-1", 4250});
    REQUIRE(first.envelope.id != resent.envelope.id);
    CHECK(handler(first) == acemq::accept());
    CHECK(handler(resent) == acemq::accept());
    CHECK(handler(message_of(Payment{"p-2", 100})) == acemq::accept());
    CHECK(runs == 2);
}

TEST_CASE("5 an empty key is rejected as fatal and the handler does not run") {
    RecordingStore store;
    int runs = 0;
    auto handler = acemq::idempotent(store, counting(runs), {.key = payment_key});
    const Message<Payment> message = message_of(Payment{"", 4250});
    const Ack ack = handler(message);
    REQUIRE(ack.kind() == AckKind::reject);
    CHECK(ack.is_fatal());
    CHECK(contains(acemq::describe(ack.failure()), "empty idempotency key"));
    CHECK(contains(acemq::describe(ack.failure()), "acemq: message " + message.envelope.id + " produced an empty"));
    CHECK(runs == 0);
    CHECK(store.calls().empty());
}

TEST_CASE("6 a store that throws from claim means retry with its text; the handler does not run") {
    RecordingStore store;
    store.fail_claim = true;
    int runs = 0;
    auto handler = acemq::idempotent(store, counting(runs));
    const Ack ack = handler(message_of(Payment{"p-1", 4250}));
    REQUIRE(ack.kind() == AckKind::retry);
    CHECK_FALSE(ack.is_fatal());
    CHECK(contains(acemq::describe(ack.failure()), "database is locked"));
    CHECK(runs == 0);
    CHECK(store.calls().size() == 1);
}

TEST_CASE("7 functions, std::function and generic lambdas are wrapped the same way") {
    InMemoryIdempotencyStore store;
    auto from_function = acemq::idempotent(store, take_payment_function);
    auto from_pointer = acemq::idempotent(store, &take_payment_function);
    auto from_std_function = acemq::idempotent(store, acemq::Handler<Payment>(take_payment_function));
    auto from_generic = acemq::idempotent<Payment>(store, [](const auto& m) { return take_payment_function(m); });
    static_assert(std::is_same_v<decltype(from_generic), acemq::Handler<Payment>>);

    for (auto* handler : {&from_function, &from_pointer, &from_std_function, &from_generic}) {
        const Message<Payment> message = message_of(Payment{"p", 1});
        CHECK((*handler)(message) == acemq::accept());
        CHECK((*handler)(again(message)) == acemq::accept());
        CHECK((*handler)(message_of(Payment{"p", 0})).kind() == AckKind::reject);
    }
    CHECK(store.size() == 4);
}

TEST_CASE("8 an in-memory key is forgotten once its ttl has passed, at the next claim") {
    auto clock = std::make_shared<acemq::ManualClock>();
    InMemoryIdempotencyStore store{1h, clock};
    int runs = 0;
    auto handler = acemq::idempotent(store, counting(runs));
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    CHECK(handler(message) == acemq::accept());
    clock->advance(59min);
    CHECK(handler(again(message)) == acemq::accept());
    CHECK(runs == 1);
    clock->advance(1min);  // exactly ttl old: expired
    CHECK(store.size() == 1);
    CHECK(handler(again(message)) == acemq::accept());
    CHECK(runs == 2);
    CHECK(store.size() == 1);
}

TEST_CASE("9 a leasing store gets confirm on accept, forget (not confirm) on reject") {
    RecordingStore store;
    auto handler = acemq::idempotent(store, take_payment_function);
    const Message<Payment> good = message_of(Payment{"p-1", 4250});
    const Message<Payment> bad = message_of(Payment{"p-2", 0});
    CHECK(handler(good) == acemq::accept());
    CHECK(handler(bad).kind() == AckKind::reject);
    CHECK(store.calls() == std::vector<std::string>{"claim " + good.envelope.id, "confirm " + good.envelope.id,
                                                    "claim " + bad.envelope.id, "forget " + bad.envelope.id});
}

TEST_CASE("10 a failing confirm does not change the accept, and says so in the log") {
    CapturedLog log;
    RecordingStore store;
    store.fail_confirm = true;
    int runs = 0;
    auto handler = acemq::idempotent(store, counting(runs));
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    CHECK(handler(message) == acemq::accept());
    CHECK(runs == 1);
    bool logged = false;
    for (const auto& [level, line] : log.lines())
        logged =
            logged || (level == acemq::LogLevel::warning && contains(line, "could not confirm the idempotency key") &&
                       contains(line, message.envelope.id) && contains(line, "the confirm went nowhere") &&
                       contains(line, "its claim will expire and a redelivery may be handled again"));
    CHECK(logged);
}

TEST_CASE("11 a redelivery while the handler still runs is in_progress; afterwards a duplicate") {
    InMemoryIdempotencyStore store;
    Gate gate;
    std::atomic<int> runs{0};
    auto handler = acemq::idempotent(store, [&](const Message<Payment>&) {
        ++runs;
        gate.pass();
        return acemq::accept();
    });
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    std::future<Ack> first = std::async(std::launch::async, [&] { return handler(message); });
    REQUIRE(gate.wait_waiting(1));

    CHECK(handler(again(message)) == acemq::in_progress(acemq::default_in_progress_delay));
    gate.open();
    REQUIRE(first.wait_for(5s) == std::future_status::ready);
    CHECK(first.get() == acemq::accept());
    CHECK(handler(again(message)) == acemq::accept());
    CHECK(runs == 1);
}

TEST_CASE("12 a handler retried whose forget failed: the next delivery is in_progress, not accept") {
    CapturedLog log;
    RecordingStore store;
    store.fail_forget = true;
    int runs = 0;
    auto handler = acemq::idempotent(store, counting(runs, acemq::retry(std::runtime_error("bank offline"))));
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    CHECK(handler(message).kind() == AckKind::retry);
    CHECK(handler(again(message)).kind() == AckKind::in_progress);
    CHECK(runs == 1);
    bool logged = false;
    for (const auto& [level, line] : log.lines())
        logged = logged || (contains(line, "could not forget the idempotency key") &&
                            contains(line, "after a failure") && contains(line, "the forget went nowhere"));
    CHECK(logged);
}

TEST_CASE("13 in_progress_delay is passed on") {
    InMemoryIdempotencyStore store;
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    REQUIRE(store.claim(message.envelope.id) == Claim::claimed);
    auto handler = acemq::idempotent(store, take_payment_function, {.in_progress_delay = 3s});
    CHECK(handler(message) == acemq::in_progress(3s));
    CHECK_THROWS_AS(acemq::idempotent(store, take_payment_function, {.in_progress_delay = -1ms}),
                    acemq::InvalidArgument);
}

TEST_CASE("14 in-memory: claimed, in_progress, duplicate once confirmed; an unconfirmed claim frees after ttl") {
    auto clock = std::make_shared<acemq::ManualClock>();
    InMemoryIdempotencyStore store{10s, clock};
    CHECK(store.ttl() == 10s);
    CHECK(store.claim("a") == Claim::claimed);
    CHECK(store.claim("a") == Claim::in_progress);
    store.confirm("a");
    CHECK(store.claim("a") == Claim::duplicate);
    CHECK_FALSE(store.first_time("a"));

    CHECK(store.claim("b") == Claim::claimed);
    clock->advance(9s);
    CHECK(store.claim("b") == Claim::in_progress);
    clock->advance(1s);
    CHECK(store.first_time("b"));
}

TEST_CASE("in-memory: confirming keeps the first claim's time; sweeping goes oldest first") {
    auto clock = std::make_shared<acemq::ManualClock>();
    InMemoryIdempotencyStore store{10s, clock};
    CHECK(store.claim("old") == Claim::claimed);
    clock->advance(6s);
    CHECK(store.claim("new") == Claim::claimed);
    store.confirm("old");  // does not extend "old" past 10 s after its claim
    clock->advance(4s);
    CHECK(store.claim("other") == Claim::claimed);  // sweeps "old" only
    CHECK(store.size() == 2);
    CHECK(store.claim("old") == Claim::claimed);
    CHECK(store.claim("new") == Claim::in_progress);
}

TEST_CASE("in-memory: forget removes any state; confirm of an unknown key does nothing; ttl must be positive") {
    InMemoryIdempotencyStore store;
    CHECK(store.claim("a") == Claim::claimed);
    store.confirm("a");
    store.forget("a");
    CHECK(store.size() == 0);
    store.forget("never seen");
    store.confirm("never seen");
    CHECK(store.size() == 0);
    CHECK(store.claim("never seen") == Claim::claimed);

    CHECK_THROWS_WITH(InMemoryIdempotencyStore(0ms), Catch::Contains("an idempotency window must be positive"));
    CHECK_THROWS_AS(InMemoryIdempotencyStore(-1s), acemq::InvalidArgument);
}

TEST_CASE("in-memory: threads racing to claim one key: exactly one wins") {
    InMemoryIdempotencyStore store;
    constexpr int threads = 8;
    std::atomic<int> claimed{0};
    std::vector<std::thread> racers;
    for (int round = 0; round < 50; ++round) {
        const std::string key = "k-" + std::to_string(round);
        racers.clear();
        for (int i = 0; i < threads; ++i)
            racers.emplace_back([&] {
                if (store.first_time(key)) ++claimed;
            });
        for (std::thread& racer : racers) racer.join();
    }
    CHECK(claimed == 50);
    CHECK(store.size() == 50);
}

TEST_CASE("a handler that throws keeps its claim: redeliveries are in_progress until the lease runs out") {
    RecordingStore store;
    int runs = 0;
    // Tutorial 3, step 2: the money moves, then the receipt service fails.
    auto handler = acemq::idempotent(store, [&](const Message<Payment>&) -> Ack {
        ++runs;
        throw std::runtime_error("the receipt email service is down");
    });
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    CHECK_THROWS_WITH(handler(message), "the receipt email service is down");
    CHECK(handler(again(message)) == acemq::in_progress(acemq::default_in_progress_delay));
    CHECK(handler(again(message)) == acemq::in_progress(acemq::default_in_progress_delay));
    CHECK(runs == 1);
    CHECK(store.inner.size() == 1);
    CHECK(store.calls() == std::vector<std::string>{"claim " + message.envelope.id, "claim " + message.envelope.id,
                                                    "claim " + message.envelope.id});
}

TEST_CASE("a thrown handler's claim is a lease: once it expires the next delivery runs the handler") {
    auto clock = std::make_shared<acemq::ManualClock>();
    InMemoryIdempotencyStore store{10s, clock};
    int runs = 0;
    auto handler = acemq::idempotent(store, [&](const Message<Payment>&) -> Ack {
        if (++runs == 1) throw std::logic_error("broken");
        return acemq::accept();
    });
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    CHECK_THROWS_AS(handler(message), std::logic_error);
    clock->advance(9s);
    CHECK(handler(again(message)).kind() == AckKind::in_progress);
    clock->advance(1s);
    CHECK(handler(again(message)) == acemq::accept());
    CHECK(handler(again(message)) == acemq::accept());
    CHECK(runs == 2);
}

TEST_CASE("with_idempotency: a handler that throws keeps its claim too") {
    InMemoryIdempotencyStore store;
    int runs = 0;
    auto charge_then_fail = [&](const Message<Payment>&) -> Ack {
        ++runs;
        throw std::runtime_error("the receipt email service is down");
    };
    auto by_id = acemq::chain(charge_then_fail, acemq::with_idempotency(store, 2s));
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    CHECK_THROWS_WITH(by_id(message), "the receipt email service is down");
    CHECK(by_id(again(message)) == acemq::in_progress(2s));

    auto by_key = acemq::chain(charge_then_fail,
                               acemq::with_idempotency<Payment>(store, {.key = payment_key, .in_progress_delay = 3s}));
    CHECK_THROWS_AS(by_key(message_of(Payment{"p-2", 1})), std::runtime_error);
    CHECK(by_key(message_of(Payment{"p-2", 1})) == acemq::in_progress(3s));
    CHECK(runs == 2);
}

TEST_CASE("with_idempotency is idempotent() as middleware, with or without a key function") {
    InMemoryIdempotencyStore store;
    std::vector<std::string> trace;
    auto handle = [&](const Message<Payment>& m) {
        trace.push_back(m.payload.payment_id);
        return acemq::accept();
    };
    auto by_id = acemq::chain(handle, acemq::with_logging(), acemq::with_idempotency(store, 2s));
    const Message<Payment> message = message_of(Payment{"p-1", 4250});
    CHECK(by_id(message) == acemq::accept());
    CHECK(by_id(again(message)) == acemq::accept());
    CHECK(trace == std::vector<std::string>{"p-1"});

    auto by_key = acemq::chain(handle, acemq::with_idempotency<Payment>(store, {.key = [](const Message<Payment>& m) {
                                                                            return "payment:" + m.payload.payment_id;
                                                                        }}));
    CHECK(by_key(message_of(Payment{"p-2", 1})) == acemq::accept());
    CHECK(by_key(message_of(Payment{"p-2", 1})) == acemq::accept());
    CHECK(trace == std::vector<std::string>{"p-1", "p-2"});

    REQUIRE(store.claim("held") == Claim::claimed);
    auto held = acemq::chain(
        handle, acemq::with_idempotency(store, 2s),
        acemq::with_idempotency<Payment>(store, {.key = [](const Message<Payment>&) { return std::string("held"); }}));
    CHECK(held(message_of(Payment{"p-3", 1})) == acemq::in_progress(acemq::default_in_progress_delay));
    CHECK_THROWS_AS(acemq::with_idempotency(store, -1s), acemq::InvalidArgument);
}

TEST_CASE("end to end: a payment published twice with one message id is charged once") {
    const std::string prefix = "idem" + acemq::new_uuid().substr(0, 8);
    acemq::Bus bus = acemq::connect("inproc://" + prefix);
    acemq::testing::Harness harness{bus};
    const std::string queue = prefix + ".payments";
    bus.declare(acemq::Topology{}.queue(queue, {.dead_letter = true}));

    InMemoryIdempotencyStore store;
    std::atomic<int> charged{0};
    std::atomic<int> attempts{0};
    auto take_payment = [&](const Message<Payment>& m) -> Ack {
        ++charged;
        // Charged, then the receipt fails: the retry republish must find the claim held.
        if (m.payload.payment_id == "p-flaky" && ++attempts == 1) throw std::runtime_error("receipt service down");
        return acemq::accept();
    };
    {
        acemq::Consumer consumer =
            bus.consume<Payment>(queue, acemq::idempotent(store, take_payment, {.in_progress_delay = 20ms}),
                                 {.retry = acemq::fixed_retry(3, 0ms)});
        acemq::Publisher payments = bus.publisher_to_queue(queue);
        const std::string id = acemq::new_uuid();
        payments.send(Payment{"p-1", 4250}, {.message_id = id});
        payments.send(Payment{"p-1", 4250}, {.message_id = id});
        payments.send(Payment{"p-flaky", 100});
        CHECK(harness.wait_settled(queue, acemq::Outcome::acked, 2, 10s));
        CHECK(harness.wait_settled(queue, acemq::Outcome::retried, 1, 10s));
        CHECK(harness.wait_settled(queue, acemq::Outcome::in_progress, 2, 10s));  // and not charged again
        CHECK(consumer.close());
    }
    CHECK(charged == 2);
    CHECK(attempts == 1);
    CHECK(store.size() == 2);
    CHECK(bus.transport().queue_depth(acemq::dead_letter_queue(queue)) == 0);
}

namespace {

// The lines of `log` holding `part`, each checked to have been written at `level`.
std::vector<std::string> lines_with(const CapturedLog& log, std::string_view part, acemq::LogLevel level) {
    std::vector<std::string> found;
    for (const auto& [written_at, line] : log.lines())
        if (contains(line, part)) {
            CHECK(written_at == level);
            found.push_back(line);
        }
    return found;
}

}  // namespace

// Issue 27: a message sent with no id at all is given a fresh one on each delivery (the
// family's contract), so the envelope id cannot recognise its redeliveries.
TEST_CASE("a message that came with no id: idempotent() warns once per queue, and not with a key function") {
    CapturedLog log;
    InMemoryIdempotencyStore seen;
    int runs = 0;
    auto handler = acemq::idempotent(seen, counting(runs));
    auto keyed = acemq::idempotent(seen, counting(runs), {.key = payment_key});
    const auto without_id = [](const std::string& queue, const std::string& payment) {
        Message<Payment> message = message_of(Payment{payment, 100}, queue);
        message.envelope = acemq::read_envelope({}, queue);  // no x-acemq-id, no message-id
        return message;
    };
    CHECK(handler(without_id("payments", "p-1")).kind() == AckKind::accept);
    CHECK(handler(without_id("payments", "p-2")).kind() == AckKind::accept);
    CHECK(handler(without_id("refunds", "p-3")).kind() == AckKind::accept);
    CHECK(keyed(without_id("invoices", "p-4")).kind() == AckKind::accept);
    CHECK(handler(message_of(Payment{"p-5", 100}, "receipts")).kind() == AckKind::accept);
    CHECK(runs == 5);

    const std::vector<std::string> warnings = lines_with(log, "came with no id", acemq::LogLevel::warning);
    REQUIRE(warnings.size() == 2);
    CHECK(contains(warnings[0], "from payments"));
    CHECK(contains(warnings[1], "from refunds"));
    CHECK(contains(warnings[0], "give idempotent() a key function"));
}

// Issue 27: after a consumer died inside the handler its message waited out the claim's
// lease without a word.
TEST_CASE("a delivery that meets a live claim says so once per key, at info, with when the lease ends") {
    CapturedLog log;
    InMemoryIdempotencyStore seen;  // a one-hour lease
    int runs = 0;
    auto handler = acemq::idempotent(seen, counting(runs), {.in_progress_delay = 250ms});
    const Message<Payment> first = message_of(Payment{"p-1", 100});
    const Message<Payment> second = message_of(Payment{"p-2", 100});
    // What a consumer that died inside the handler leaves behind: claims nobody confirms.
    REQUIRE(seen.claim(first.envelope.id) == Claim::claimed);
    REQUIRE(seen.claim(second.envelope.id) == Claim::claimed);
    for (int i = 0; i < 3; ++i) CHECK(handler(again(first)).kind() == AckKind::in_progress);
    CHECK(handler(second).kind() == AckKind::in_progress);
    CHECK(runs == 0);

    const std::vector<std::string> notes = lines_with(log, "met a live claim", acemq::LogLevel::info);
    REQUIRE(notes.size() == 2);
    INFO(notes[0]);
    CHECK(contains(notes[0], "\"" + first.envelope.id + "\""));
    CHECK(contains(notes[1], "\"" + second.envelope.id + "\""));
    CHECK(contains(notes[0], "put back every 250 ms"));
    CHECK((contains(notes[0], "its lease ends in 3600 s (at 20") ||
           contains(notes[0], "its lease ends in 3599 s (at 20")));

    // A store that cannot tell how long a claim holds: the line says what ends it instead.
    RecordingStore recording;
    auto guarded = acemq::idempotent(recording, counting(runs));
    REQUIRE(recording.inner.claim(first.envelope.id) == Claim::claimed);
    CHECK(guarded(first).kind() == AckKind::in_progress);
    const auto lines = log.lines();
    CHECK(contains(lines.back().second, "its lease runs out (the store's claim timeout or ttl)"));
}
