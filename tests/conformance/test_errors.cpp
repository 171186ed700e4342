// Publishes that cannot succeed fail the same way on every transport, with one true
// sentence: a publish to an exchange nobody declared, and a publish after the bus closed.
#include "conformance.hpp"

namespace conformance {

TEST_CASE("a publish to an exchange that does not exist is a PublishError naming the exchange") {
    Fixture f;
    const std::string missing = f.name("never.declared");
    try {
        f.bus().publisher(missing, "orders").send(Order{"o-1", 1});
        FAIL("a publish to a missing exchange returned normally");
    } catch (const acemq::PublishError& error) {
        CHECK_FALSE(error.unroutable());
        CHECK_FALSE(error.paused());
        CHECK_THAT(error.what(), Catch::StartsWith("acemq: cannot publish message " + error.message_id() +
                                                   " to exchange \"" + missing + "\" with key \"orders\"") &&
                                     Catch::Contains("404 NOT_FOUND - no exchange '" + missing + "'") &&
                                     Catch::Contains("the broker refused") && !Catch::Contains("unknown whether"));
    }
    // The transport is still usable: the next publish to an existing queue is confirmed.
    const std::string queue = f.source_queue("after.missing");
    CHECK(f.bus().publisher("", queue).send(Order{"o-2", 2}).confirmed);
    CHECK(f.wait_depth(queue, 1));
}

TEST_CASE("a publish after the bus closed says it was not sent, and nothing else") {
    Fixture f;
    const std::string queue = f.source_queue("closed.bus");
    const acemq::Publisher orders = f.bus().publisher("", queue);
    f.bus().close();
    try {
        orders.send(Order{"o-1", 1});
        FAIL("a publish after close returned normally");
    } catch (const acemq::PublishError& error) {
        CHECK_FALSE(error.unroutable());
        CHECK_THAT(
            error.what(),
            Catch::StartsWith("acemq: cannot publish message " + error.message_id() + " to exchange \"\" with key \"" +
                              queue + "\": it was not sent, nothing was written (") &&
                Catch::Contains("is closed") && !Catch::Contains("unknown whether") && !Catch::Contains("refused"));
    }
}

}  // namespace conformance
