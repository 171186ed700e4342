// Suite `amqp-settlements`: a subscription's settlements written as few frames as AMQP allows
// (one basic.ack with `multiple` for a settled run; test_open_deliveries.cpp has the frames
// themselves) settle exactly the messages they were made for, on RabbitMQ. Each case settles,
// closes the subscription (its unsettled deliveries go back to the queue, after every
// settlement made before the close) and reads where each message is now: a `multiple` that
// covered one delivery too many leaves a queue short. Needs ACEMQ_TEST_AMQP_URL, and
// ACEMQ_TEST_RABBITMQCTL for the recovery case (scripts/servers.sh); fails without them.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>
#include <acemq/amqp.hpp>
#include <acemq/uuid.hpp>

#include "../support/rabbitmq.hpp"
#include "../support/wait.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using acemq::Delivery;
using testing_support::eventually;

std::string unique(std::string_view base) {
    return "settlements." + std::string(base) + "." + acemq::new_uuid().substr(0, 8);
}

// What a subscription handed out, in arrival order. Filled on the transport's I/O thread.
class Received {
public:
    acemq::DeliverFn sink() {
        return [this](Delivery delivery) {
            std::lock_guard lock(mutex_);
            deliveries_.push_back(std::move(delivery));
        };
    }
    std::size_t count() {
        std::lock_guard lock(mutex_);
        return deliveries_.size();
    }
    // The `index`th delivery, once there.
    Delivery& at(std::size_t index) {
        REQUIRE(eventually([&] { return count() > index; }));
        std::lock_guard lock(mutex_);
        return deliveries_[index];
    }
    std::string id_of(std::size_t index) { return std::string(at(index).message().message_id()); }

private:
    std::mutex mutex_;
    std::vector<Delivery> deliveries_;
};

// A queue of its own with messages m1..m`count`, published and confirmed.
class Queue {
public:
    Queue(acemq::Transport& transport, std::string_view base, int count, acemq::QueueOptions options = {})
        : transport_(transport), name_(unique(base)) {
        options.type = acemq::QueueType::classic;
        transport_.declare(acemq::Topology{}.queue(name_, options));
        dead_letter_ = options.dead_letter;
        for (int i = 1; i <= count; ++i) {
            const acemq::PublishResult result = transport_.publish(
                {.routing_key = name_, .body = acemq::Bytes(8), .message_id = "m" + std::to_string(i)});
            REQUIRE(result.confirmed);
        }
    }
    ~Queue() {
        try {
            transport_.delete_queue(name_);
            if (dead_letter_) {
                transport_.delete_queue(name_ + ".dlq");
                transport_.delete_queue(name_ + ".parked");
            }
        } catch (const std::exception&) {
            // The broker may be gone already; the names are unique.
        }
    }
    const std::string& name() const noexcept { return name_; }

    // The ids of what waits in `queue` now, taken off it (and acked).
    std::multiset<std::string> drain(const std::string& queue) {
        std::multiset<std::string> ids;
        while (std::optional<Delivery> pulled = transport_.pull(queue)) {
            ids.insert(std::string(pulled->message().message_id()));
            pulled->ack();
        }
        return ids;
    }

private:
    acemq::Transport& transport_;
    std::string name_;
    bool dead_letter_ = false;
};

using Ids = std::multiset<std::string>;

// Runs `$ACEMQ_TEST_RABBITMQCTL arguments`; its output. The arguments are the test's own words.
std::string rabbitmqctl(const std::string& arguments) {
    const std::string command =
        "timeout -k 5 60 '" + testing_support::rabbitmq_variable("ACEMQ_TEST_RABBITMQCTL") + "' " + arguments + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) throw std::runtime_error("cannot run " + command);
    std::string output;
    char buffer[4096];
    for (std::size_t read; (read = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, read);
    const int status = ::pclose(pipe);
    INFO("rabbitmqctl " << arguments << " said: " << output);
    REQUIRE(status == 0);
    return output;
}

