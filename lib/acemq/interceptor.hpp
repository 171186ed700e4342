// Interceptors: code that runs around every publish or every delivery of a Bus, registered
// once (BusOptions or Bus::add_*_interceptor), first registered outermost. Refusing is
// throwing: a publish interceptor that throws stops the publish (the caller gets the
// exception); a consume interceptor that throws counts as the handler throwing (retry).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include <acemq/ack.hpp>
#include <acemq/envelope.hpp>

namespace acemq {

// A publish on its way out, before the payload is encoded. Interceptors may change the
// destination, the envelope (headers included) and the flags; the payload is not theirs.
struct PublishContext {
    std::string exchange;
    std::string routing_key;
    Envelope envelope;
    bool persistent = true;
    bool mandatory = false;
    std::string reply_to;
};

// A delivery on its way in, after it decoded and before the handler. What the envelope
// holds after the chain is what the handler sees and what a retry or dead letter carries.
struct ConsumeContext {
    std::string queue;
    Envelope envelope;
    std::span<const std::byte> body;
    std::string_view content_type;
    std::string_view routing_key;
    bool redelivered = false;
    std::string_view reply_to;
};

using PublishNext = std::function<void(PublishContext&)>;
using PublishInterceptor = std::function<void(PublishContext&, const PublishNext& next)>;

using ConsumeNext = std::function<Ack(ConsumeContext&)>;
using ConsumeInterceptor = std::function<Ack(ConsumeContext&, const ConsumeNext& next)>;

}  // namespace acemq
