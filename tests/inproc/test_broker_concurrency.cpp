// Several threads publishing, several consumers acking from their own threads: every
// message is delivered exactly once and nothing deadlocks. Run under ThreadSanitizer too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <thread>
#include <vector>

#include "../support/wait.hpp"
#include "inbox.hpp"

using namespace acemq;
using namespace inproc_test;

TEST_CASE("concurrent publishers and ackers: every message delivered exactly once", "[inproc][threads]") {
    constexpr int publishers = 4;
    constexpr int per_publisher = 5000;
    constexpr int total = publishers * per_publisher;
    const std::string name = unique_name("concurrent");
    auto transport = open_transport("inproc://" + name);
    transport->declare(Topology{}
                           .exchange("t", ExchangeKind::topic)
                           .queue("q", QueueOptions{.type = QueueType::classic})
                           .bind("q", "t", "work.#"));

    Inbox inboxes[2];
    std::vector<std::unique_ptr<Subscription>> subscriptions;
    for (Inbox& inbox : inboxes) subscriptions.push_back(transport->consume("q", with_prefetch(10), inbox.deliver()));

    // Catch2 assertions are not thread-safe: threads only record, the test checks after join.
    std::vector<std::vector<int>> seen(2);
    std::atomic<int> acked{0};
    std::atomic<int> unrouted{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < 2; ++c) {
        threads.emplace_back([&, c] {
            int idle_waits = 0;
            std::size_t taken = 0;
            while (acked.load() < total && idle_waits < 50) {  // bounded: 5 s of nothing means stuck
                auto delivery = inboxes[c].take(std::chrono::milliseconds(100));
                if (!delivery) {
                    ++idle_waits;
                    continue;
                }
                idle_waits = 0;
                if (++taken % 7 == 0) {
                    delivery->requeue();  // some come back, to be counted when acked
                    continue;
                }
                seen[c].push_back(std::stoi(text(delivery->message().body())));
                delivery->ack();
                ++acked;
            }
        });
    }
    for (int p = 0; p < publishers; ++p) {
        threads.emplace_back([&, p] {
            for (int i = 0; i < per_publisher; ++i) {
                const bool direct = p % 2 == 0;
                const PublishResult result = transport->publish(message(direct ? "" : "t", direct ? "q" : "work.item",
                                                                        std::to_string(p * per_publisher + i), true));
                if (!result.routed) ++unrouted;
            }
        });
    }
    for (std::thread& thread : threads) thread.join();

    CHECK(unrouted.load() == 0);
    std::vector<int> all = seen[0];
    all.insert(all.end(), seen[1].begin(), seen[1].end());
    std::sort(all.begin(), all.end());
    std::vector<int> expected(static_cast<std::size_t>(total));
    std::iota(expected.begin(), expected.end(), 0);
    CHECK(all == expected);
    CHECK(transport->queue_depth("q") == 0);
    CHECK(inboxes[0].received() > 0);
    CHECK(inboxes[1].received() > 0);
    for (auto& subscription : subscriptions) subscription->close();
}

TEST_CASE("closing subscriptions while others publish and ack loses nothing", "[inproc][threads]") {
    constexpr int total = 4000;
    const std::string name = unique_name("churn");
    auto transport = open_transport("inproc://" + name);
    transport->declare(Topology{}.queue("q", QueueOptions{.type = QueueType::classic}));

    std::atomic<int> acked{0};
    std::thread publisher([&] {
        for (int i = 0; i < total; ++i) transport->publish(message("", "q", std::to_string(i)));
    });
    std::thread churner([&] {
        // Subscribes, takes a few, acks some and closes with the rest unacked, again and again.
        for (int round = 0; round < 200 && acked.load() < total; ++round) {
            Inbox inbox;
            auto subscription = transport->consume("q", with_prefetch(5), inbox.deliver());
            for (int k = 0; k < 3; ++k)
                if (auto delivery = inbox.take(std::chrono::milliseconds(20))) {
                    delivery->ack();
                    ++acked;
                }
            subscription->close();
        }
    });
    publisher.join();
    churner.join();
    // What the churner did not ack is all still there.
    int left = 0;
    while (auto delivery = transport->pull("q")) {
        delivery->ack();
        ++left;
    }
    CHECK(acked.load() + left == total);
}

TEST_CASE("timers firing on the clock's thread race publishers and consumers safely", "[inproc][threads]") {
    const std::string name = unique_name("timer-race");
    auto clock = std::make_shared<ManualClock>();
    auto broker = inproc::broker(name, clock);
    auto transport = open_transport("inproc://" + name);
    transport->declare(
        Topology{}
            .exchange("back", ExchangeKind::direct)
            .queue("wait", QueueOptions{.type = QueueType::classic,
                                        .arguments = {{"x-message-ttl", FieldValue(std::int64_t{1000})},
                                                      {"x-dead-letter-exchange", FieldValue("back")},
                                                      {"x-dead-letter-routing-key", FieldValue("home")}}})
            .queue("home", QueueOptions{.type = QueueType::classic})
            .bind("home", "back", "home"));
    Inbox inbox;
    auto subscription = transport->consume("home", with_prefetch(0), inbox.deliver());
    constexpr int total = 2000;
    std::atomic<bool> published{false};
    bool advanced_while_publishing = false;
    std::thread publisher([&] {
        for (int i = 0; i < total; ++i) transport->publish(message("", "wait", std::to_string(i)));
        published = true;
    });
    std::thread advancer([&] {
        // Bounded: should the publisher hang, the clock stops after a minute and the check
        // below says so.
        advanced_while_publishing = testing_support::eventually(
            [&] {
                clock->advance(std::chrono::milliseconds(100));
                return published.load();
            },
            std::chrono::seconds(60), std::chrono::milliseconds(0));
        clock->advance(std::chrono::seconds(2));
    });
    int got = 0;
    while (got < total) {
        auto delivery = inbox.take(std::chrono::milliseconds(5000));
        if (!delivery) break;  // checked below, once the threads are joined
        delivery->ack();
        ++got;
    }
    publisher.join();
    advancer.join();
    CHECK(advanced_while_publishing);
    CHECK(got == total);
    CHECK(transport->queue_depth("wait") == 0);
}