// Closes, from the broker's side, the connection that introduced itself as `name`.
void close_connection_named(const std::string& name) {
    std::istringstream lines(rabbitmqctl("list_connections -q --no-table-headers pid client_properties"));
    for (std::string line; std::getline(lines, line);) {
        if (line.find(name) == std::string::npos) continue;
        const std::string pid = line.substr(0, line.find_first_of(" \t"));
        rabbitmqctl("close_connection '" + pid + "' 'acemq test: a recovery between settlements'");
        return;
    }
    FAIL("no connection named " << name << " on the broker");
}

}  // namespace

TEST_CASE("acks above an unsettled delivery settle only themselves; it is settled when it is settled") {
    auto transport = acemq::amqp::open(testing_support::amqp_url());
    Queue queue(*transport, "out-of-order", 4);
    Received received;
    auto subscription = transport->consume(queue.name(), {.prefetch = 10}, received.sink());
    REQUIRE(received.id_of(3) == "m4");

    SECTION("m1 unsettled: the acks of m2 and m3 leave it, and m4, to go back") {
        received.at(1).ack();
        received.at(2).ack();
        subscription->close();
        CHECK(queue.drain(queue.name()) == Ids{"m1", "m4"});
    }
    SECTION("m1 acked after m2 and m3: only m4 goes back") {
        received.at(2).ack();
        received.at(1).ack();
        received.at(0).ack();
        subscription->close();
        CHECK(queue.drain(queue.name()) == Ids{"m4"});
    }
}

TEST_CASE("a closed subscription's unsettled deliveries are back in the queue when close returns") {
    auto transport = acemq::amqp::open(testing_support::amqp_url());
    Queue queue(*transport, "closed-unsettled", 3);
    // Rounds, because the window it closes was a moment wide: a consumer cancelled before its
    // channel closed had its deliveries put back only once the channel's process had ended.
    for (int round = 0; round < 20; ++round) {
        INFO("round " << round);
        Received received;
        auto subscription = transport->consume(queue.name(), {.prefetch = 10}, received.sink());
        received.at(2);  // all three delivered, none settled
        subscription->close();
        REQUIRE(transport->queue_depth(queue.name()) == 3);
    }
    CHECK(queue.drain(queue.name()) == Ids{"m1", "m2", "m3"});
}

TEST_CASE("a mixed run of acks, requeues and rejects lands each message where it was sent") {
    auto transport = acemq::amqp::open(testing_support::amqp_url());
    Queue queue(*transport, "mixed", 7, {.dead_letter = true});
    Received received;
    auto subscription = transport->consume(queue.name(), {.prefetch = 20}, received.sink());
    REQUIRE(received.id_of(6) == "m7");
    // Back to back, so that most of them wait for the same wake of the I/O thread.
    received.at(0).ack();
    received.at(1).ack();
    received.at(2).requeue();
    received.at(3).requeue();
    received.at(4).reject();
    received.at(6).ack();  // above m6, which stays unsettled
    subscription->close();
    CHECK(queue.drain(queue.name()) == Ids{"m3", "m4", "m6"});
    REQUIRE(eventually([&] { return transport->queue_depth(queue.name() + ".dlq") > 0; }));
    CHECK(queue.drain(queue.name() + ".dlq") == Ids{"m5"});
}

TEST_CASE("a recovery between settlements: the old deliveries' acks settle none of the new ones") {
    const std::string name = unique("recovery-connection");
    auto transport =
        acemq::amqp::open(testing_support::amqp_url(), {.session = {.first_recovery_delay = 100ms, .name = name}});
    Queue queue(*transport, "recovery", 3);
    Received received;
    auto subscription = transport->consume(queue.name(), {.prefetch = 10}, received.sink());
    REQUIRE(received.id_of(2) == "m3");

    close_connection_named(name);
    // The broker gives the three back when the connection goes; the subscription consumes
    // again on the new one and gets them once more, under the same broker tags 1, 2, 3.
    REQUIRE(received.id_of(5) == "m3");
    CHECK(received.at(3).message().redelivered());
    received.at(0).ack();
    received.at(1).ack();
    received.at(2).ack();
    received.at(3).ack();  // the new m1
    subscription->close();
    CHECK(queue.drain(queue.name()) == Ids{"m2", "m3"});
}
