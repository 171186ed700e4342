#include <acemq/replay.hpp>

#include <deque>
#include <limits>

#include <acemq/log.hpp>
#include <acemq/naming.hpp>
#include "publish_failure.hpp"
#include "quoted_text.hpp"
#include "rfc3339.hpp"

namespace acemq {

namespace {

// The count a message was stamped with before, read as leniently as the family reads any
// header: an integer of any width or a decimal string; anything else counts as never.
std::int32_t next_replay_count(const Headers& headers) {
    const auto found = headers.find(header::replay_count);
    const std::int64_t previous = found == headers.end() ? 0 : found->second.as_integer().value_or(0);
    if (previous < 0) return 1;
    if (previous >= std::numeric_limits<std::int32_t>::max()) return std::numeric_limits<std::int32_t>::max();
    return static_cast<std::int32_t>(previous + 1);
}

// "{q}" for "{q}.dlq" or "{q}.parked"; nullopt for any other name.
std::optional<std::string> set_aside_from(std::string_view queue) {
    for (const std::string_view suffix : {dead_letter_suffix, parked_suffix})
        if (queue.size() > suffix.size() && queue.ends_with(suffix))
            return std::string(queue.substr(0, queue.size() - suffix.size()));
    return std::nullopt;
}

// The deliveries of one pass that are not settled yet: the one being moved and the ones
// the filter declined. Whatever is still unsettled when the pass ends, however it ends, is
// put back on the queue, last first: a requeue goes to the head, so this keeps their order.
// References to held deliveries stay valid (a deque only grows at the back here, and only
// the last one is ever dropped).
class HeldDeliveries {
public:
    explicit HeldDeliveries(std::string_view queue) : queue_(queue) {}
    HeldDeliveries(const HeldDeliveries&) = delete;
    HeldDeliveries& operator=(const HeldDeliveries&) = delete;
    ~HeldDeliveries() {
        for (auto delivery = held_.rbegin(); delivery != held_.rend(); ++delivery) put_back(*delivery, queue_);
    }

    Delivery& hold(Delivery delivery) { return held_.emplace_back(std::move(delivery)); }
    void drop_last() { held_.pop_back(); }

