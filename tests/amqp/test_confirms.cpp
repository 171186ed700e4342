// Suite `amqp-offline`: the bookkeeping between a publish and its confirm, without a
// broker. basic.ack / basic.nack by sequence number (one, or everything up to it), a
// basic.return filed with the right publish, a lost channel failing what is in flight, and
// the window's slots coming back each time.
#include <catch2/catch.hpp>

#include "amqp/confirms.hpp"
#include "session/publish_window.hpp"

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using acemq::PublishResult;
using acemq::amqp::Confirms;
using acemq::amqp::PendingPublish;
using acemq::session::PublishWindow;

std::shared_ptr<PendingPublish> pending(std::string message_id, bool mandatory = false) {
    auto one = std::make_shared<PendingPublish>();
    one->message.message_id = std::move(message_id);
    one->message.mandatory = mandatory;
    return one;
}

// The answer, which must be there already.
PublishResult answer_of(PendingPublish& publish) {
    auto result = publish.answer.wait_until(std::chrono::steady_clock::now());
    REQUIRE(result.has_value());
    return *result;
}

// Slots the window has free now, of `size` (takes them and gives them back).
std::size_t free_slots(PublishWindow& window, std::size_t size) {
    const std::size_t granted = window.take(size);
    window.give_back(granted);
    return granted;
}

}  // namespace

TEST_CASE("confirms: a multiple ack confirms everything up to its sequence number, and no more") {
    PublishWindow window(3, std::chrono::milliseconds(10));
    REQUIRE(window.take(3) == 3);
    Confirms confirms(window);
    std::vector<std::shared_ptr<PendingPublish>> sent{pending("a"), pending("b"), pending("c")};
    for (auto& one : sent) confirms.track(one);

    confirms.confirm(2, true, true);
    CHECK(answer_of(*sent[0]).confirmed);
    CHECK(answer_of(*sent[1]).confirmed);
    CHECK_FALSE(sent[2]->answer.ready());
    CHECK_FALSE(confirms.empty());
    CHECK(free_slots(window, 3) == 2);

    confirms.confirm(3, false, false);
    const PublishResult nacked = answer_of(*sent[2]);
    CHECK_FALSE(nacked.confirmed);
    CHECK(nacked.why == PublishResult::Unconfirmed::refused);
    CHECK(nacked.return_reason == "the broker sent basic.nack");
    CHECK(confirms.empty());
    CHECK(free_slots(window, 3) == 3);
}

TEST_CASE("confirms: numbering starts at 1 again after restart, and an unknown sequence is ignored") {
    PublishWindow window(2, std::chrono::milliseconds(10));
    Confirms confirms(window);
    auto first = pending("a");
    confirms.track(first);
    confirms.confirm(1, false, true);
    CHECK(answer_of(*first).confirmed);

    confirms.restart();
    auto second = pending("b");
    confirms.track(second);
    confirms.confirm(7, false, true);
    CHECK_FALSE(second->answer.ready());
    confirms.confirm(1, false, true);
    CHECK(answer_of(*second).confirmed);
}

TEST_CASE("confirms: a return is filed with the oldest unconfirmed mandatory publish of its message id") {
    PublishWindow window(3, std::chrono::milliseconds(10));
    Confirms confirms(window);
    auto not_mandatory = pending("x");
    auto other_id = pending("y", true);
    auto returned = pending("x", true);
    confirms.track(not_mandatory);
    confirms.track(other_id);
    confirms.track(returned);

    confirms.file_return("x", "312 NO_ROUTE");
    confirms.confirm(3, true, true);
    CHECK(answer_of(*not_mandatory).routed);
    CHECK(answer_of(*other_id).routed);
    const PublishResult result = answer_of(*returned);
    CHECK(result.confirmed);
    CHECK_FALSE(result.routed);
    CHECK(result.return_reason == "312 NO_ROUTE");
}

TEST_CASE("confirms: fail_all answers every publish in flight as lost, with the reason") {
    PublishWindow window(2, std::chrono::milliseconds(10));
    REQUIRE(window.take(2) == 2);
    Confirms confirms(window);
    auto a = pending("a");
    auto b = pending("b");
    confirms.track(a);
    confirms.track(b);

    confirms.fail_all("the channel was closed");
    for (auto* one : {a.get(), b.get()}) {
        const PublishResult result = answer_of(*one);
        CHECK_FALSE(result.confirmed);
        CHECK(result.why == PublishResult::Unconfirmed::lost);
        CHECK(result.return_reason == "the channel was closed");
    }
    CHECK(confirms.empty());
    CHECK(free_slots(window, 2) == 2);
}

TEST_CASE("publish window: a full window grants nothing after its wait, and a slot given back is granted") {
    PublishWindow window(2, std::chrono::milliseconds(20));
    CHECK(window.take(5) == 2);
    CHECK(window.take(1) == 0);
    window.give_back(1);
    CHECK(window.take(3) == 1);
}

TEST_CASE("publish window: a take on a full window waits, and gets the slot given back meanwhile") {
    PublishWindow window(2, std::chrono::seconds(60));
    REQUIRE(window.take(2) == 2);
    auto waiting = std::async(std::launch::async, [&] { return window.take(1); });
    // Time for the take to start waiting; one that did not wait has returned 0 by then.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    window.give_back(1);
    REQUIRE(waiting.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    CHECK(waiting.get() == 1);
}
