// A durable broker whose data file is full, seen through a transport's health: the steps the
// inproc and the zmq health tests share, each then checking recovery in its own way (over
// zmq acks travel unanswered, so the freed space comes with a later commit).
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include <acemq/health.hpp>
#include <acemq/transport.hpp>

namespace full_data_file {

inline const acemq::Bytes body(4000, std::byte{'p'});

// Publishes persistent messages to queue "q" until one is refused (the file capped at
// 256 KiB holds about sixty) as disk full, then checks that health is down, naming the file
// and why.
inline void fill_and_check_down(acemq::Transport& transport, const std::string& file,
                                std::chrono::milliseconds timeout) {
    acemq::PublishResult result;
    for (int i = 0; i < 200 && (i == 0 || result.confirmed); ++i)
        result = transport.publish({.routing_key = "q", .body = body});
    REQUIRE_FALSE(result.confirmed);
    REQUIRE_THAT(result.return_reason, Catch::Contains("disk full"));
    const acemq::Health down = transport.check_health(timeout);
    CHECK(down.status == acemq::Health::Status::down);
    CHECK_THAT(down.detail, Catch::Contains(file) && Catch::Contains("disk full") &&
                                Catch::Contains("persistent publishes are refused until it writes again"));
}

// Acks thirty of the messages in "q", which frees room for new ones.
inline void ack_some(acemq::Transport& transport) {
    for (int i = 0; i < 30; ++i) {
        auto delivery = transport.pull("q");
        REQUIRE(delivery);
        delivery->ack();
    }
}

}  // namespace full_data_file
