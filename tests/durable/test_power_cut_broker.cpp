// The durable broker across simulated power cuts: its data file on a PowerCutDisk, the
// machine dying at a random write, sync or truncation (sometimes in the middle of a commit or
// a checkpoint), what the disk's cache held either dropped or partly kept, then the broker
// opened again. Every round: the file opens, every confirmed message that was not acked is
// there, nothing acked durably comes back, no message is there twice or out of order, and
// nothing is there that was never published.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <random>
#include <set>

#include <acemq/inproc.hpp>
#include <acemq/log.hpp>
#include "../support/rounds.hpp"
#include "power_cut_vfs.hpp"

using namespace acemq;

namespace {

std::uint64_t seed() {
    if (const char* given = std::getenv("ACEMQ_FUZZ_SEED")) return std::strtoull(given, nullptr, 10);
    return std::random_device{}();
}

OutboundMessage numbered(std::uint64_t id) {
    const std::string text = std::to_string(id);
    Bytes body;
    for (char c : text) body.push_back(static_cast<std::byte>(c));
    return OutboundMessage{.routing_key = "q", .body = std::move(body), .persistent = true};
}

std::uint64_t number_of(const InboundMessage& message) {
    std::string text;
    for (std::byte b : message.body) text.push_back(static_cast<char>(b));
    return std::stoull(text);
}

// The ids in the queue, head first; pulled and handed back, so the queue is as it was.
std::vector<std::uint64_t> ids_in_queue(inproc::Broker& broker) {
    const auto connection = broker.open_connection();
    std::vector<std::uint64_t> ids;
    std::vector<Delivery> held;
    while (auto delivery = broker.pull(connection, "q")) {
        ids.push_back(number_of(delivery->message()));
        held.push_back(std::move(*delivery));
    }
    broker.close_connection(connection);
    return ids;
}

}  // namespace

