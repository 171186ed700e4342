// The family's tutorial 1: declare a queue, publish a message, consume it, print it.
// Runs on the embedded broker; give --url amqp://... to run the same code on RabbitMQ.
//
//   build/examples/first_message [--url URL]
#include <acemq/acemq.hpp>

#include "command_line.hpp"

#include <cstdio>
#include <future>
#include <string>

using namespace std::chrono_literals;

struct Greeting {
    std::string text;
    std::int32_t times;
};

namespace {

int run(const std::string& url) {
    acemq::Bus bus = acemq::connect(url, {.origin = "tutorial@first-message"});
    bus.declare(acemq::Topology{}.queue("greetings", {.dead_letter = true}));

    // The handler runs on a consumer thread; it hands what it saw to main, which prints.
    std::promise<acemq::Message<Greeting>> received;
    acemq::Consumer consumer = bus.consume<Greeting>("greetings", [&](const acemq::Message<Greeting>& message) {
        received.set_value(message);
        return acemq::accept();
    });

    const acemq::SendResult sent = bus.publisher_to_queue("greetings").send(Greeting{"hello, AceMQ", 3});
    std::printf("sent %s, confirmed by the broker\n", sent.message_id.c_str());

    std::future<acemq::Message<Greeting>> arrival = received.get_future();
    if (arrival.wait_for(5s) != std::future_status::ready) {
        std::fprintf(stderr, "the message did not arrive within 5 s\n");
        return 1;
    }
    const acemq::Message<Greeting> message = arrival.get();
    std::printf("received \"%s\" x%d (id %s, type %s, from %s)\n", message.payload.text.c_str(), message.payload.times,
                message.envelope.id.c_str(), message.envelope.type.c_str(), message.envelope.origin.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string url = example::option(argc, argv, "--url").value_or("inproc://first-message");
    return example::run("first_message", [&] { return run(url); });
}
