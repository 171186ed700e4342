// The durable broker across simulated power cuts: its data file on a PowerCutDisk, the
// machine dying at a random write, sync or truncation (sometimes in the middle of a commit or
// a checkpoint), what the disk's cache held either dropped or partly kept, then the broker
// opened again. Every round: the file opens, every confirmed message that was not acked is
// there, nothing acked durably comes back, no message is there twice or out of order, and
// nothing is there that was never published. Each id's history is kept across rounds, so a
// message that was there at one open is there at the next unless it was acked in between,
// and one that was gone at an open (acked, or a publish refused) never comes back later.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include <acemq/inproc.hpp>
#include <acemq/log.hpp>
#include "../support/queues.hpp"
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
    for (std::byte b : message.body()) text.push_back(static_cast<char>(b));
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
    std::set<std::uint64_t> must_be_there;         // confirmed, not acked
    std::set<std::uint64_t> acked;                 // acked, with a synced commit seen to succeed after the ack's
    std::set<std::uint64_t> acked_unsynced;        // acked, its commit written but not yet synced by a later one
    std::set<std::uint64_t> may_be_there;          // published without a confirm, or acked when the disk was dying
    std::set<std::uint64_t> gone;                  // absent at an open after they were published: for good
    std::map<std::uint64_t, std::string> history;  // what happened to each id, round by round
    int round = 0;
    auto note = [&](std::uint64_t id, std::string_view what) {
        history[id] += " r" + std::to_string(round) + ":" + std::string(what);
    };
    auto histories = [&](const std::vector<std::uint64_t>& ids) {
        std::string told;
        for (std::size_t i = 0; i < ids.size() && i < 5; ++i)
            told += "\n  id " + std::to_string(ids[i]) + ":" + history[ids[i]];
        return told;
    };
    std::uint64_t next_id = 1, confirmed_total = 0, acked_total = 0, cuts_in_fresh_files = 0;
    const int cuts = testing_support::rounds_from("ACEMQ_POWER_CUTS", 1000);

    for (round = 0; round < cuts; ++round) {
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
        const auto connection = broker->open_connection({.acks_wait = true});
        broker->declare_queue(connection, testing_support::durable_queue("q"));
        const std::vector<std::uint64_t> there = ids_in_queue(*broker);
        const std::set<std::uint64_t> present(there.begin(), there.end());
        REQUIRE(present.size() == there.size());              // none twice
        REQUIRE(std::is_sorted(there.begin(), there.end()));  // publish order
        std::vector<std::uint64_t> lost, came_back, revived, never_published;
        for (std::uint64_t id : must_be_there)
            if (!present.contains(id)) lost.push_back(id);
        for (std::uint64_t id : there) {
            if (acked.contains(id)) came_back.push_back(id);
            if (gone.contains(id))
                revived.push_back(id);
            else if (!must_be_there.contains(id) && !may_be_there.contains(id))
                never_published.push_back(id);
        }
        // Confirmed, or there at the last open, and not acked since.
        INFO("lost:" << histories(lost));
        REQUIRE(lost.empty());
        INFO("acked durably, yet back:" << histories(came_back));
        REQUIRE(came_back.empty());
        // A stale write of an earlier life applied at a later open: a refused publish back, or
        // a message gone at an earlier open (acked) back again.
        INFO("gone at an earlier open, back now:" << histories(revived));
        REQUIRE(revived.empty());
        REQUIRE(never_published.empty());
        for (std::uint64_t id : there) note(id, "there");
        for (const auto* maybe : {&may_be_there, &acked, &acked_unsynced})
            for (std::uint64_t id : *maybe)
                if (!present.contains(id)) {
                    gone.insert(id);
                    note(id, "gone");
                }
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
                note(id, "ack-synced");
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
                const bool confirmed = broker->publish(numbered(id)).confirmed;
                note(id, confirmed ? "confirmed" : "refused");
                if (confirmed) {
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
                for (std::uint64_t id = next_id - window; id < next_id; ++id)
                    note(id, std::find(confirmed.begin(), confirmed.end(), id) != confirmed.end() ? "confirmed"
                                                                                                  : "refused");
                for (std::uint64_t id : confirmed) must_be_there.insert(id);
                confirmed_total += confirmed.size();
                if (!confirmed.empty()) settle_acks();
            } else {
                auto delivery = broker->pull(connection, "q");
                if (!delivery) continue;
                const std::uint64_t id = number_of(delivery->message());
                if (chance(20)) {
                    delivery->requeue();
                    continue;
                }
                delivery->ack();
                note(id, disk.operations() <= limit ? "acked" : "acked-dying");
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

// The ghost of issue 27: life A acks M and then M2, two commits of acks alone, unsynced; the
// cut tears M's frame and keeps M2's, so both come back. If life B's first frame were
// byte-identical to A's torn one (B acks M again, and nothing else was written since the
// open), the WAL's checksum chain would run on into A's stale frame, and the open after B
// would apply A's ack of M2: M2 gone, never acked in B.
TEST_CASE("a frame an earlier life wrote and never synced does not come back at a later open") {
    testing::PowerCutDisk disk("acemq-power-cut-ghost");
    const inproc::BrokerOptions options{.data = "/broker.db", .sqlite_vfs = disk.name()};
    const std::string wal = "/broker.db-wal";
    auto pull_and_ack = [](inproc::Broker& broker, std::uint64_t expected) {
        const auto connection = broker.open_connection({.acks_wait = true});
        auto delivery = broker.pull(connection, "q");
        REQUIRE(delivery);
        REQUIRE(number_of(delivery->message()) == expected);
        delivery->ack();
        broker.close_connection(connection);
    };
    auto power_cut = [&](std::shared_ptr<inproc::Broker>& broker, testing::PowerCutDisk::Mode mode) {
        disk.fail_after(0);  // nothing more reaches the disk, the clean close included
        broker.reset();
        disk.cut(std::move(mode));
    };

    auto broker = inproc::broker("ghost-a", options);
    const auto connection = broker->open_connection();
    broker->declare_queue(connection, testing_support::durable_queue("q"));
    broker->close_connection(connection);
    REQUIRE(broker->publish(numbered(1)).confirmed);
    REQUIRE(broker->publish(numbered(2)).confirmed);
    const std::int64_t before_first_ack = disk.file_size(wal);
    pull_and_ack(*broker, 1);
    const std::int64_t after_first_ack = disk.file_size(wal);
    pull_and_ack(*broker, 2);
    REQUIRE(after_first_ack > before_first_ack);     // the ack of 1 is a frame of its own
    REQUIRE(disk.file_size(wal) > after_first_ack);  // and so is the ack of 2
    power_cut(broker, testing::PowerCutDisk::Mode::keep_all_but(wal, before_first_ack, after_first_ack));

    broker = inproc::broker("ghost-b", options);
    REQUIRE(ids_in_queue(*broker) == std::vector<std::uint64_t>{1, 2});  // the torn frame ends the WAL
    pull_and_ack(*broker, 1);
    power_cut(broker, testing::PowerCutDisk::Mode::keep_all_but(wal, 0, 0));

    broker = inproc::broker("ghost-c", options);
    CHECK(ids_in_queue(*broker) == std::vector<std::uint64_t>{2});  // 2 was never acked in life B
}
