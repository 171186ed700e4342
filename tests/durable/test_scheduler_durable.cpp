// A scheduled message on the durable embedded broker outlives the broker: a clean restart, and
// a kill -9 of the process that is its own broker (tests/durable/schedule_worker.cpp), each
// while the message waits on a rung. Either way it comes back from the data file with the
// time it had left, and a new Scheduler delivers it once, not before it is due. About 3 s of
// wall time per case (the message's own wait), little CPU.
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>

#include <cstdio>

#include <acemq/bus.hpp>
#include <acemq/scheduler.hpp>
#include "../support/temp_dir.hpp"
#include "../support/wait.hpp"

using namespace std::chrono_literals;

namespace scheduler_durable {

std::uint64_t waiting(acemq::Bus& bus) {
    std::uint64_t total = bus.transport().queue_depth(acemq::schedule_due_queue);
    for (std::chrono::milliseconds rung : acemq::schedule_rungs)
        total += bus.transport().queue_depth(acemq::schedule_rung_queue(rung));
    return total;
}

// Reopens the broker on `url`'s file, checks the message is there, lets a new Scheduler
// deliver it, and checks it arrived once, with its id, not before `due`.
void deliver_after_restart(const std::string& url, const std::string& id, acemq::EpochMillis due) {
    acemq::Bus bus = acemq::connect(url);
    CHECK(waiting(bus) == 1);  // back from the file, on a rung or already due
    acemq::Scheduler scheduler{bus};
    std::optional<acemq::Delivery> delivery;
    REQUIRE(
        testing_support::eventually([&] { return (delivery = bus.transport().pull("reminders")).has_value(); }, 15s));
    CHECK(acemq::epoch_millis_now() >= due);
    CHECK(delivery->message().message_id() == id);
    delivery->ack();
    REQUIRE(testing_support::eventually([&] { return scheduler.delivered() == 1 && waiting(bus) == 0; }, 5s));
    CHECK(bus.transport().queue_depth("reminders") == 0);  // once
}

}  // namespace scheduler_durable

TEST_CASE("60 a scheduled message survives a restart of the durable broker and is delivered once when due") {
    testing_support::TempDir directory("schedule-restart");
    const std::string url = "inproc://schedule-restart?data=" + (directory.path() / "broker.db").string();
    std::string id;
    acemq::EpochMillis due;
    {
        acemq::Bus bus = acemq::connect(url);
        bus.declare(acemq::Topology{}.queue("reminders", {.type = acemq::QueueType::classic}));
        acemq::Scheduler scheduler{bus};
        due = acemq::epoch_millis_now() + 2s;
        id = scheduler.after(2s, "", "reminders", std::string("due in 2 s")).message_id;
        REQUIRE(scheduler.hops() == 1);
    }  // the scheduler, the bus and with them the broker close
    scheduler_durable::deliver_after_restart(url, id, due);
}

TEST_CASE("60 a scheduled message survives a kill -9 of the process that is its own durable broker") {
    testing_support::TempDir directory("schedule-kill9");
    const std::string url = "inproc://schedule-kill9?data=" + (directory.path() / "broker.db").string();
    FILE* worker = ::popen(("exec " ACEMQ_SCHEDULE_WORKER " '" + url + "' reminders").c_str(), "r");
    REQUIRE(worker != nullptr);
    pollfd readable{::fileno(worker), POLLIN, 0};
    REQUIRE(::poll(&readable, 1, 20'000) == 1);
    int pid = 0;
    char id[64] = {};
    long long due = 0;
    const int read = std::fscanf(worker, "%d %63s %lld", &pid, id, &due);
    if (read == 3) ::kill(pid, SIGKILL);  // while the message waits on the 1 s rung
    const int status = ::pclose(worker);
    REQUIRE(read == 3);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    scheduler_durable::deliver_after_restart(url, id, acemq::EpochMillis(std::chrono::milliseconds(due)));
}
