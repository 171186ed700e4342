// The embedded broker frees a message on a publishing thread, not where its last reference
// drops: released messages wait in a list, within a bound in bytes, until free_released.
// Run under ThreadSanitizer and AddressSanitizer too (a race or a leak fails).
#include <catch2/catch.hpp>

#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include "inproc/released_messages.hpp"

using acemq::Bytes;
using acemq::InboundMessage;
using acemq::inproc::detail::ReleasedMessages;

namespace {

acemq::OutboundMessage published(std::size_t body_size) {
    return {.exchange = "",
            .routing_key = "orders",
            .body = Bytes(body_size, std::byte{7}),
            .content_type = "application/msgpack",
            .message_id = "4f1d2c3b-0000-4000-8000-1234567890ab",
            .headers = {{"x-acemq-correlation", "4f1d2c3b-0000-4000-8000-1234567890ab"},
                        {"x-acemq-attempt", std::int32_t{1}}}};
}

}  // namespace

TEST_CASE("a message released on another thread waits until the publishing side frees it", "[inproc]") {
    ReleasedMessages::Owned list = ReleasedMessages::create();
    InboundMessage message = list->make(published(100));
    const std::size_t weight = message.heap_bytes();
    CHECK(weight > 100);
    CHECK(message.body().size() == 100);
    CHECK(message.message_id() == "4f1d2c3b-0000-4000-8000-1234567890ab");
    CHECK(list->held_bytes() == 0);

    std::thread([released = std::move(message)]() mutable { InboundMessage gone = std::move(released); }).join();
    CHECK(list->held_bytes() == weight);
    list->free_released();
    CHECK(list->held_bytes() == 0);
    list->free_released();  // nothing left: a no-op
    CHECK(list->held_bytes() == 0);
}

TEST_CASE("a message still shared is not released", "[inproc]") {
    ReleasedMessages::Owned list = ReleasedMessages::create();
    std::optional<InboundMessage> message = list->make(published(10));
    std::optional<InboundMessage> delivery = message;
    message.reset();
    CHECK(list->held_bytes() == 0);
    CHECK(delivery->body().size() == 10);
    delivery.reset();
    CHECK(list->held_bytes() > 0);
}

TEST_CASE("a copy made to change a shared message is not the list's to free", "[inproc]") {
    ReleasedMessages::Owned list = ReleasedMessages::create();
    std::optional<InboundMessage> message = list->make(published(10));
    std::optional<InboundMessage> redelivery = message;
    redelivery->set_redelivered(true);
    CHECK(redelivery->redelivered());
    CHECK_FALSE(message->redelivered());
    redelivery.reset();
    CHECK(list->held_bytes() == 0);
    message.reset();
    CHECK(list->held_bytes() > 0);
}

TEST_CASE("released messages never weigh more than the bound: past it, the releasing thread frees", "[inproc]") {
    ReleasedMessages::Owned list = ReleasedMessages::create();
    SECTION("one message heavier than the bound is freed at once") {
        list->make(published(ReleasedMessages::most_held_bytes + 1));
        CHECK(list->held_bytes() == 0);
    }
    SECTION("many light ones fill it up to the bound and no further") {
        const std::size_t weight = list->make(published(1000)).heap_bytes();
        list->free_released();
        const std::size_t fit = ReleasedMessages::most_held_bytes / weight;
        for (std::size_t i = 0; i < fit + 10; ++i) list->make(published(1000));
        CHECK(list->held_bytes() == fit * weight);
        list->free_released();
        CHECK(list->held_bytes() == 0);
    }
}

TEST_CASE("a message outliving the broker's list is still freed (the list lives while its messages do)", "[inproc]") {
    const std::size_t lists_before = ReleasedMessages::lists();
    ReleasedMessages::Owned list = ReleasedMessages::create();
    CHECK(ReleasedMessages::lists() == lists_before + 1);
    std::optional<InboundMessage> message = list->make(published(64));
    list.reset();
    CHECK(ReleasedMessages::lists() == lists_before + 1);
    CHECK(message->body().size() == 64);
    message.reset();  // released into the list, which then goes with its last message
    CHECK(ReleasedMessages::lists() == lists_before);
}

TEST_CASE("consumers releasing while a publisher frees: every message is freed once", "[inproc][threads]") {
    ReleasedMessages::Owned list = ReleasedMessages::create();
    constexpr int releasers = 3;
    constexpr int per_releaser = 20000;
    std::vector<std::vector<InboundMessage>> made(releasers);
    for (auto& batch : made)
        for (int i = 0; i < per_releaser; ++i) batch.push_back(list->make(published(16)));
    std::atomic<int> done{0};
    std::vector<std::thread> threads;
    for (auto& batch : made)
        threads.emplace_back([&batch, &done] {
            batch.clear();
            done.fetch_add(1);
        });
    while (done.load() < releasers) list->free_released();
    for (std::thread& thread : threads) thread.join();
    list->free_released();
    CHECK(list->held_bytes() == 0);
}
