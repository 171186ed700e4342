// Sagas (docs/patterns.md §8 item 59, docs/routing-slips.md §5): order, reverse
// compensation, steps without one skipped, failing compensations collected and logged,
// cancellation not compensated, and the family's texts verbatim. No broker.
#include <catch2/catch.hpp>

#include <acemq/log.hpp>
#include <acemq/saga.hpp>
#include "../support/handmade.hpp"
#include "../support/thrown.hpp"

#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

using namespace acemq;
using handmade::CapturedLog;
using handmade::contains;

namespace {

using Trail = std::vector<std::string>;

// Each action and compensation writes its name into the trail; `failing` ones throw.
Saga<Trail>::Action writes(std::string what, bool failing = false) {
    return [what, failing](Trail& trail) {
        trail.push_back(what);
        if (failing) throw std::runtime_error(what + " broke");
    };
}

std::string failure_text(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    }
}

}  // namespace

TEST_CASE("59 a saga runs its steps in order and completes") {
    Saga<Trail> saga("checkout");
    saga.step("a", writes("a"), writes("undo a")).step("b", writes("b"), writes("undo b"));
    Trail trail;
    const SagaResult result = saga.run(trail);
    CHECK(trail == Trail{"a", "b"});
    CHECK(result.complete());
    CHECK_FALSE(result.compensated());
    CHECK_FALSE(result.has_unresolved());
    CHECK(result.completed == Trail{"a", "b"});
    CHECK_FALSE(result.failed_at);
    CHECK_FALSE(result.failure);
    CHECK(result.to_string() == "checkout completed: a -> b");
    CHECK(saga.to_string() == "Saga(checkout: a -> b)");
}

TEST_CASE("59 a failing step: the steps done are compensated in reverse, one without a compensation skipped") {
    Trail trail;
    const SagaResult result = Saga<Trail>("checkout")
                                  .step("a", writes("a"), writes("undo a"))
                                  .step("b", writes("b"))
                                  .step("c", writes("c"), writes("undo c"))
                                  .step("d", writes("d", true), writes("undo d"))
                                  .step("e", writes("e"), writes("undo e"))
                                  .run(trail);
    CHECK(trail == Trail{"a", "b", "c", "d", "undo c", "undo a"});
    CHECK_FALSE(result.complete());
    CHECK(result.compensated());
    CHECK_FALSE(result.has_unresolved());
    CHECK(result.failed_at == "d");
    CHECK(failure_text(result.failure) == "d broke");
    CHECK(result.completed == Trail{"a", "b", "c"});
    CHECK(result.to_string() == "checkout failed at d, compensated ['a', 'b', 'c']");
}

TEST_CASE("59 failing compensations are collected in the order tried, logged at error, and the rest still run") {
    CapturedLog log;
    Trail trail;
    Saga<Trail> saga("order");
    saga.step("a", writes("a"), writes("undo a", true))
        .step("b", writes("b"), writes("undo b", true))
        .step("c", writes("c", true));
    const SagaResult result = saga.run(trail);
    CHECK(trail == Trail{"a", "b", "c", "undo b", "undo a"});
    CHECK(result.unresolved == Trail{"b", "a"});
    CHECK(result.has_unresolved());
    CHECK_FALSE(result.compensated());
    CHECK(result.to_string() == "order failed at c, compensated ['a', 'b'], UNRESOLVED ['b', 'a']");
    int errors = 0;
    for (const auto& [level, line] : log.lines())
        if (level == LogLevel::error && contains(line, "could not compensate step ")) {
            ++errors;
            CHECK((contains(line, "step b: std::runtime_error: undo b broke") ||
                   contains(line, "step a: std::runtime_error: undo a broke")));
        }
    CHECK(errors == 2);
}

TEST_CASE("59 the family's pinned texts: one unresolved of two compensated") {
    CapturedLog quiet;
    Trail trail;
    const SagaResult result = Saga<Trail>("shipping")
                                  .step("a", writes("a"), writes("undo a"))
                                  .step("b", writes("b"), writes("undo b", true))
                                  .step("c", writes("c", true))
                                  .run(trail);
    CHECK(result.to_string() == "shipping failed at c, compensated ['a', 'b'], UNRESOLVED ['b']");
}

TEST_CASE("59 cancellation is not compensated: SagaCancelled from a step, or a stop requested before a step") {
    Trail trail;
    Saga<Trail> saga("order");
    saga.step("a", writes("a"), writes("undo a")).step("b", [](Trail&) {
        throw SagaCancelled("the caller went away");
    });
    CHECK_THAT(testing_support::what_of<SagaCancelled>([&] { (void)saga.run(trail); }),
               Catch::Matchers::Contains("the caller went away"));
    CHECK(trail == Trail{"a"});

    std::stop_source stop;
    Saga<Trail> stopping("order");
    stopping
        .step(
            "a",
            [&](Trail& t) {
                t.push_back("a");
                stop.request_stop();
            },
            writes("undo a"))
        .step("b", writes("b"));
    trail.clear();
    CHECK_THAT(testing_support::what_of<SagaCancelled>([&] { (void)stopping.run(trail, stop.get_token()); }),
               Catch::Matchers::Contains("stopped before step 'b'"));
    CHECK(trail == Trail{"a"});
}

TEST_CASE("59 any thrown type is a failure, not only std::exception") {
    Trail trail;
    const SagaResult result =
        Saga<Trail>("odd").step("a", writes("a"), writes("undo a")).step("b", [](Trail&) { throw 42; }).run(trail);
    CHECK(result.failed_at == "b");
    CHECK(trail == Trail{"a", "undo a"});
    CHECK_THROWS_AS(std::rethrow_exception(result.failure), int);
}

TEST_CASE("59 a saga's name and steps are checked with the family's words") {
    CHECK_THAT(testing_support::what_of<InvalidArgument>([&] { (void)Saga<Trail>(""); }),
               Catch::Matchers::Contains("a saga needs a name"));
    Saga<Trail> saga("order");
    saga.step("a", writes("a"));
    CHECK_THAT(testing_support::what_of<InvalidArgument>([&] { (void)saga.step("a", writes("a")); }),
               Catch::Matchers::Contains("already has a step called 'a'"));
    CHECK_THROWS_AS(saga.step("", writes("x")), InvalidArgument);
    CHECK_THAT(testing_support::what_of<InvalidArgument>([&] { (void)saga.step("b", {}); }),
               Catch::Matchers::Contains("has no action"));
    CHECK(saga.step_names() == Trail{"a"});
    Trail trail;
    CHECK_THAT(testing_support::what_of<InvalidArgument>([&] { (void)Saga<Trail>("empty").run(trail); }),
               Catch::Matchers::Contains("has no steps"));
    CHECK(Saga<Trail>("empty").to_string() == "Saga(empty: )");
}
