// The `acemq` program as an operator runs it: spawned with its arguments, a few environment
// variables and standard input from a pipe (so never a terminal), its stdout, stderr and
// exit status captured. Every run is bounded: one that has not ended within the limit is
// killed and fails the test.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace operator_test {

struct Run {
    int status = -1;  // the exit status; -1 when it died of a signal
    std::string out;
    std::string err;
    std::string command;  // for the failure messages
};

struct RunOptions {
    std::vector<std::pair<std::string, std::string>> env{};  // set in the child
    std::vector<std::string> unset{};                        // removed from the child's environment
    std::string input{};                                     // its standard input
    std::chrono::seconds limit{60};
};

inline Run run_acemq(const std::vector<std::string>& arguments, const RunOptions& options = {}) {
    Run run;
    run.command = "acemq";
    for (const std::string& argument : arguments) run.command += " " + argument;
    int in[2], out[2], err[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0 || ::pipe(err) != 0) FAIL("pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) FAIL("fork failed");
    if (pid == 0) {
        ::dup2(in[0], 0);
        ::dup2(out[1], 1);
        ::dup2(err[1], 2);
        for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
        for (const std::string& name : options.unset) ::unsetenv(name.c_str());
        for (const auto& [name, value] : options.env) ::setenv(name.c_str(), value.c_str(), 1);
        std::vector<std::string> all{ACEMQ_PROGRAM};
        all.insert(all.end(), arguments.begin(), arguments.end());
        std::vector<char*> argv;
        for (std::string& argument : all) argv.push_back(argument.data());
        argv.push_back(nullptr);
        ::execv(ACEMQ_PROGRAM, argv.data());
        ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    // Small inputs only: the pipe's buffer holds them whole, so writing cannot block.
    if (!options.input.empty() && ::write(in[1], options.input.data(), options.input.size()) < 0)
        FAIL("cannot write the input of " << run.command);
    ::close(in[1]);
    const auto deadline = std::chrono::steady_clock::now() + options.limit;
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    std::string* sinks[2] = {&run.out, &run.err};
    int open = 2;
    while (open > 0) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            FAIL(run.command << " did not end within " << options.limit.count() << " s; stdout: " << run.out
                             << "\nstderr: " << run.err);
        }
        if (::poll(fds, 2, static_cast<int>(left)) < 0) continue;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
            char buffer[4096];
            const ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
            if (got > 0)
                sinks[i]->append(buffer, static_cast<std::size_t>(got));
            else {
                ::close(fds[i].fd);
                fds[i].fd = -1;
                --open;
            }
        }
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
}

// For a CHECK's message: what the run printed.
inline std::string told(const Run& run) {
    return run.command + " exited " + std::to_string(run.status) + "\nstdout:\n" + run.out + "\nstderr:\n" + run.err;
}

}  // namespace operator_test
