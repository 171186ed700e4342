// The process the ack-rides-the-commit test kills (test_ack_rides_commit.cpp): on the durable
// broker of FILE it publishes one persistent message to the durable queue "acked", confirmed,
// pulls it and acks it on a connection opened with the default options, then prints "acked"
// and waits to be killed. MODE says what surrounds the ack:
//   before-commit  first the writer is held: a publish to the durable queue "held" whose
//                  ConfirmFn, run on the announcer's thread, never returns, and two more
//                  publishes there, each committed in a transaction of its own, which then
//                  wait to be announced behind it: the writer runs no further ahead (journal.hpp),
//                  so no commit follows the ack before the process dies;
//   after-commit   after the ack, one more confirmed publish to "held", whose commit is the
//                  next one, so it carries the ack's deletion.
//   ack_worker FILE MODE
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <future>
#include <optional>
#include <string>

#include <acemq/inproc.hpp>
#include "../support/queues.hpp"

namespace {

acemq::OutboundMessage persistent_to(std::string queue) {
    const std::string text = "for " + queue;
    acemq::OutboundMessage message{.routing_key = std::move(queue), .persistent = true};
    for (char c : text) message.body.push_back(static_cast<std::byte>(c));
    return message;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc == 3 ? argv[2] : "";
    if (mode != "before-commit" && mode != "after-commit") {
        std::fprintf(stderr, "usage: ack_worker FILE before-commit|after-commit\n");
        return 2;
    }
    auto broker = acemq::inproc::broker("ack-worker", {.data = argv[1]});
    const auto connection = broker->open_connection();
    broker->declare_queue(connection, testing_support::durable_queue("acked"));
    broker->declare_queue(connection, testing_support::durable_queue("held"));
    if (!broker->publish(persistent_to("acked")).confirmed) return 3;

    std::promise<void> announcer_held;
    if (mode == "before-commit") {
        const std::uint64_t commits = broker->info().commits;
        broker->publish(persistent_to("held"), [&](acemq::PublishResult) {
            announcer_held.set_value();
            for (;;) ::pause();
        });
        announcer_held.get_future().wait();
        // Bounded by the test, which kills this process when it has not said "acked" in time.
        for (std::uint64_t behind = 2; behind <= 3; ++behind) {
            broker->publish(persistent_to("held"), [](acemq::PublishResult) {});
            while (broker->info().commits < commits + behind) ::usleep(1000);
        }
    }
    std::optional<acemq::Delivery> delivery = broker->pull(connection, "acked");
    if (!delivery) return 4;
    delivery->ack();
    if (mode == "after-commit" && !broker->publish(persistent_to("held")).confirmed) return 5;
    std::printf("acked\n");
    std::fflush(stdout);
    for (;;) ::pause();
}
