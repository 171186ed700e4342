// An in-process ack on the durable broker rides the next commit (ConnectionOptions::acks_wait
// is false by default): it returns before its deletion is committed, so a kill -9 before that
// commit brings the acked message back, marked redelivered, and a kill -9 after it does not.
// The worker (tests/durable/ack_worker.cpp) holds the broker's writer to make "before" sure.
// Two processes and two opens of a small file: well under a second of CPU in all.
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <acemq/inproc.hpp>
#include "../support/temp_dir.hpp"

namespace ack_rides_commit {

// Runs the worker on `file` in `mode` until it says it acked, or for 20 s at most, then kills
// it with SIGKILL. What it said.
std::string run_and_kill(const std::string& file, const char* mode) {
    int out[2];
    REQUIRE(::pipe(out) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::dup2(out[1], STDOUT_FILENO);
        ::close(out[0]);
        ::execl(ACEMQ_ACK_WORKER, "ack_worker", file.c_str(), mode, nullptr);
        ::_exit(127);
    }
    ::close(out[1]);
    std::string said;
    pollfd readable{out[0], POLLIN, 0};
    char buffer[64];
    while (said.find('\n') == std::string::npos && ::poll(&readable, 1, 20'000) == 1) {
        const ssize_t got = ::read(out[0], buffer, sizeof buffer);
        if (got <= 0) break;
        said.append(buffer, static_cast<std::size_t>(got));
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(out[0]);
    CHECK(WIFSIGNALED(status));
    return said;
}

struct Found {
    std::size_t messages = 0;
    std::size_t redelivered = 0;
};

// What `queue` holds in `file`, read by a broker opened on it once its owner is dead.
Found read_back(const std::string& file, const std::string& queue) {
    auto broker = acemq::inproc::broker("ack-rides-inspect", {.data = file});
    const auto connection = broker->open_connection();
    Found found;
    std::vector<acemq::Delivery> held;
    while (auto delivery = broker->pull(connection, queue)) {
        ++found.messages;
        found.redelivered += delivery->message().redelivered();
        held.push_back(std::move(*delivery));
    }
    broker->close_connection(connection);
    return found;
}

}  // namespace ack_rides_commit

TEST_CASE("an in-process ack killed before the next commit brings its message back, marked redelivered") {
    testing_support::TempDir directory("ack-before-commit");
    const std::string file = (directory.path() / "broker.db").string();
    // An ack that waited for its commit would never return here: the writer is held.
    REQUIRE(ack_rides_commit::run_and_kill(file, "before-commit") == "acked\n");
    const ack_rides_commit::Found acked = ack_rides_commit::read_back(file, "acked");
    CHECK(acked.messages == 1);
    CHECK(acked.redelivered == 1);
}

TEST_CASE("an in-process ack is final once the next commit is made: killed after it, its message stays gone") {
    testing_support::TempDir directory("ack-after-commit");
    const std::string file = (directory.path() / "broker.db").string();
    REQUIRE(ack_rides_commit::run_and_kill(file, "after-commit") == "acked\n");
    CHECK(ack_rides_commit::read_back(file, "acked").messages == 0);
    CHECK(ack_rides_commit::read_back(file, "held").messages == 1);  // the commit after the ack's did land
}
