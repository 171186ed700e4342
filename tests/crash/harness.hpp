// What the crash suites share: waiting for a worker process that is meant to die, bounded.
#pragma once

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include "../support/rounds.hpp"

namespace crash {

// How often each drill kills a worker at each dangerous point: 20, or ACEMQ_DRILL_TRIALS.
inline const int trials_per_point = testing_support::rounds_from("ACEMQ_DRILL_TRIALS", 20);

// Waits for `child` (the worker for crash point `point`); true when SIGKILL ended it, false
// when it exited with 0. Anything else fails the test. Bounded: a worker still running after
// `limit` is killed and fails the test instead of outliving it.
inline bool wait_for_worker(pid_t child, const std::string& point,
                            std::chrono::seconds limit = std::chrono::seconds(60)) {
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    pid_t ended = 0;
    while ((ended = waitpid(child, &status, WNOHANG)) == 0) {
        if (std::chrono::steady_clock::now() >= deadline) {
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            FAIL("the worker for crash point \"" << point << "\" did not end within " << limit.count() << " s");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    REQUIRE(ended == child);
    if (WIFSIGNALED(status)) {
        REQUIRE(WTERMSIG(status) == SIGKILL);
        return true;
    }
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return false;
}

}  // namespace crash
