// The process the kill -9 drills kill: it publishes numbered persistent messages to the
// durable queue "drill" in windows, with confirms, and consumes and acks them, until it is
// killed. It appends "c ID" to its log once a publish is confirmed, "t ID" before it acks
// (so a kill between the ack and its line still leaves a trace) and "a ID" once the ack
// returned, one write(2) each, which a SIGKILL cannot tear or lose.
//   kill9_worker URL LOG FIRST-ID
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include <acemq/bus.hpp>
#include <acemq/inproc.hpp>
#include <acemq/topology.hpp>
#include <acemq/transport.hpp>

namespace {

void log_line(int fd, char kind, std::uint64_t id) {
    const std::string line = std::string(1, kind) + " " + std::to_string(id) + "\n";
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::_Exit(3);
}

std::uint64_t id_of(const acemq::InboundMessage& message) {
    std::string text;
    for (std::byte b : message.body()) text.push_back(static_cast<char>(b));
    return std::stoull(text);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: kill9_worker URL LOG FIRST-ID\n");
        return 2;
    }
    const int fd = ::open(argv[2], O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) return 3;
    // In process the drill checks that no acked message comes back, the promise of acks that
    // wait for their commit.
    const std::string url = argv[1];
    std::shared_ptr<acemq::Transport> transport =
        url.starts_with("inproc://") ? acemq::inproc::open(url, {.acks_wait = true}) : acemq::open_transport(url);
    transport->declare(acemq::Topology{}.queue("drill", {.type = acemq::QueueType::classic}));

    std::mutex mutex;
    std::condition_variable arrived;
    std::deque<acemq::Delivery> inbox;
    auto subscription = transport->consume("drill", {.prefetch = 16}, [&](acemq::Delivery delivery) {
        std::lock_guard guard(mutex);
        inbox.push_back(std::move(delivery));
        arrived.notify_one();
    });
    std::thread consumer([&] {
        for (;;) {
            std::unique_lock lock(mutex);
            arrived.wait(lock, [&] { return !inbox.empty(); });
            acemq::Delivery delivery = std::move(inbox.front());
            inbox.pop_front();
            lock.unlock();
            const std::uint64_t id = id_of(delivery.message());
            log_line(fd, 't', id);
            delivery.ack();
            log_line(fd, 'a', id);
        }
    });
    std::printf("ready\n");
    std::fflush(stdout);

    std::mt19937 random(static_cast<unsigned>(::getpid()));
    for (std::uint64_t next = std::stoull(argv[3]);;) {
        // Consumers mid-stream, not a backlog: the publisher waits while the queue is long.
        while (transport->queue_depth("drill") > 2000) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::vector<acemq::OutboundMessage> window(std::uniform_int_distribution<std::size_t>(1, 32)(random));
        std::vector<std::uint64_t> ids;
        for (acemq::OutboundMessage& message : window) {
            const std::string text = std::to_string(next);
            for (char c : text) message.body.push_back(static_cast<std::byte>(c));
            message.routing_key = "drill";
            ids.push_back(next++);
        }
        const std::vector<acemq::PublishResult> results = transport->publish_batch(std::move(window));
        for (std::size_t i = 0; i < results.size(); ++i)
            if (results[i].confirmed) log_line(fd, 'c', ids[i]);
    }
}
