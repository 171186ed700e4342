// Crash safety, proven: a worker process is killed with SIGKILL at each dangerous point of
// taking a payment (after the claim, in the middle of the business transaction, after the
// commit but before the broker ack) and of relaying the outbox (after the publish, before
// mark_published); the message is then delivered again, as a broker does after a crash,
// and the books are checked. With the claim and the outbox record inside the business
// transaction: every payment is charged exactly once, every committed payment is
// announced at least once, and a rolled-back one is never announced.
//
// The "broker" here is an append-only file: a publish is confirmed once its line is
// written and synced, so what was published survives the publisher's death, as a
// persistent message on a durable queue does.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>
#include <acemq/idempotency.hpp>
#include <acemq/outbox.hpp>
#include <acemq/schema.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "harness.hpp"

#include <acemq/stores/sql_idempotency_store.hpp>
#include <acemq/stores/sql_outbox_store.hpp>
#include <acemq/stores/sqlite.hpp>

namespace {

namespace fs = std::filesystem;

struct Receipt {
    std::string payment_id;
    std::int64_t amount_cents = 0;
};

// Where the worker of the current child process dies, if anywhere ("" = nowhere).
std::string crash_point;

void crash_if_at(std::string_view here) {
    if (crash_point == here) raise(SIGKILL);
}

// A transport whose every publish appends "<message id>\n" to a file and syncs it.
class AppendLogTransport final : public acemq::Transport {
public:
    explicit AppendLogTransport(std::string path) : path_(std::move(path)) {}
    void declare(const acemq::Topology&) override {}
    acemq::PublishResult publish(acemq::OutboundMessage message) override {
        const int file = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (file < 0)
            return acemq::PublishResult{.confirmed = false, .routed = false, .return_reason = "cannot open the log"};
        const std::string line = message.message_id + "\n";
        const bool written =
            ::write(file, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(file) == 0;
        ::close(file);
        if (!written)
            return acemq::PublishResult{.confirmed = false, .routed = false, .return_reason = "cannot write the log"};
        crash_if_at("relay-after-publish");  // the broker has it; mark_published has not run
        return acemq::PublishResult{.confirmed = true};
    }
    std::unique_ptr<acemq::Subscription> consume(std::string_view, const acemq::ConsumeSpec&,
                                                 acemq::DeliverFn) override {
        throw acemq::Error("the append log cannot be consumed");
    }
    std::optional<acemq::Delivery> pull(std::string_view) override { return std::nullopt; }
    std::uint64_t queue_depth(std::string_view) override { return 0; }
    bool queue_exists(std::string_view) override { return false; }
    void delete_queue(std::string_view) override {}
    void close() override {}

private:
    std::string path_;
};

struct Shop {
    fs::path dir = fs::temp_directory_path() / ("acemq-crash-" + acemq::new_uuid());
    std::string db_path = (dir / "shop.db").string();
    std::string log_path = (dir / "published.log").string();

    Shop() {
        fs::create_directories(dir);
        acemq::register_transport("appendlog", [](std::string_view url) -> std::shared_ptr<acemq::Transport> {
            return std::make_shared<AppendLogTransport>(
                std::string(url.substr(std::string_view("appendlog://").size())));
        });
        acemq::sqlite::Database db{db_path};
        acemq::create_schema(db);
        auto connection = db.connect();
        // No uniqueness on purpose: a second charge for one payment must show up as a row.
        connection->execute(
            "CREATE TABLE charges (charge_no INTEGER PRIMARY KEY AUTOINCREMENT, payment_id TEXT NOT NULL)");
    }
    ~Shop() {
        std::error_code ignored;  // a leftover temp folder harms nothing
        fs::remove_all(dir, ignored);
    }

