#include <catch2/catch.hpp>

#include <acemq/error.hpp>
#include <acemq/retry.hpp>
#include "../support/fixtures.hpp"
#include "../support/thrown.hpp"

using namespace acemq;
using std::chrono::milliseconds;

namespace {

std::vector<milliseconds> millis_list(const boost::json::value& list) {
    std::vector<milliseconds> out;
    for (const auto& item : list.as_array()) out.push_back(fixtures::millis(item));
    return out;
}

}  // namespace

TEST_CASE("every retry schedule of the contract fixture") {
    const auto document = fixtures::load("contract-fixtures.json");
    const auto& schedules = document.at("retrySchedules").as_array();
    REQUIRE(schedules.size() == 5);
    for (const auto& fixture : schedules) {
        SECTION(fixtures::text(fixture.at("name"))) {
            // The policy the fixture's "how" names, read as a topology file's "retry" is, so the
            // expectations below come from the fixture and not from a table written here.
            const RetryPolicy policy = parse_retry_policy(fixtures::text(fixture.at("how")));
            CHECK(policy.max_attempts() == fixture.at("maxAttempts").to_number<int>());
            CHECK(policy.max_message_age() == fixtures::millis(fixture.at("maxMessageAgeMillis")));
            CHECK((policy.max_message_age().count() > 0) == fixture.at("hasMaxMessageAge").as_bool());
            CHECK(policy.jitter_factor() == fixture.at("jitterFactor").to_number<double>());
            CHECK(policy.broker_wait_threshold() == fixtures::millis(fixture.at("brokerWaitThresholdMillis")));
            CHECK(policy.schedule() == millis_list(fixture.at("scheduleMillis")));
            CHECK(policy.broker_rungs() == millis_list(fixture.at("brokerRungDelaysMillis")));
            for (const auto& decision : fixture.at("decisions").as_array()) {
                const int attempt = decision.at("attempt").to_number<int>();
                const milliseconds age = fixtures::millis(decision.at("messageAgeMillis"));
                INFO("attempt " << attempt << " at age " << age.count() << " ms");
                const bool retries = decision.at("retries").as_bool();
                CHECK(policy.allows_retry(attempt, age) == retries);
                CHECK(policy.next_wait(attempt, age).has_value() == retries);
            }
            // The schedule is what next_wait waits, before jitter.
            const auto schedule = policy.schedule();
            for (std::size_t i = 0; i < schedule.size(); ++i)
                CHECK(policy.base_delay(static_cast<std::int32_t>(i + 1)) == schedule[i]);
        }
    }
}

TEST_CASE("every maximum-message-age case of the contract fixture") {
    const auto document = fixtures::load("contract-fixtures.json");
    const auto& section = document.at("maxMessageAge");
    CHECK(section.at("defaultMillis").to_number<std::int64_t>() ==
          exponential_retry(5, std::chrono::seconds(1)).max_message_age().count());
    CHECK(fixed_retry(3, std::chrono::seconds(1)).max_message_age().count() == 0);
    CHECK(no_retry().max_message_age().count() == 0);
    const auto& cases = section.at("cases").as_array();
    REQUIRE(cases.size() == 10);
    for (const auto& fixture : cases) {
        const milliseconds limit = fixtures::millis(fixture.at("maxMessageAgeMillis"));
        const milliseconds age = fixtures::millis(fixture.at("messageAgeMillis"));
        RetryPolicy policy = exponential_retry(5, std::chrono::seconds(1), std::chrono::hours(24));
        if (limit.count() > 0) policy = policy.give_up_after(limit);
        INFO("limit " << limit.count() << " age " << age.count());
        CHECK(policy.allows_retry(1, age) == fixture.at("retries").as_bool());
        // An unknown age counts as young enough.
        CHECK(policy.allows_retry(1, std::nullopt) == section.at("unknownAgeRetries").as_bool());
    }
}

