// The durable broker's journal. It holds back its writer's wake-up while a JournalBurst lives
// on the recording thread (the zmq server's received burst, a publish that commits itself):
// the changes go to the file together, in the recorder's own commit or in one the writer
// starts when the burst ends, and nothing is left waiting behind it. And its writer goes on
// committing while the announcer tells the broker (and through it consumers and publishers)
// about the transactions before, in their order, at most two of them behind.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "../support/temp_dir.hpp"
#include "../support/wait.hpp"
#include "inproc/journal.hpp"

using acemq::ExchangeDeclaration;
using acemq::inproc::detail::DataFile;
using acemq::inproc::detail::Journal;
using acemq::inproc::detail::JournalBurst;
namespace journal = acemq::inproc::detail::journal;
using testing_support::eventually;

namespace {

// A new data file `name` in `directory`, read and ready to be written, as a broker opens one.
std::unique_ptr<DataFile> writable_file(const testing_support::TempDir& directory, const char* name) {
    auto file = std::make_unique<DataFile>((directory.path() / name).string(), "", 0);
    file->read();
    file->make_writable();
    return file;
}

// A journal on a fresh data file in `directory`, its writer waiting for work, that notes which
// thread made each commit and how far commits got.
struct Noted {
    std::mutex mutex;
    std::thread::id committed_on{};
    std::atomic<std::uint64_t> through{0};
    std::unique_ptr<Journal> journal;

    explicit Noted(const testing_support::TempDir& directory) {
        journal = std::make_unique<Journal>(writable_file(directory, "burst.db"), [this](std::uint64_t last, bool ok) {
            REQUIRE(ok);
            std::lock_guard guard(mutex);
            committed_on = std::this_thread::get_id();
            through = last;
        });
        // The writer makes the copy and, all under the journal's lock, goes back to waiting
        // for work, which is when this returns: from here only a wake-up sets it going (a
        // writer thread starting late would find the first change recorded and take it).
        journal->backup((directory.path() / "parked.db").string());
    }
    ~Noted() { journal->close({}); }
    std::thread::id thread() {
        std::lock_guard guard(mutex);
        return committed_on;
    }
};

journal::Change exchange_named(std::string name) {
    ExchangeDeclaration exchange;
    exchange.name = std::move(name);
    return journal::PutExchange{std::move(exchange)};
}

// Long enough that a writer woken at the record commits within it, on any machine the suite
// runs on; only a broken burst is seen by it, never a slow machine.
constexpr auto grace = std::chrono::milliseconds(200);

}  // namespace

TEST_CASE("a change recorded in a JournalBurst waits for its recorder, which commits it on its own thread") {
    testing_support::TempDir directory{"journal-burst"};
    Noted noted(directory);
    {
        const JournalBurst burst(*noted.journal);
        const std::uint64_t sequence = noted.journal->record(exchange_named("held"));
        // The writer was not woken: nothing commits the change until its recorder waits.
        CHECK_FALSE(eventually([&] { return noted.through >= sequence; }, grace));
        noted.journal->wait(sequence);
        CHECK(noted.through >= sequence);
        CHECK(noted.thread() == std::this_thread::get_id());
    }
    // And again and again: giving the file back does not wake the writer either, so it never
    // takes a later change from under its recorder.
    for (int i = 0; i < 20; ++i) {
        const JournalBurst burst(*noted.journal);
        const std::uint64_t sequence = noted.journal->record(exchange_named("again-" + std::to_string(i)));
        noted.journal->wait(sequence);
        CHECK(noted.thread() == std::this_thread::get_id());
    }
}

TEST_CASE("what a JournalBurst held is committed by the writer once the outermost burst ends") {
    testing_support::TempDir directory{"journal-burst"};
    Noted noted(directory);
    std::uint64_t last = 0;
    {
        const JournalBurst outer(*noted.journal);
        {
            const JournalBurst inner(*noted.journal);
            noted.journal->record(exchange_named("first"));
        }
        last = noted.journal->record(exchange_named("second"));
        // The inner burst handed its change to the outer one, which still holds both.
        CHECK_FALSE(eventually([&] { return noted.through > 0; }, grace));
    }
    // Nobody waits for them: the writer, woken as the burst ended, commits both in one go.
    REQUIRE(eventually([&] { return noted.through >= last; }));
    CHECK(noted.thread() != std::this_thread::get_id());
    CHECK(noted.journal->commit_stats().commits == 1);
}

namespace {

// A journal whose Committed, told of a transaction, waits until the test lets it go on.
struct HeldAnnouncer {
    std::mutex mutex;
    std::condition_variable released;
    bool holding = true;
    std::vector<std::uint64_t> told;  // each Committed's `through`, in the order told
    bool told_on_writer_thread = true;
    std::unique_ptr<Journal> journal;

    explicit HeldAnnouncer(const testing_support::TempDir& directory) {
        journal =
            std::make_unique<Journal>(writable_file(directory, "announcer.db"), [this](std::uint64_t through, bool ok) {
                REQUIRE(ok);
                std::unique_lock lock(mutex);
                told.push_back(through);
                told_on_writer_thread = told_on_writer_thread && Journal::on_writer_thread();
                // Bounded: a writer that never comes back must fail the test, not hang it.
                released.wait_for(lock, std::chrono::seconds(20), [&] { return !holding; });
            });
    }
    ~HeldAnnouncer() {
        release();
        journal->close({});
    }
    void release() {
        {
            std::lock_guard guard(mutex);
            holding = false;
        }
        released.notify_all();
    }
    std::vector<std::uint64_t> told_so_far() {
        std::lock_guard guard(mutex);
        return told;
    }
    std::uint64_t commits() { return journal->commit_stats().commits; }
};

}  // namespace

TEST_CASE("the writer commits on while the transactions before are announced, at most two behind") {
    testing_support::TempDir directory{"journal-announcer"};
    HeldAnnouncer held(directory);
    const std::uint64_t first = held.journal->record(exchange_named("first"));
    // Its announcement holds the announcer.
    REQUIRE(eventually([&] { return held.told_so_far().size() == 1; }));
    CHECK(held.told_so_far().front() == first);

    // The writer is free: the next change is committed though the first's announcement has
    // not returned, and the one after it too, which waits to be announced second.
    const std::uint64_t second = held.journal->record(exchange_named("second"));
    REQUIRE(eventually([&] { return held.commits() == 2; }));
    const std::uint64_t third = held.journal->record(exchange_named("third"));
    REQUIRE(eventually([&] { return held.commits() == 3; }));
    // The third's announcement waits for room behind the second's, the writer with it: the
    // fourth change is not committed.
    const std::uint64_t fourth = held.journal->record(exchange_named("fourth"));
    CHECK_FALSE(eventually([&] { return held.commits() == 4; }, grace));
    CHECK(held.told_so_far().size() == 1);

    held.release();
    held.journal->wait(fourth);
    CHECK(held.commits() == 4);
    CHECK(held.told_so_far() == std::vector<std::uint64_t>{first, second, third, fourth});
    // Where the broker is told is the writer's side: it must not wait there for a commit.
    CHECK(held.told_on_writer_thread);
}
