// kill -9 drills of the durable broker. A worker process publishes numbered persistent
// messages with confirms and consumes and acks them; at a random moment once it logged its
// first confirm (so every round has something new to check) it (on inproc://, where it is
// the broker) or its acemq-broker process is killed with SIGKILL, 50 times (or
// ACEMQ_KILL9_ROUNDS) over one data file. After each kill the file is opened and its queue read: every confirmed
// message is there or was acked, no message is there twice or out of publish order, nothing
// is there that was never confirmed-or-in-flight; in process, where an ack waits for its
// commit, no acked message comes back. Through ZeroMQ acks travel unanswered, so an acked
// message may come back (redelivered): those are counted.
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <set>

#include <acemq/inproc.hpp>
#include "../support/rounds.hpp"
#include "../support/temp_dir.hpp"
#include "../support/wait.hpp"
#include "../zmq/broker_process.hpp"

using namespace std::chrono_literals;

namespace {

const int rounds = testing_support::rounds_from("ACEMQ_KILL9_ROUNDS", 50);
constexpr std::uint64_t ids_per_round = 1'000'000;

// The worker, started with `url`; killed with SIGKILL (and reaped) however the test ends.
class Worker {
public:
    Worker(const std::string& url, const std::string& log, std::uint64_t first_id) {
        int out[2];
        REQUIRE(::pipe(out) == 0);
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ::dup2(out[1], STDOUT_FILENO);
            ::close(out[0]);
            const std::string first = std::to_string(first_id);
            ::execl(ACEMQ_KILL9_WORKER, "kill9_worker", url.c_str(), log.c_str(), first.c_str(), nullptr);
            ::_exit(127);
        }
        ::close(out[1]);
        ready_ = out[0];
    }
    ~Worker() { kill(); }
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    // Waits (bounded) for its "ready" line.
    bool wait_ready() {
        pollfd readable{ready_, POLLIN, 0};
        char line[8] = {};
        return ::poll(&readable, 1, 20'000) == 1 && ::read(ready_, line, sizeof line) > 0;
    }

    void kill() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
            pid_ = -1;
        }
        if (ready_ >= 0) ::close(ready_);
        ready_ = -1;
    }

private:
    pid_t pid_ = -1;
    int ready_ = -1;
};

struct Log {
    std::set<std::uint64_t> confirmed;
    std::set<std::uint64_t> acking;  // an ack begun: it may have landed or not
    std::set<std::uint64_t> acked;   // an ack returned

    // False for an id no worker can have published: one of a round after `round`, or one
    // more than a window (32) past the last id logged in its round, since a worker publishes
    // a window at a time and waits for its confirms.
    bool maybe_published(std::uint64_t id, int round) const {
        const std::uint64_t its_round = (id - 1) / ids_per_round;
        if (id == 0 || its_round > static_cast<std::uint64_t>(round)) return false;
        std::uint64_t last = its_round * ids_per_round;
        for (const std::set<std::uint64_t>* ids : {&confirmed, &acking, &acked}) {
            const auto above = ids->lower_bound((its_round + 1) * ids_per_round + 1);
            if (above != ids->begin()) last = std::max(last, *std::prev(above));
        }
        return id <= last + 32;
    }
};

Log read_log(const std::string& path) {
    Log log;
    std::ifstream in(path);
    char kind = 0;
    std::uint64_t id = 0;
    while (in >> kind >> id) (kind == 'c' ? log.confirmed : kind == 't' ? log.acking : log.acked).insert(id);
    return log;
}

// Waits (bounded) until the worker of `round` has logged a confirm: a round killed before
// any publish of its own was confirmed checks nothing new. The log is read while the
// worker appends to it; a line read half-written holds a smaller id, never one of the round.
bool wait_confirmed(const std::string& log_path, int round) {
    const std::uint64_t first = round * ids_per_round + 1;
    return testing_support::eventually(
        [&] {
            const Log log = read_log(log_path);
            return log.confirmed.lower_bound(first) != log.confirmed.end();
        },
        std::chrono::seconds(60));
}

struct Queued {
    std::vector<std::uint64_t> ids;
    std::size_t redelivered = 0;
};

// The queue "drill" in `file`, read by a broker opened on it here once its owner is dead.
Queued read_queue(const std::string& file, int round) {
    auto broker = acemq::inproc::broker("inspect-" + std::to_string(round), {.data = file});
    const auto connection = broker->open_connection();
    Queued queued;
    if (!broker->queue_exists(connection, "drill")) return queued;
    std::vector<acemq::Delivery> held;
    while (auto delivery = broker->pull(connection, "drill")) {
        std::string text;
        for (std::byte b : delivery->message().body()) text.push_back(static_cast<char>(b));
        queued.ids.push_back(std::stoull(text));
        queued.redelivered += delivery->message().redelivered();
        held.push_back(std::move(*delivery));
    }
    broker->close_connection(connection);
    return queued;
}

