// What cannot succeed fails the same way on every transport, with one true sentence: a
// publish to an exchange nobody declared, a publish after the bus closed, and a consume of a
// queue nobody declared, which leaves nothing behind on the broker.
#include "conformance.hpp"

namespace conformance {

TEST_CASE("a publish to an exchange that does not exist is a PublishError naming the exchange") {
    Fixture f;
    const std::string missing = f.name("never.declared");
    try {
        f.bus().publisher(missing, "orders").send(Order{"o-1", 1});
        FAIL("a publish to a missing exchange returned normally");
    } catch (const acemq::PublishError& error) {
        CHECK(error.reason() == acemq::PublishError::Reason::refused);
        CHECK_THAT(error.what(), Catch::StartsWith("acemq: cannot publish message " + error.message_id() +
                                                   " to exchange \"" + missing + "\" with key \"orders\"") &&
                                     Catch::Contains("404 NOT_FOUND - no exchange '" + missing + "'") &&
                                     Catch::Contains("the broker refused") && !Catch::Contains("unknown whether"));
    }
    // The transport is still usable: the next publish to an existing queue is confirmed.
    const std::string queue = f.source_queue("after.missing");
    CHECK(f.bus().publisher_to_queue(queue).send(Order{"o-2", 2}).confirmed);
    CHECK(f.wait_depth(queue, 1));
}

TEST_CASE("a publish after the bus closed says it was not sent, and nothing else") {
    Fixture f;
    const std::string queue = f.source_queue("closed.bus");
    const acemq::Publisher orders = f.bus().publisher_to_queue(queue);
    f.bus().close();
    try {
        orders.send(Order{"o-1", 1});
        FAIL("a publish after close returned normally");
    } catch (const acemq::PublishError& error) {
        CHECK(error.reason() == acemq::PublishError::Reason::not_sent);
        CHECK_THAT(
            error.what(),
            Catch::StartsWith("acemq: cannot publish message " + error.message_id() + " to exchange \"\" with key \"" +
                              queue + "\": it was not sent, nothing was written (") &&
                Catch::Contains("is closed") && !Catch::Contains("unknown whether") && !Catch::Contains("refused"));
    }
}

TEST_CASE("a consume of a queue that does not exist fails with NOT_FOUND and declares nothing for it") {
    Fixture f;
    const std::string missing = f.name("does.not.exist");
    const acemq::RetryPolicy policy = acemq::fixed_retry(3, 1s).wait_in_broker_from(1s);
    CHECK_THROWS_WITH(f.bus().consume_raw(missing, [](const acemq::Message<acemq::Bytes>&) { return acemq::accept(); },
                                          {.retry = policy}),
                      Catch::Contains("NOT_FOUND") && Catch::Contains(missing));
    // Its failure topology (dead letters, parking, the retry rung) would outlive the failed
    // consume as durable queues nobody asked for.
    for (const std::string& litter :
         {acemq::dead_letter_queue(missing), acemq::parked_queue(missing), acemq::rung_queue(missing, 1s)})
        CHECK_FALSE(f.transport().queue_exists(litter));
    // The bus is still usable: a consume of a queue that exists starts.
    const std::string queue = f.source_queue("exists", {.dead_letter = false});
    acemq::Consumer consumer =
        f.bus().consume_raw(queue, [](const acemq::Message<acemq::Bytes>&) { return acemq::accept(); });
    CHECK(f.transport().queue_exists(acemq::parked_queue(queue)));
}

}  // namespace conformance