    static void put_back(Delivery& delivery, std::string_view queue) noexcept {
        if (delivery.settled()) return;
        try {
            delivery.requeue();
        } catch (const std::exception& error) {
            // The connection is gone; the broker returns unsettled messages by itself then.
            log(LogLevel::warning, "replay",
                "acemq: replay could not put a message back on " + std::string(queue) + " (" + error.what() +
                    "); the broker returns it when the connection closes");
        }
    }

private:
    std::string_view queue_;
    std::deque<Delivery> held_;
};

}  // namespace

std::string_view to_string(ReplayStop reason) noexcept {
    switch (reason) {
    case ReplayStop::drained: return "drained";
    case ReplayStop::limit: return "limit";
    case ReplayStop::deadline: return "deadline";
    case ReplayStop::failed: return "failed";
    }
    return "unknown";
}

std::string ReplayResult::to_string() const {
    return "moved " + std::to_string(moved) + ", skipped " + std::to_string(skipped) + " (" +
           std::string(acemq::to_string(reason)) + ")";
}

ReplayResult replay(Bus& bus, std::string_view queue, ReplayOptions options) {
    if (queue.empty()) throw InvalidArgument("acemq: replay needs a queue to read from, e.g. \"orders.new.dlq\"");
    if (options.deadline && options.deadline->count() < 0)
        throw InvalidArgument("acemq: a replay deadline cannot be negative; use zero to move nothing");
    if (options.exchange.empty() && options.routing_key &&
        (options.routing_key->empty() || *options.routing_key == queue))
        throw InvalidArgument("acemq: replay from " + std::string(queue) + " through the default exchange with key \"" +
                              *options.routing_key + "\" would " +
                              (options.routing_key->empty() ? "reach no queue" : "put every message straight back") +
                              "; give the name of the queue to move them to");

    Transport& transport = bus.transport();
    const std::shared_ptr<Clock> clock = bus.clock();
    const Clock::time_point started = clock->now();
    const std::optional<std::string> home = options.exchange.empty() ? set_aside_from(queue) : std::nullopt;

    ReplayResult result;
    HeldDeliveries held(queue);
    const auto fail = [&](const std::string& text) {
        ReplayResult partial = result;
        partial.reason = ReplayStop::failed;
        return ReplayError(text, partial);
    };

    for (;;) {
        if (options.limit > 0 && result.moved >= options.limit) {
            result.reason = ReplayStop::limit;
            break;
        }
        if (options.deadline && clock->now() - started >= *options.deadline) {
            result.reason = ReplayStop::deadline;
            break;
        }
        std::optional<Delivery> pulled;
        try {
            pulled = transport.pull(queue);
        } catch (const std::exception& error) {
            throw fail("acemq: cannot read from " + std::string(queue) + " to replay it: " + error.what() + " (" +
                       result.to_string() + " before that)");
        }
        if (!pulled) {
            result.reason = ReplayStop::drained;
            break;
        }
        Delivery& delivery = held.hold(std::move(*pulled));
        const InboundMessage& original = delivery.message();
        Envelope envelope = read_envelope(original);
        if (options.only && !options.only(envelope, original.body())) {
            ++result.skipped;
            continue;  // held until the pass ends
        }

        const std::string key = options.routing_key ? *options.routing_key
                                : home              ? *home
                                                    : std::string(original.routing_key());
        // "acemq: cannot republish message <id> from <queue><what>. It is back on <queue>; ..."
        const auto cannot_republish_as = [&](const std::string& what) {
            HeldDeliveries::put_back(delivery, queue);
            return fail("acemq: cannot republish message " + detail::shown_text(envelope.id) + " from " +
                        std::string(queue) + what + ". It is back on " + std::string(queue) + "; " +
                        std::to_string(result.moved) + " moved before it stay moved");
        };
        const auto cannot_republish = [&](const std::string& why) {
            return cannot_republish_as(" to " + detail::destination(options.exchange, key) + ": " + why);
        };
        if (options.exchange.empty() && key == queue)
            throw cannot_republish(
                "its own routing key leads straight back to the queue being replayed; "
                "give ReplayOptions::routing_key");

        if (options.restart) {
            envelope.attempt = 1;
            envelope.error.clear();
        }
        const std::int32_t count = next_replay_count(envelope.headers);
        set_header(envelope, std::string(header::replayed_from), std::string(queue));
        set_header(envelope, std::string(header::replayed_at),
                   detail::rfc3339(epoch_millis_now(), detail::SecondFraction::millis));
        set_header(envelope, std::string(header::replay_count), count);

        PublishResult published;
        try {
            published = transport.publish(OutboundMessage{.exchange = options.exchange,
                                                          .routing_key = key,
                                                          .body = Bytes(original.body().begin(), original.body().end()),
                                                          .content_type = std::string(original.content_type()),
                                                          .message_id = envelope.id,
                                                          .headers = pack_headers(envelope),
                                                          .reply_to = std::string(original.reply_to()),
                                                          .mandatory = true});
        } catch (const std::exception& error) {
            throw cannot_republish(error.what());
        }
        // The publish failure names the destination itself (a paused one has none to name).
        if (auto failure = detail::publish_failure(published, {envelope.id, options.exchange, key, true}))
            throw cannot_republish_as(": " + std::string(without_prefix(failure->what())));

        try {
            delivery.ack();
        } catch (const std::exception& error) {
            throw fail("acemq: republished message " + envelope.id + " from " + std::string(queue) +
                       " but could not ack the original (" + error.what() +
                       "); the broker delivers it again, so it will be there twice");
        }
        held.drop_last();
        ++result.moved;
    }
    return result;
}

}  // namespace acemq
