// Observers hear what a Bus did: every confirmed publish and every settled delivery. The
// test harness (testing.hpp) and telemetry are observers. Callbacks run on the thread that
// did the work, after it was carried out; they must be quick and must not throw (an
// exception from an observer is logged and dropped, never allowed to change a settlement).
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include <acemq/envelope.hpp>
#include <acemq/retry.hpp>
#include <acemq/settlement.hpp>
#include <acemq/transport.hpp>

namespace acemq {

struct PublishedEvent {
    std::string_view exchange;
    std::string_view routing_key;
    const Envelope& envelope;
    const PublishResult& result;
};

struct SettledEvent {
    std::string_view queue;
    const Envelope& envelope;  // as the handler saw it
    const Settlement& settlement;
};

class Observer {
public:
    virtual ~Observer() = default;
    virtual void published(const PublishedEvent&) {}
    virtual void settled(const SettledEvent&) {}
    // A retry meant to wait on `rung` found no such queue (the publish reached nothing) and
    // waits in the consumer instead: the family's acemq.retry.rung.missing.
    virtual void rung_missing(std::string_view /*queue*/, std::string_view /*rung*/) {}
    // A message meant for `target` ({queue}.dlq or {queue}.parked) could not be published
    // there (unroutable, refused or lost); it went back to `queue`: the family's
    // acemq.messages.set.aside.failed.
    virtual void set_aside_failed(std::string_view /*queue*/, std::string_view /*target*/) {}
};

}  // namespace acemq