struct Totals {
    std::size_t confirmed = 0, acked = 0, queued = 0, acked_came_back = 0;
};

// Checks one round's file against the log; adds to `totals`.
void check_round(const std::string& file, const std::string& log_path, int round, bool acks_are_final, Totals& totals) {
    const Log log = read_log(log_path);
    const Queued queued = read_queue(file, round);
    const std::set<std::uint64_t> present(queued.ids.begin(), queued.ids.end());
    INFO("round " << round << ": " << log.confirmed.size() << " confirmed, " << log.acked.size() << " acked, "
                  << queued.ids.size() << " in the queue");
    REQUIRE(present.size() == queued.ids.size());
    REQUIRE(std::is_sorted(queued.ids.begin(), queued.ids.end()));
    for (std::uint64_t id : log.confirmed)
        if (!log.acking.contains(id)) REQUIRE(present.contains(id));
    std::size_t came_back = 0;
    for (std::uint64_t id : queued.ids) {
        REQUIRE(log.maybe_published(id, round));
        if (log.acked.contains(id)) ++came_back;
    }
    if (acks_are_final) REQUIRE(came_back == 0);
    std::printf("round %2d: %zu confirmed, %zu acked so far; %zu in the queue, %zu of them acked before\n", round,
                log.confirmed.size(), log.acked.size(), queued.ids.size(), came_back);
    // After a crash every message comes back marked redelivered: it may have been handed out.
    CHECK(queued.redelivered == queued.ids.size());
    totals = Totals{log.confirmed.size(), log.acked.size(), queued.ids.size(), totals.acked_came_back + came_back};
}

// The seed of a drill's kill moments: ACEMQ_KILL9_SEED when set (to replay a failure),
// else a fresh one; printed either way.
unsigned seed_for(const char* drill) {
    const char* given = std::getenv("ACEMQ_KILL9_SEED");
    const unsigned seed =
        given != nullptr && *given != '\0' ? static_cast<unsigned>(std::stoul(given)) : std::random_device{}();
    std::printf("%s: seed %u (ACEMQ_KILL9_SEED=%u replays its kill moments)\n", drill, seed, seed);
    return seed;
}

void print(const char* drill, const Totals& totals) {
    std::printf(
        "%s: %d kills; %zu confirmed, %zu acked, %zu in the queue at the end, %zu acked ones came back "
        "(redelivered); no confirmed message lost\n",
        drill, rounds, totals.confirmed, totals.acked, totals.queued, totals.acked_came_back);
}

}  // namespace

TEST_CASE("kill -9 of a process that is its own durable broker loses nothing confirmed, brings back nothing acked") {
    testing_support::TempDir directory("kill9-inproc");
    const std::string file = (directory.path() / "broker.db").string();
    const std::string log = (directory.path() / "worker.log").string();
    std::mt19937 random(seed_for("kill -9 of an inproc durable broker"));
    Totals totals;
    for (int round = 0; round < rounds; ++round) {
        {
            Worker worker("inproc://drill?data=" + file, log, round * ids_per_round + 1);
            REQUIRE(worker.wait_ready());
            REQUIRE(wait_confirmed(log, round));
            std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 300)(random)));
        }
        check_round(file, log, round, true, totals);
    }
    print("kill -9 of an inproc durable broker", totals);
    CHECK(totals.confirmed > 1000);
    CHECK(totals.acked > 1000);
}

TEST_CASE("kill -9 of a durable acemq-broker loses nothing confirmed") {
    testing_support::TempDir directory("kill9-broker");
    const std::string file = (directory.path() / "broker.db").string();
    const std::string log = (directory.path() / "worker.log").string();
    // Loopback, a port of the system's choosing in the first round and the same one after.
    std::string endpoint = "tcp://127.0.0.1:0";
    std::mt19937 random(seed_for("kill -9 of a durable acemq-broker"));
    Totals totals;
    for (int round = 0; round < rounds; ++round) {
        {
            zmq_test::BrokerProcess broker(ACEMQ_BROKER_PROGRAM, {"--data", file, "--listen", endpoint});
            if (round > 0) REQUIRE(broker.endpoint() == endpoint);
            endpoint = broker.endpoint();
            Worker worker(broker.url(), log, round * ids_per_round + 1);
            REQUIRE(worker.wait_ready());
            REQUIRE(wait_confirmed(log, round));
            std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 300)(random)));
            broker.stop(SIGKILL);
            worker.kill();  // what it logged is all it was told before the broker died
        }
        check_round(file, log, round, false, totals);
    }
    print("kill -9 of a durable acemq-broker", totals);
    CHECK(totals.confirmed > 1000);
    CHECK(totals.acked > 1000);
}
