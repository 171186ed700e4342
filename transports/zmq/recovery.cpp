// Losing a session (what waited for its answers learns so), and the next one declaring the
// remembered topology again and consuming again for every open consumer (docs/zmq-protocol.md
// §8), ahead of anything a caller queued.
#include "zmq/zmq_transport.hpp"

namespace acemq::zmq {

void ZmqTransport::replay() {
    msgpack::sbuffer declare;
    const std::uint64_t declare_number = next_number();
    {
        std::lock_guard lock(declared_mutex_);
        declare = wire::encode_declare(declare_number, declared_.exchanges(), declared_.queues(), declared_.bindings());
    }
    std::vector<std::shared_ptr<LocalConsumer>> consumers;
    {
        std::lock_guard lock(consumers_mutex_);
        consumers.assign(consumers_.begin(), consumers_.end());
    }
    // Sent ahead of anything a caller queued, so the broker has the topology and the
    // consumers again before the first publish of the new session.
    Outgoing again{.kind = Outgoing::Kind::request,
                   .number = declare_number,
                   .frame = std::move(declare),
                   .reply = std::make_shared<ReplyAnswer>()};
    send_outgoing(again);
    for (const auto& consumer : consumers) {
        {
            std::lock_guard delivering(consumer->delivering);
            if (consumer->stopped) continue;
        }
        const std::uint64_t number = next_number();
        Outgoing outgoing{.kind = Outgoing::Kind::consume,
                          .number = number,
                          .frame = wire::encode_consume(number, consumer->queue, consumer->spec.prefetch,
                                                        consumer->spec.tag, consumer->spec.arguments),
                          .reply = std::make_shared<ReplyAnswer>(),
                          .consumer = consumer};
        send_outgoing(outgoing);
    }
}

void ZmqTransport::lose_session(std::string why) {
    {
        std::lock_guard lock(lost_mutex_);
        lost_because_ = why;
    }
    ready_.store(false);
    generation_.store(0);
    const std::string text = "acemq: the session with " + where() + " was lost before it answered (" + why + ")";
    for (auto& [number, outgoing] : awaiting_) outgoing.reply->fail(session::FailureKind::connection, text);
    awaiting_.clear();
    for (auto& [sequence, confirm] : confirms_)
        confirm->set(PublishResult{.return_reason = "the session with " + where() +
                                                    " was lost before the confirm came (" + why +
                                                    "): the message may or may not have arrived",
                                   .why = PublishResult::Unconfirmed::lost});
    confirms_.clear();
    for (auto& [server_id, consumer] : by_server_id_) consumer->server_id = 0;
    by_server_id_.clear();
    monitor_.reset();
    socket_.reset();
}

void ZmqTransport::fail_queued(const std::string& why) {
    for (Outgoing& outgoing : queue_.take_all()) {
        if (outgoing.reply) outgoing.reply->fail(session::FailureKind::connection, why);
        if (outgoing.confirm)
            outgoing.confirm->set(PublishResult{.return_reason = why, .why = PublishResult::Unconfirmed::unsent});
    }
}

}  // namespace acemq::zmq
