#include <catch2/catch.hpp>

#include <acemq/settlement.hpp>

using namespace acemq;
using namespace std::chrono_literals;

namespace {

Envelope at_attempt(std::int32_t attempt) {
    Envelope envelope = Envelope::for_new_message("orders.new");
    envelope.attempt = attempt;
    return envelope;
}

const std::runtime_error warehouse("the warehouse is not answering");

}  // namespace

TEST_CASE("accept, reject, park and in_progress settle without consulting the policy") {
    const RetryPolicy policy = fixed_retry(3, 0ms);
    CHECK(decide(accept(), at_attempt(1), policy, 0ms, 0.5).outcome == Outcome::acked);

    const Settlement rejected = decide(reject(warehouse), at_attempt(1), policy, 0ms, 0.5);
    CHECK(rejected.outcome == Outcome::rejected);
    CHECK(rejected.dead_lettered());
    CHECK(rejected.reason == "the handler rejected it: std::runtime_error: the warehouse is not answering");

    const Settlement parked = decide(park(warehouse), at_attempt(1), policy, 0ms, 0.5);
    CHECK(parked.outcome == Outcome::parked);
    CHECK_FALSE(parked.dead_lettered());
    CHECK(parked.reason == "the handler parked it: std::runtime_error: the warehouse is not answering");

    const Settlement later = decide(in_progress(3s), at_attempt(7), no_retry(), 0ms, 0.5);
    CHECK(later.outcome == Outcome::in_progress);
    CHECK(later.delay == 3s);
    CHECK_FALSE(later.dead_lettered());

    CHECK(decide(reject(), at_attempt(1), policy, 0ms, 0.5).reason == "the handler rejected it: no reason given");
}

TEST_CASE("retry consults the policy") {
    SECTION("no_retry dead-letters with the singular") {
        const Settlement settlement = decide(retry(warehouse), at_attempt(1), no_retry(), 0ms, 0.5);
        CHECK(settlement.outcome == Outcome::dead_lettered);
        CHECK(settlement.reason == "exhausted 1 attempt: std::runtime_error: the warehouse is not answering");
    }
    SECTION("the last attempt dead-letters with the plural") {
        const Settlement settlement = decide(retry(warehouse), at_attempt(3), fixed_retry(3, 1s), 0ms, 0.5);
        CHECK(settlement.reason == "exhausted 3 attempts: std::runtime_error: the warehouse is not answering");
    }
    SECTION("an attempt left: retried with the policy's wait") {
        const Settlement settlement = decide(retry(warehouse), at_attempt(1), fixed_retry(3, 1s), 0ms, 0.5);
        CHECK(settlement.outcome == Outcome::retried);
        REQUIRE(settlement.wait.has_value());
        CHECK(settlement.wait->delay == 1s);
        CHECK_FALSE(settlement.wait->in_broker);
        const Settlement long_wait = decide(retry(warehouse), at_attempt(1), fixed_retry(3, 2min), 0ms, 0.5);
        CHECK(long_wait.wait->in_broker);
        CHECK(long_wait.wait->delay == 2min);
    }
    SECTION("a message too old dead-letters with the age sentence") {
        const RetryPolicy policy = fixed_retry(5, 1s).give_up_after(2min);
        const Settlement settlement = decide(retry(warehouse), at_attempt(2), policy, 2min, 0.5);
        CHECK(settlement.outcome == Outcome::dead_lettered);
        CHECK(settlement.reason ==
              "exceeded the maximum message age of 2m: std::runtime_error: the warehouse is not answering");
        CHECK(decide(retry(warehouse), at_attempt(2), policy, std::nullopt, 0.5).outcome == Outcome::retried);
    }
    SECTION("a fatal failure skips the ladder") {
        const Settlement settlement =
            decide(retry(FatalError("no such sku")), at_attempt(1), fixed_retry(5, 1s), 0ms, 0.5);
        CHECK(settlement.outcome == Outcome::dead_lettered);
        CHECK(settlement.reason == "the handler reported an unprocessable message: acemq::FatalError: no such sku");
    }
}

TEST_CASE("an undecodable body is parked with the decoder's words") {
    const Settlement settlement =
        undecodable(DecodeError("acemq: cannot decode a Payment from application/msgpack: bad"));
    CHECK(settlement.outcome == Outcome::parked);
    CHECK(settlement.reason ==
          "could not be decoded: acemq::DecodeError: acemq: cannot decode a Payment from application/msgpack: bad");
}

TEST_CASE("outcome words and durations as the reasons write them") {
    CHECK(to_string(Outcome::acked) == "acked");
    CHECK(to_string(Outcome::retried) == "retried");
    CHECK(to_string(Outcome::rejected) == "rejected");
    CHECK(to_string(Outcome::dead_lettered) == "dead_lettered");
    CHECK(to_string(Outcome::parked) == "parked");
    CHECK(to_string(Outcome::in_progress) == "in_progress");
    CHECK(format_duration(0ms) == "0s");
    CHECK(format_duration(500ms) == "500ms");
    CHECK(format_duration(90s) == "1m30s");
    CHECK(format_duration(2h) == "2h");
    CHECK(format_duration(3723004ms) == "1h2m3s4ms");
}
