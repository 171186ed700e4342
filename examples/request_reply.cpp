// A desktop UI asks its helper process for answers and waits for them: request/reply over
// a broker. The UI (this process) starts the helper (this program again, with --helper),
// asks it one question and waits, then puts several in flight at once, then asks one the
// helper cannot answer and hears why. The helper answers from a queue until it is told to
// stop (SIGTERM). Neither needs the other to be up first: a question waits in its queue.
//
// The same code runs on the embedded broker over ZeroMQ and on RabbitMQ; only the URL differs:
//
//   build/tools/acemq-broker --listen tcp://127.0.0.1:5680 &
//   build/examples/request_reply --url zmq+tcp://127.0.0.1:5680
//   build/examples/request_reply --url amqp://guest:guest@localhost:5672/
#include <acemq/acemq.hpp>

#include "command_line.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std::chrono_literals;

struct Question {
    std::string operation;  // "add" or "divide"
    std::int64_t left = 0;
    std::int64_t right = 0;
};

struct Answer {
    std::int64_t value = 0;
    std::int32_t helper_pid = 0;
};

namespace {

const std::string questions = "helper.questions";
const acemq::Topology topology = acemq::Topology{}.queue(questions, {.dead_letter = true});

Answer work_out(const acemq::Message<Question>& question) {
    const Question& q = question.payload;
    if (q.operation == "add") return Answer{q.left + q.right, ::getpid()};
    if (q.operation == "divide" && q.right != 0) return Answer{q.left / q.right, ::getpid()};
    // Comes back to the UI as a ResponderError carrying this text, not as a timeout.
    throw std::domain_error("cannot " + q.operation + " " + std::to_string(q.left) + " by " + std::to_string(q.right));
}

int helper(const std::string& url) {
    // Blocked before any thread starts, so that every thread leaves SIGTERM to sigwait.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    acemq::Bus bus = acemq::connect(url, {.origin = "helper@" + std::to_string(::getpid())});
    bus.declare(topology);
    acemq::Responder responder = acemq::serve<Question>(bus, questions, work_out);
    int signal = 0;
    sigwait(&stop, &signal);
    responder.close();
    std::printf("helper (pid %d): answered %llu questions\n", ::getpid(),
                static_cast<unsigned long long>(responder.answered()));
    return 0;
}

pid_t start_helper(const std::string& url) {
    std::fflush(stdout);
    const pid_t child = ::fork();
    if (child == 0) {
        const char* argv[] = {"request_reply", "--helper", "--url", url.c_str(), nullptr};
        ::execv("/proc/self/exe", const_cast<char* const*>(argv));
        std::perror("exec");
        ::_exit(127);
    }
    if (child < 0) throw std::runtime_error("could not start the helper process");
    return child;
}

int ui(const std::string& url) {
    const pid_t helper_pid = start_helper(url);
    int answered = 0;
    try {
        acemq::Bus bus = acemq::connect(url, {.origin = "ui@" + std::to_string(::getpid())});
        bus.declare(topology);
        acemq::Requester helper{bus, "", questions, {.timeout = 10s}};

        // One question, and the UI waits for its answer.
        const Answer sum = helper.ask<Answer>(Question{"add", 40, 2});
        std::printf("ui: 40 + 2 = %lld (answered by pid %d)\n", static_cast<long long>(sum.value), sum.helper_pid);
        ++answered;

        // Several at once: each future is matched to its own answer, whatever order they come in.
        std::vector<std::future<Answer>> pending;
        for (std::int64_t i = 1; i <= 4; ++i) pending.push_back(helper.ask_async<Answer>(Question{"divide", 100, i}));
        for (std::int64_t i = 1; i <= 4; ++i) {
            const Answer quotient = pending[i - 1].get();
            std::printf("ui: 100 / %lld = %lld\n", static_cast<long long>(i), static_cast<long long>(quotient.value));
            ++answered;
        }

        // A question the helper cannot answer: its failure comes back at once.
        try {
            helper.ask<Answer>(Question{"divide", 1, 0});
        } catch (const acemq::ResponderError& error) {
            std::printf("ui: the helper could not answer: %s\n", error.text().c_str());
        }
        std::printf("ui (pid %d): %d questions answered by the helper process (pid %d), 1 refused\n", ::getpid(),
                    answered, static_cast<int>(helper_pid));
    } catch (...) {
        ::kill(helper_pid, SIGTERM);
        ::waitpid(helper_pid, nullptr, 0);
        throw;
    }
    std::fflush(stdout);
    ::kill(helper_pid, SIGTERM);
    int status = 0;
    ::waitpid(helper_pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("the helper process failed");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return example::run("request_reply", [&] {
        const std::optional<std::string> url = example::option(argc, argv, "--url");
        if (!url)
            throw std::invalid_argument(
                "say which broker with --url: zmq+tcp://HOST:PORT of an acemq-broker, or amqp://... of RabbitMQ");
        const bool is_helper = argc > 1 && std::string(argv[1]) == "--helper";
        return is_helper ? helper(*url) : ui(*url);
    });
}
