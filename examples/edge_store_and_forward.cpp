// Two processes on one box share a queue with no RabbitMQ installed: a sensor process
// publishes readings, each confirmed by the broker; this process, the uplink, consumes them
// and forwards them (here: prints them). The broker is the embedded one over ZeroMQ: hosted
// right here with acemq::zmq::serve (a desktop or edge app that is its own broker), or an
// acemq-broker process given by --url. The sensor is this program again, with --sensor.
//
//   build/examples/edge_store_and_forward                          hosts the broker itself
//   build/examples/edge_store_and_forward --url zmq+tcp://127.0.0.1:5680   an acemq-broker
#include <acemq/acemq.hpp>
#include <acemq/zmq.hpp>

#include "command_line.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
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
    acemq::Publisher publisher = bus.publisher("", "readings");
    for (int i = 1; i <= readings; ++i) publisher.send(Reading{"boiler-1", i, 60.0 + i / 10.0});
    std::printf("sensor (pid %d): sent %d readings, each confirmed by the broker\n", ::getpid(), readings);
    return 0;
}

// Starts this program again as the sensor; its pid.
pid_t start_sensor(const std::string& url) {
    std::fflush(stdout);
    const pid_t child = ::fork();
    if (child == 0) {
        ::execl("/proc/self/exe", "edge_store_and_forward", "--sensor", url.c_str(), nullptr);
        std::perror("exec");
        ::_exit(127);
    }
    return child;
}

int uplink(const std::string& url) {
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

    const pid_t child = start_sensor(url);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "the sensor process failed (status %d)\n", status);
        return 1;
    }
    std::unique_lock lock(mutex);
    if (!arrived.wait_for(lock, 10s, [&] { return forwarded == readings; })) {
        std::fprintf(stderr, "only %d of %d readings arrived within 10 s\n", forwarded, readings);
        return 1;
    }
    std::printf("uplink (pid %d): last reading %s\n", ::getpid(), last.c_str());
    std::printf("uplink (pid %d): forwarded %d of %d readings from the sensor process (pid %d) through %s\n",
                ::getpid(), forwarded, readings, child, url.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return example::run("edge_store_and_forward", [&] {
        if (auto url = example::option(argc, argv, "--sensor")) return sensor(*url);
        if (auto url = example::option(argc, argv, "--url")) return uplink(*url);
        // No broker given: this process is the broker for its helper, on a socket of its own.
        auto broker = acemq::inproc::broker("edge");
        const std::string endpoint = "ipc:///tmp/acemq-edge-" + std::to_string(::getpid()) + ".sock";
        auto server = acemq::zmq::serve(broker, {endpoint});
        std::printf("uplink (pid %d): hosting the broker on %s\n", ::getpid(), endpoint.c_str());
        return uplink("zmq+" + endpoint);
    });
}