TEST_CASE("jitter: both directions, consumer waits only, within the fixture's bounds") {
    const auto document = fixtures::load("contract-fixtures.json");
    const auto& jitter = document.at("jitter");
    REQUIRE(fixtures::text(jitter.at("policy")) == "exponential-uncapped");
    const RetryPolicy policy = exponential_retry(5, std::chrono::seconds(1), std::chrono::hours(24));
    const double factor = jitter.at("factor").to_number<double>();
    CHECK(policy.jitter_factor() == factor);
    const double low = 1000 * jitter.at("minMultiplier").to_number<double>();
    const double high = 1000 * jitter.at("maxMultiplier").to_number<double>();
    const auto floor = fixtures::millis(jitter.at("flooredAtMillis"));

    CHECK(policy.next_wait(1, {}, 0.0)->delay.count() == static_cast<std::int64_t>(low));
    CHECK(policy.next_wait(1, {}, 0.5)->delay.count() == 1000);
    CHECK(policy.next_wait(1, {}, 0.999999)->delay.count() <= static_cast<std::int64_t>(high));

    double smallest = 1e9, largest = 0;
    bool below = false, above = false;
    for (int roll = 0; roll < 20000; ++roll) {
        auto wait = policy.next_wait(1, std::nullopt);
        REQUIRE(wait.has_value());
        REQUIRE_FALSE(wait->in_broker);
        const double millis = static_cast<double>(wait->delay.count());
        REQUIRE(millis >= low);
        REQUIRE(millis <= high);
        REQUIRE(wait->delay >= floor);
        smallest = std::min(smallest, millis);
        largest = std::max(largest, millis);
        below = below || millis < 1000;
        above = above || millis > 1000;
    }
    CHECK(below);
    CHECK(above);
    CHECK(smallest <= low * 1.02);
    CHECK(largest >= high * 0.98);

    SECTION("a broker wait is never jittered: it names a rung") {
        const RetryPolicy capped = exponential_retry(6, std::chrono::seconds(10), std::chrono::minutes(1));
        for (double draw : {0.0, 0.3, 0.999}) {
            auto wait = capped.next_wait(3, std::nullopt, draw);
            REQUIRE(wait.has_value());
            CHECK(wait->in_broker);
            CHECK(wait->delay == milliseconds(40000));
        }
    }
    SECTION("a tiny jittered wait stays at or above the floor") {
        const RetryPolicy tiny = fixed_retry(3, milliseconds(1)).with_jitter(1.0);
        CHECK(tiny.next_wait(1, std::nullopt, 0.0)->delay == floor);
    }
}

TEST_CASE("every broker-wait threshold case of the contract fixture") {
    const auto document = fixtures::load("contract-fixtures.json");
    const auto& section = document.at("brokerWaitThreshold");
    CHECK(no_retry().broker_wait_threshold() == fixtures::millis(section.at("defaultMillis")));
    CHECK(default_broker_wait_threshold == fixtures::millis(document.at("defaultBrokerWaitThresholdMillis")));
    const auto& cases = section.at("cases").as_array();
    REQUIRE(cases.size() == 30);
    for (const auto& fixture : cases) {
        const milliseconds threshold = fixtures::millis(fixture.at("thresholdMillis"));
        const milliseconds delay = fixtures::millis(fixture.at("delayMillis"));
        const bool in_broker = fixture.at("waitsInBroker").as_bool();
        INFO("threshold " << threshold.count() << " delay " << delay.count());
        const RetryPolicy policy = fixed_retry(2, delay).wait_in_broker_from(threshold);
        CHECK(policy.waits_in_broker(delay) == in_broker);
        CHECK(policy.next_wait(1, std::nullopt)->in_broker == in_broker);
        CHECK(policy.broker_rungs().empty() == !in_broker);
    }
}

TEST_CASE("no_retry is the default: one delivery, no ladder") {
    const RetryPolicy policy = no_retry();
    CHECK(policy.max_attempts() == 1);
    CHECK(policy.schedule().empty());
    CHECK_FALSE(policy.next_wait(1, std::nullopt).has_value());
}

