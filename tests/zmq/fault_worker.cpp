// A consumer process for zmq-faults: takes deliveries of QUEUE from the broker at URL with
// prefetch PREFETCH, prints "holding N" after each, and never settles them; the test
// SIGKILLs it mid-handling. Usage: zmq_fault_worker URL QUEUE PREFETCH
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <acemq/zmq.hpp>

int main(int argc, char* argv[]) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s URL QUEUE PREFETCH\n", argv[0]);
        return 2;
    }
    auto transport = acemq::zmq::open(argv[1], {.session = {.name = "zmq_fault_worker"}});
    std::mutex mutex;
    std::vector<acemq::Delivery> held;
    auto subscription = transport->consume(argv[2], {.prefetch = static_cast<std::uint16_t>(std::atoi(argv[3]))},
                                           [&](acemq::Delivery delivery) {
                                               std::lock_guard lock(mutex);
                                               held.push_back(std::move(delivery));
                                               std::printf("holding %zu\n", held.size());
                                               std::fflush(stdout);
                                           });
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}
