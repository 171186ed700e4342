// Publishes, from the caller to the I/O thread and back: what may not be sent now is answered
// at once; the rest takes a slot in the window, is queued for the I/O thread and waits for its
// confirm.
#include "zmq/zmq_transport.hpp"

namespace acemq::zmq {

PublishResult ZmqTransport::start_publish(OutboundMessage& message, std::shared_ptr<ConfirmAnswer>& confirm) {
    if (!ready_.load())
        return PublishResult{
            .return_reason = closed_.load()
                                 ? "the transport to " + where() + " is closed; open a new one"
                                 : "the session with " + where() + " is lost and not yet re-established; not sent",
            .why = PublishResult::Unconfirmed::unsent};
    // Refused here, unwritten: libzmq drops the connection of a peer that sends a frame past
    // the broker's limit, and with it the session and every publish in flight on it.
    const std::uint64_t sequence = next_number();
    msgpack::sbuffer frame = wire::encode_publish(sequence, message);
    if (const std::uint64_t limit = max_frame_bytes_.load(); limit > 0 && frame.size() > limit)
        return PublishResult{.return_reason = "the message takes " + std::to_string(frame.size()) +
                                              " bytes as a frame (its body " + std::to_string(message.body.size()) +
                                              " bytes), and " + where() + " takes frames of at most " +
                                              std::to_string(limit) +
                                              " bytes (its --max-frame-bytes, zmq::ServerOptions::max_frame_bytes)",
                             .why = PublishResult::Unconfirmed::too_large};
    if (window_.take(1) == 0)
        return PublishResult{.return_reason = window_.full_reason(), .why = PublishResult::Unconfirmed::lost};
    confirm = std::make_shared<ConfirmAnswer>();
    submit({.kind = Outgoing::Kind::publish,
            .number = sequence,
            .frame = std::move(frame),
            .confirm = confirm,
            .batchable = wire::batchable(message.headers.view())});
    return {};
}

PublishResult ZmqTransport::finish_publish(const std::shared_ptr<ConfirmAnswer>& confirm, Clock::time_point deadline) {
    std::optional<PublishResult> result = confirm->wait_until(deadline);
    window_.give_back(1);
    if (!result)
        return PublishResult{.return_reason = "no confirm from " + where() + " within " +
                                              std::to_string(session_.confirm_timeout.count()) +
                                              " ms: it may or may not have arrived",
                             .why = PublishResult::Unconfirmed::lost};
    return std::move(*result);
}

PublishResult ZmqTransport::publish(OutboundMessage message) {
    std::shared_ptr<ConfirmAnswer> confirm;
    PublishResult refused = start_publish(message, confirm);
    if (!confirm) return refused;
    return finish_publish(confirm, Clock::now() + session_.confirm_timeout);
}

std::vector<PublishResult> ZmqTransport::publish_batch(std::vector<OutboundMessage> messages) {
    std::vector<PublishResult> results(messages.size());
    std::vector<std::pair<std::size_t, std::shared_ptr<ConfirmAnswer>>> waiting;
    waiting.reserve(messages.size());
    std::size_t finished = 0;
    for (std::size_t i = 0; i < messages.size(); ++i) {
        // A full window first settles the oldest, so the batch streams instead of waiting for a slot.
        while (waiting.size() - finished >= session_.max_outstanding_publishes) {
            results[waiting[finished].first] =
                finish_publish(waiting[finished].second, Clock::now() + session_.confirm_timeout);
            ++finished;
        }
        std::shared_ptr<ConfirmAnswer> confirm;
        results[i] = start_publish(messages[i], confirm);
        if (confirm) waiting.emplace_back(i, std::move(confirm));
    }
    const auto deadline = Clock::now() + session_.confirm_timeout;
    for (; finished < waiting.size(); ++finished)
        results[waiting[finished].first] = finish_publish(waiting[finished].second, deadline);
    return results;
}

}  // namespace acemq::zmq