TEST_CASE("factories and modifiers are validated with the reason") {
    using std::chrono::seconds;
    CHECK_THROWS_WITH(fixed_retry(0, seconds(1)), Catch::Contains("at least 1 attempt"));
    CHECK_THROWS_AS(fixed_retry(3, milliseconds(-1)), InvalidArgument);
    CHECK_THROWS_AS(exponential_retry(3, seconds(1), milliseconds(-5)), InvalidArgument);
    CHECK_THROWS_WITH(no_retry().with_jitter(1.5), Catch::Contains("[0, 1]"));
    CHECK_THROWS_AS(no_retry().with_jitter(-0.1), InvalidArgument);
    CHECK_THROWS_AS(no_retry().with_jitter(std::nan("")), InvalidArgument);
    CHECK_THROWS_WITH(no_retry().wait_in_broker_from(milliseconds(-1)),
                      Catch::Contains("zero is how a policy says every wait happens in the consumer"));
    CHECK_THROWS_AS(no_retry().give_up_after(milliseconds(-1)), InvalidArgument);
}

TEST_CASE("modifiers copy: a policy value never changes") {
    const RetryPolicy base = exponential_retry(5, std::chrono::seconds(1));
    const RetryPolicy changed =
        base.with_jitter(0.0).wait_in_broker_from(milliseconds(0)).give_up_after(std::chrono::minutes(2));
    CHECK(base.jitter_factor() == 0.2);
    CHECK(base.broker_wait_threshold() == default_broker_wait_threshold);
    CHECK(base.max_message_age().count() == 0);
    CHECK(changed.jitter_factor() == 0.0);
    CHECK(changed.max_message_age() == std::chrono::minutes(2));
    CHECK_FALSE(base == changed);
}

TEST_CASE("an uncapped ladder of many attempts saturates instead of overflowing") {
    const RetryPolicy policy = exponential_retry(200, std::chrono::seconds(1));
    const milliseconds late = policy.base_delay(150);
    CHECK(late.count() > 0);
    CHECK(policy.base_delay(199) == late);
    CHECK(policy.schedule().back().count() > 0);
    auto wait = policy.next_wait(199, std::nullopt, 0.5);
    REQUIRE(wait.has_value());
    CHECK(wait->in_broker);
}

TEST_CASE("a policy written down as the family writes it") {
    CHECK(parse_retry_policy("fixed(4, 30s)") == fixed_retry(4, std::chrono::seconds(30)));
    CHECK(parse_retry_policy(" exponential(6,10s,1m) ") ==
          exponential_retry(6, std::chrono::seconds(10), std::chrono::minutes(1)));
    CHECK(parse_retry_policy("none()") == no_retry());
    CHECK(parse_retry_policy("exponential(5, 500ms, 2h).giveUpAfter(2m).withJitter(0.1).waitInBrokerFrom(1m)") ==
          exponential_retry(5, milliseconds(500), std::chrono::hours(2))
              .give_up_after(std::chrono::minutes(2))
              .with_jitter(0.1)
              .wait_in_broker_from(std::chrono::minutes(1)));
    const std::vector<std::pair<std::string, std::string>> refused{
        {"", "it is empty"},
        {"linear(3, 1s)", "not none, fixed or exponential"},
        {"fixed(4)", "fixed takes 2 arguments, got 1"},
        {"fixed(four, 30s)", "\"four\" is not a whole number"},
        {"fixed(0, 30s)", "the attempts must lie in [1, 2147483647]"},
        {"fixed(4, 30 s)", "\"30 s\" is not a duration"},
        {"fixed(4, 30d)", "\"30d\" is not a duration"},
        {"fixed(4, 30s).retryForever(1)", ".retryForever() is not giveUpAfter"},
        {"fixed(4, 30s)giveUpAfter(2m)", "expected \".\""},
        {"fixed(4, 30s", "is not a call name(arguments)"},
        {"none().withJitter(lots)", "\"lots\" is not a number"},
        {"none().withJitter(2)", "a jitter factor must lie in [0, 1]"},
    };
    for (const auto& [how, why] : refused) {
        INFO(how);
        CHECK_THAT(testing_support::what_of<InvalidArgument>([&] { parse_retry_policy(how); }), Catch::Contains(why));
    }
}
