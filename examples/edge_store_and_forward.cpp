// Processes on one box share a queue with no RabbitMQ installed: a sensor process publishes
// readings, each confirmed by the broker; this process, the uplink, consumes them and
// forwards them (here: prints them). The broker is the embedded one over ZeroMQ.
//
// By default the broker is a process of its own, durable (its queue and readings in a
// SQLite file): the sensor's readings are confirmed and stored while the uplink is offline,
// then the broker is killed with SIGKILL, as a crash or a power cut would, and started again
// on its file; the uplink then forwards every confirmed reading. With --url it uses an
// acemq-broker you started instead. The sensor and the broker are this program again.
//
//   build/examples/edge_store_and_forward                          kills and restarts its broker
//   build/examples/edge_store_and_forward --url zmq+tcp://127.0.0.1:5680   an acemq-broker
#include <acemq/acemq.hpp>
#include <acemq/zmq.hpp>

#include "command_line.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>

using namespace std::chrono_literals;

struct Reading {
    std::string sensor;
    std::int32_t sequence;
    double celsius;
};

namespace {

constexpr int readings = 20;
const acemq::Topology topology = acemq::Topology{}.queue("readings", {.dead_letter = true});

int sensor(const std::string& url) {
    acemq::Bus bus = acemq::connect(url, {.origin = "sensor@" + std::to_string(::getpid())});
    bus.declare(topology);
    acemq::Publisher publisher = bus.publisher_to_queue("readings");
    for (int i = 1; i <= readings; ++i) publisher.send(Reading{"boiler-1", i, 60.0 + i / 10.0});
    std::printf("sensor (pid %d): sent %d readings, each confirmed by the broker\n", ::getpid(), readings);
    return 0;
}

// Starts this program again with `arguments`; its pid.
pid_t start_again(std::initializer_list<const char*> arguments) {
    std::fflush(stdout);
    const pid_t child = ::fork();
    if (child == 0) {
        std::vector<const char*> argv{"edge_store_and_forward"};
        argv.insert(argv.end(), arguments);
        argv.push_back(nullptr);
        ::execv("/proc/self/exe", const_cast<char* const*>(argv.data()));
        std::perror("exec");
        ::_exit(127);
    }
    return child;
}

bool run_sensor(const std::string& url) {
    const pid_t child = start_again({"--sensor", url.c_str()});
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
    std::fprintf(stderr, "the sensor process failed (status %d)\n", status);
    return false;
}

// A durable broker on `data`, served on `endpoint` until SIGTERM (or SIGKILL).
int host_broker(const std::string& data, const std::string& endpoint) {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    auto broker = acemq::inproc::broker("edge", {.data = data});
    auto server = acemq::zmq::serve(broker, {endpoint});
    int signal_number = 0;
    sigwait(&stop, &signal_number);
    return 0;
}

// Consumes readings until `expected` have been forwarded, or 10 s pass; how many were.
int forward(const std::string& url, int expected) {
    acemq::Bus bus = acemq::connect(url, {.origin = "uplink@" + std::to_string(::getpid())});
    bus.declare(topology);
    std::mutex mutex;
    std::condition_variable arrived;
    int forwarded = 0;
    std::string last;
    acemq::Consumer consumer = bus.consume<Reading>("readings", [&](const acemq::Message<Reading>& message) {
        std::lock_guard lock(mutex);
        ++forwarded;
        last = message.payload.sensor + " #" + std::to_string(message.payload.sequence) + " " +
               std::to_string(message.payload.celsius) + " C from " + message.envelope.origin;
        arrived.notify_all();
        return acemq::accept();
    });
    std::unique_lock lock(mutex);
    arrived.wait_for(lock, 10s, [&] { return forwarded >= expected; });
    if (forwarded > 0) std::printf("uplink (pid %d): last reading %s\n", ::getpid(), last.c_str());
    return forwarded;
}

int uplink(const std::string& url) {
    if (!run_sensor(url)) return 1;
    const int forwarded = forward(url, readings);
    std::printf("uplink (pid %d): forwarded %d of %d readings from the sensor process through %s\n", ::getpid(),
                forwarded, readings, url.c_str());
    return forwarded == readings ? 0 : 1;
}

// The store-and-forward story with a crash in the middle.
int survive_broker_crash() {
    const std::string stem = "/tmp/acemq-edge-" + std::to_string(::getpid());
    const std::string data = stem + ".db", endpoint = "ipc://" + stem + ".sock", url = "zmq+" + endpoint;
    pid_t broker = start_again({"--broker", data.c_str(), "--listen", endpoint.c_str()});
    std::printf("uplink (pid %d): broker (pid %d) keeps its queue in %s, served on %s\n", ::getpid(), broker,
                data.c_str(), endpoint.c_str());
    if (!run_sensor(url)) return 1;
    std::printf(
        "uplink (pid %d): %d readings confirmed and stored while the uplink is offline; killing the broker "
        "with SIGKILL, as a power cut would\n",
        ::getpid(), readings);
    ::kill(broker, SIGKILL);
    ::waitpid(broker, nullptr, 0);
    broker = start_again({"--broker", data.c_str(), "--listen", endpoint.c_str()});
    std::printf("uplink (pid %d): broker restarted (pid %d) on the same file\n", ::getpid(), broker);
    const int forwarded = forward(url, readings);
    ::kill(broker, SIGTERM);
    ::waitpid(broker, nullptr, 0);
    for (const char* suffix : {".db", ".db-wal", ".db-journal", ".sock"}) std::filesystem::remove(stem + suffix);
    std::printf("uplink (pid %d): after the crash, forwarded %d of %d confirmed readings: %s\n", ::getpid(), forwarded,
                readings, forwarded == readings ? "nothing confirmed was lost" : "SOME WERE LOST");
    return forwarded == readings ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    return example::run("edge_store_and_forward", [&] {
        if (auto url = example::option(argc, argv, "--sensor")) return sensor(*url);
        if (auto data = example::option(argc, argv, "--broker"))
            return host_broker(*data, example::option(argc, argv, "--listen").value_or(""));
        if (auto url = example::option(argc, argv, "--url")) return uplink(*url);
        return survive_broker_crash();
    });
}