    std::int64_t charges(const std::string& payment_id) {
        acemq::sqlite::Database db{db_path};
        auto rows = db.connect()->query("SELECT COUNT(*) FROM charges WHERE payment_id = ?", {payment_id});
        return rows.at(0).at(0).as_integer();
    }
    std::int64_t outbox_rows() {
        acemq::sqlite::Database db{db_path};
        return db.connect()->query("SELECT COUNT(*) FROM acemq_outbox").at(0).at(0).as_integer();
    }
    int announcements(const std::string& message_id) {
        std::ifstream log(log_path);
        int count = 0;
        for (std::string line; std::getline(log, line);) count += line == message_id;
        return count;
    }
};

// The handler of tutorial step 6, run in a child process: claim, charge and outbox record
// in one transaction, then (in a real consumer) the broker ack. `roll_back`: the business
// decides against the payment after doing the work.
int take_payment(const Shop& shop, const std::string& payment_id, bool roll_back) {
    acemq::sqlite::Database db{shop.db_path};
    acemq::SqlIdempotencyStore seen{db};
    acemq::SqlOutboxStore outbox{db};
    acemq::Bus bus = acemq::connect("appendlog://" + shop.log_path, {.origin = "payments@crash-test"});

    acemq::sql::Transaction tx = db.begin();
    if (seen.claim("pay-" + payment_id, tx) != acemq::Claim::claimed) return 0;  // a duplicate: ack it
    crash_if_at("after-claim");
    tx.connection().execute("INSERT INTO charges (payment_id) VALUES (?)", {payment_id});
    crash_if_at("mid-transaction");
    acemq::Envelope receipt_envelope;
    receipt_envelope.id = "receipt-" + payment_id;
    outbox.add(acemq::record_to_queue(bus, "payments.taken", Receipt{payment_id, 4250}, {.envelope = receipt_envelope}),
               tx);
    seen.confirm("pay-" + payment_id, tx);
    if (roll_back) {
        tx.rollback();
        return 0;
    }
    tx.commit();
    crash_if_at("after-commit-before-ack");
    return 0;
}

int relay_once(const Shop& shop) {
    acemq::sqlite::Database db{shop.db_path};
    // A relay that dies holds its rows until its lease ends; a 1 ms lease lets the next
    // relay take them over at once instead of after the default 30 s.
    acemq::SqlOutboxStore outbox{db, {.lease = std::chrono::milliseconds(1)}};
    acemq::Bus bus = acemq::connect("appendlog://" + shop.log_path);
    acemq::OutboxRelay relay{bus, outbox};
    relay.sweep();
    return 0;
}

// Runs `work` in a child process that dies at `point`; true when it was killed by SIGKILL.
template <class Work>
bool run_child(const std::string& point, Work work) {
    std::fflush(nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        crash_point = point;
        int code = 1;
        try {
            code = work();
        } catch (const std::exception& error) {
            std::fprintf(stderr, "worker failed: %s\n", error.what());
        }
        _exit(code);
    }
    return crash::wait_for_worker(child, point);
}

// Delivers the payment until a worker finishes it (the broker redelivers what was not
// acked), the first delivery dying at `point`; then relays until the outbox is empty, the
// first relay dying at `relay_point`.
struct Trial {
    bool killed = false;
    std::int64_t charges = 0;
    int announcements = 0;
    std::int64_t left_in_outbox = 0;
};

Trial run_trial(Shop& shop, const std::string& payment_id, const std::string& point, const std::string& relay_point,
                bool roll_back = false) {
    Trial trial;
    trial.killed = run_child(point, [&] { return take_payment(shop, payment_id, roll_back); });
    if (trial.killed) run_child("", [&] { return take_payment(shop, payment_id, roll_back); });
    if (run_child(relay_point, [&] { return relay_once(shop); })) trial.killed = true;
    run_child("", [&] { return relay_once(shop); });
    trial.charges = shop.charges(payment_id);
    trial.announcements = shop.announcements("receipt-" + payment_id);
    trial.left_in_outbox = shop.outbox_rows();
    return trial;
}

using crash::trials_per_point;

}  // namespace

TEST_CASE("killed at every dangerous point, every payment is charged once and announced at least once") {
    Shop shop;
    const std::vector<std::pair<std::string, std::string>> points{
        {"after-claim", ""},
        {"mid-transaction", ""},
        {"after-commit-before-ack", ""},
        {"", "relay-after-publish"},
    };
    int payment = 0;
    for (const auto& [point, relay_point] : points) {
        const std::string where = point.empty() ? relay_point : point;
        int killed = 0, charged_once = 0, announced = 0, announced_twice = 0;
        for (int i = 0; i < trials_per_point; ++i) {
            const Trial trial = run_trial(shop, std::to_string(++payment), point, relay_point);
            killed += trial.killed;
            charged_once += trial.charges == 1;
            announced += trial.announcements >= 1;
            announced_twice += trial.announcements >= 2;
            CHECK(trial.charges == 1);
            CHECK(trial.announcements >= 1);
            CHECK(trial.left_in_outbox == 0);
        }
        std::printf("crash %-24s %d trials: killed %d, charged exactly once %d, announced %d (twice: %d)\n",
                    where.c_str(), trials_per_point, killed, charged_once, announced, announced_twice);
        CHECK(killed == trials_per_point);                                     // the crash really happened every time
        if (!relay_point.empty()) CHECK(announced_twice == trials_per_point);  // at-least-once, seen
    }
}

TEST_CASE("a rolled-back payment is never charged nor announced, crash or no crash") {
    Shop shop;
    int charged = 0, announced = 0, killed = 0;
    for (int i = 0; i < trials_per_point; ++i) {
        const std::string point = i % 2 == 0 ? "mid-transaction" : "";
        const Trial trial = run_trial(shop, "rb-" + std::to_string(i), point, "", true);
        killed += trial.killed;
        charged += trial.charges != 0;
        announced += trial.announcements != 0;
        CHECK(trial.charges == 0);
        CHECK(trial.announcements == 0);
        CHECK(trial.left_in_outbox == 0);
    }
    std::printf("rolled back               %d trials: killed %d, charged %d, announced %d\n", trials_per_point, killed,
                charged, announced);
    CHECK(killed == (trials_per_point + 1) / 2);  // the even trials
}
