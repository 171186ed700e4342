// The publishes written on the publish channel and not yet confirmed, by their sequence
// number on that channel: where the broker's basic.ack / basic.nack and basic.return land,
// and what fails when the channel or the connection goes. I/O side only (the I/O thread, or
// a publisher holding the I/O lock); internal.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <acemq/transport.hpp>
#include "session/answer.hpp"
#include "session/publish_window.hpp"

namespace acemq::amqp {

// One publish, from the caller that waits for it to the confirm that answers it.
struct PendingPublish {
    OutboundMessage message;
    session::Answer<PublishResult> answer;  // abandoned when the caller stopped waiting: not written late
    bool returned = false;
    std::string return_reason;
};

class Confirms {
public:
    explicit Confirms(session::PublishWindow& window) : window_(window) {}

    // Numbering starts again: confirm mode was just turned on for a new publish channel.
    void restart() { next_sequence_ = 1; }
    // `pending` is about to be written: the next sequence number is its.
    void track(std::shared_ptr<PendingPublish> pending);
    bool empty() const noexcept { return unconfirmed_.empty(); }

    // basic.ack (ok) or basic.nack for `sequence`, or for everything up to it (multiple).
    void confirm(std::uint64_t sequence, bool multiple, bool ok);
    // A basic.return: RabbitMQ sends it before the confirm of the same message, so it is
    // filed with the oldest unconfirmed mandatory publish of that message id.
    void file_return(const std::string& message_id, const std::string& reason);
    // No confirm will come for any of them: whether each arrived is unknown.
    void fail_all(const std::string& why);
    // The broker closed the publish channel because of one publish, the oldest unconfirmed
    // one `caused` picks, or else the only one unconfirmed: it was refused, as `why` (the
    // broker's reply) says, and so was every one after it, since a broker drops what arrives
    // on a channel it is closing. Whether each one before it arrived is unknown. With no
    // such publish, as fail_all.
    void refuse_from(const std::string& why, const std::function<bool(const OutboundMessage&)>& caused);

private:
    session::PublishWindow& window_;
    std::uint64_t next_sequence_ = 1;
    std::map<std::uint64_t, std::shared_ptr<PendingPublish>> unconfirmed_;
};

}  // namespace acemq::amqp
