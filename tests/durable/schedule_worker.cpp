// The process the scheduler's kill -9 test kills: on the durable broker of URL it schedules one
// message for QUEUE two seconds ahead, prints "PID ID DUE" (DUE: the earliest epoch ms it may
// arrive) once the broker has confirmed it, and waits to be killed.
//   schedule_worker URL QUEUE
#include <unistd.h>

#include <cstdio>

#include <acemq/bus.hpp>
#include <acemq/scheduler.hpp>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: schedule_worker URL QUEUE\n");
        return 2;
    }
    acemq::Bus bus = acemq::connect(argv[1]);
    bus.declare(acemq::Topology{}.queue(argv[2], {.type = acemq::QueueType::classic}));
    acemq::Scheduler scheduler{bus};
    const acemq::EpochMillis asked = acemq::epoch_millis_now();
    const acemq::SendResult sent = scheduler.after(std::chrono::seconds(2), "", argv[2], std::string("due in 2 s"));
    std::printf("%d %s %lld\n", static_cast<int>(::getpid()), sent.message_id.c_str(),
                static_cast<long long>((asked + std::chrono::seconds(2)).time_since_epoch().count()));
    std::fflush(stdout);
    for (;;) ::pause();
}