TEST_CASE(
    "no confirmed message is lost across simulated power cuts (1000, or ACEMQ_POWER_CUTS), and the file always opens") {
    const std::uint64_t run_seed = seed();
    INFO("ACEMQ_FUZZ_SEED=" << run_seed);
    std::mt19937_64 random(run_seed);
    auto chance = [&](int percent) { return std::uniform_int_distribution<int>(0, 99)(random) < percent; };
    auto between = [&](std::uint64_t low, std::uint64_t high) {
        return std::uniform_int_distribution<std::uint64_t>(low, high)(random);
    };

    // The dying broker logs every commit the cut breaks: counted here, not printed a thousand times.
    std::atomic<std::uint64_t> commit_failures_logged{0};
    const LogSink previous = set_log_sink([&](LogLevel level, std::string_view line) {
        if (level == LogLevel::error && line.find("cannot commit") != std::string_view::npos) ++commit_failures_logged;
    });
    testing::PowerCutDisk disk("acemq-power-cut-broker");
    const inproc::BrokerOptions options{.data = "/broker.db", .sqlite_vfs = disk.name()};
    std::set<std::uint64_t> must_be_there;   // confirmed, not acked
    std::set<std::uint64_t> acked;           // acked, with a synced commit seen to succeed after the ack's
    std::set<std::uint64_t> acked_unsynced;  // acked, its commit written but not yet synced by a later one
    std::set<std::uint64_t> may_be_there;    // published without a confirm, or acked when the disk was dying
    std::uint64_t next_id = 1, confirmed_total = 0, acked_total = 0, cuts_in_fresh_files = 0;
    const int cuts = testing_support::rounds_from("ACEMQ_POWER_CUTS", 1000);

    for (int round = 0; round < cuts; ++round) {
        INFO("round " << round);
        // Now and then a cut while a new file is made: it must open afterwards, empty or not.
        if (chance(5)) {
            const inproc::BrokerOptions fresh{.data = "/fresh-" + std::to_string(round) + ".db",
                                              .sqlite_vfs = disk.name()};
            disk.fail_after(between(0, 12));
            try {
                inproc::broker("fresh-" + std::to_string(round), fresh);
            } catch (const Error&) {
                // The machine died while the file was made: what counts is the open after the cut.
            }
            disk.fail_after(0);
            disk.cut(chance(50) ? testing::PowerCutDisk::Mode::drop_unsynced()
                                : testing::PowerCutDisk::Mode::keep_random_sectors(random()));
            REQUIRE_NOTHROW(inproc::broker("fresh-again-" + std::to_string(round), fresh));
            ++cuts_in_fresh_files;
        }

        std::shared_ptr<inproc::Broker> broker;
        REQUIRE_NOTHROW(broker = inproc::broker("power-cut-" + std::to_string(round), options));
        const auto connection = broker->open_connection();
        broker->declare_queue(connection, QueueDeclaration{.name = "q",
                                                           .type = QueueType::classic,
                                                           .durable = true,
                                                           .exclusive = false,
                                                           .auto_delete = false,
                                                           .arguments = {}});
        const std::vector<std::uint64_t> there = ids_in_queue(*broker);
        const std::set<std::uint64_t> present(there.begin(), there.end());
        REQUIRE(present.size() == there.size());              // none twice
        REQUIRE(std::is_sorted(there.begin(), there.end()));  // publish order
        std::vector<std::uint64_t> lost, came_back, never_published;
        for (std::uint64_t id : must_be_there)
            if (!present.contains(id)) lost.push_back(id);
        for (std::uint64_t id : there) {
            if (acked.contains(id)) came_back.push_back(id);
            if (!must_be_there.contains(id) && !may_be_there.contains(id)) never_published.push_back(id);
        }
        REQUIRE(lost.empty());
        REQUIRE(came_back.empty());
        REQUIRE(never_published.empty());
        // What is there now is on the disk for sure: the next round starts from it.
        must_be_there = present;
        may_be_there.clear();
        acked.clear();
        acked_unsynced.clear();

        const std::uint64_t limit = disk.operations() + between(0, 60);
        disk.fail_after(limit - disk.operations());
        // A synced commit (a confirmed publish) after an ack's makes the ack durable too.
        auto settle_acks = [&] {
            for (std::uint64_t id : acked_unsynced) {
                acked.insert(id);
                may_be_there.erase(id);
                ++acked_total;
            }
            acked_unsynced.clear();
        };
        const int actions = static_cast<int>(between(1, 12));
        for (int action = 0; action < actions; ++action) {
            // A queue kept short, so each round reads back little: mostly acks once it grows.
            const bool long_queue = must_be_there.size() > 200;
            if (chance(long_queue ? 10 : 40)) {
                const std::uint64_t id = next_id++;
                may_be_there.insert(id);
                if (broker->publish(numbered(id)).confirmed) {
                    must_be_there.insert(id);
                    ++confirmed_total;
                    settle_acks();
                }
            } else if (chance(long_queue ? 10 : 60)) {
                const std::size_t window = between(2, 24);
                std::mutex mutex;
                std::condition_variable done;
                std::size_t waiting = window;
                std::vector<std::uint64_t> confirmed;
                for (std::size_t i = 0; i < window; ++i) {
                    const std::uint64_t id = next_id++;
                    may_be_there.insert(id);
                    broker->publish(numbered(id), [&, id](PublishResult result) {
                        std::lock_guard guard(mutex);
                        if (result.confirmed) confirmed.push_back(id);
                        if (--waiting == 0) done.notify_one();
                    });
                }
                std::unique_lock lock(mutex);
                REQUIRE(done.wait_for(lock, std::chrono::seconds(30), [&] { return waiting == 0; }));
                for (std::uint64_t id : confirmed) must_be_there.insert(id);
                confirmed_total += confirmed.size();
                if (!confirmed.empty()) settle_acks();
            } else {
                auto delivery = broker->pull(connection, "q");
                if (!delivery) continue;
                const std::uint64_t id = number_of(delivery->message());
                if (chance(20)) {
                    delivery->nack(true);
                    continue;
                }
                delivery->ack();
                must_be_there.erase(id);
                // The ack returned after its commit ended; every operation up to now within the
                // limit means that commit reached the disk.
                // A commit of acks alone is not synced: until a synced commit follows, a power
                // cut may take it back and bring the message back.
                may_be_there.insert(id);
                if (disk.operations() <= limit) acked_unsynced.insert(id);
            }
        }
        disk.fail_after(0);  // the cut: nothing more reaches the disk, the clean close included
        broker->close_connection(connection);
        broker.reset();
        disk.cut(chance(50) ? testing::PowerCutDisk::Mode::drop_unsynced()
                            : testing::PowerCutDisk::Mode::keep_random_sectors(random()));
    }
    std::printf(
        "power cuts: %d (%llu while a file was made), %llu published, %llu confirmed, %llu acked durably, "
        "%zu confirmed and there after the last cut, %llu failed commits logged\n",
        cuts, static_cast<unsigned long long>(cuts_in_fresh_files), static_cast<unsigned long long>(next_id - 1),
        static_cast<unsigned long long>(confirmed_total), static_cast<unsigned long long>(acked_total),
        must_be_there.size(), static_cast<unsigned long long>(commit_failures_logged.load()));
    set_log_sink(previous);
    CHECK(confirmed_total > static_cast<std::uint64_t>(cuts));
    CHECK(acked_total > static_cast<std::uint64_t>(cuts / 10));
    CHECK(commit_failures_logged > static_cast<std::uint64_t>(cuts / 10));  // the cuts did land in commits
}
