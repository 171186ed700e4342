// The Transport over the embedded broker: one InprocTransport is one connection to a
// Broker (see <acemq/inproc.hpp> for what the broker does and where it differs from RabbitMQ).
// inproc::open (<acemq/inproc.hpp>) makes one; connect() knows it by the URL scheme `inproc`
// (transports/builtin_transports.cpp): open_transport("inproc://orders") connects to the
// broker named "orders", making it when no live one has that name, so two parts of one
// process that name it share its queues.
//
// Thread-safe, as every Transport. Settle deliveries before destroying the transport (or
// the subscription) they came from: settling one afterwards throws acemq::Error, because
// closing handed it back to its queue.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include <acemq/inproc.hpp>
#include <acemq/transport.hpp>

namespace acemq::inproc {

namespace detail {
class JournalBurst;
}

// While one lives on a thread, the changes that thread makes to a durable `broker` (publishes,
// acks, ...) wake its writer once, when it ends: they start one commit together, rather than
// the first starting one of its own at once and the rest waiting behind its sync. For a thread
// that hands the broker what it received in one go (the zmq server's I/O thread, with a
// client's batch frame); nothing waits on a timer. Made and ended on one thread, while `broker` lives;
// nothing for a broker in memory only.
class CommitBurst {
public:
    explicit CommitBurst(Broker& broker);
    ~CommitBurst();
    CommitBurst(const CommitBurst&) = delete;
    CommitBurst& operator=(const CommitBurst&) = delete;

private:
    std::unique_ptr<detail::JournalBurst> burst_;
};

// Why `broker` refuses persistent publishes now, as its health says it: "the data file
// \"FILE\" refuses commits (WHY); persistent publishes are refused until it writes again";
// nullopt while its commits succeed, and for a broker in memory only. The zmq server answers
// a ping with the same. Error when asked from inside one of the broker's DeliverFns.
std::optional<std::string> refusing_commits(Broker& broker);

// The broker an inproc URL names, as open() connects to it: "inproc://NAME" the live broker
// NAME or a new one in memory, "inproc://NAME?data=FILE" the durable one on FILE (see
// broker()). InvalidArgument for another URL.
std::shared_ptr<Broker> broker_at(std::string_view url);

class InprocTransport final : public Transport {
public:
    explicit InprocTransport(std::shared_ptr<Broker> broker, ConnectionOptions options = {});
    ~InprocTransport() override;  // closes
    InprocTransport(const InprocTransport&) = delete;
    InprocTransport& operator=(const InprocTransport&) = delete;

    const std::shared_ptr<Broker>& broker() const noexcept { return broker_; }

    void declare(const Topology& topology) override;
    PublishResult publish(OutboundMessage message) override;
    // All published before any is waited for, so a durable broker commits them together.
    std::vector<PublishResult> publish_batch(std::vector<OutboundMessage> messages) override;
    std::unique_ptr<Subscription> consume(std::string_view queue, const ConsumeSpec& spec, DeliverFn deliver) override;
    std::optional<Delivery> pull(std::string_view queue) override;
    std::uint64_t queue_depth(std::string_view queue) override;
    bool queue_exists(std::string_view queue) override;
    void delete_queue(std::string_view queue) override;
    // Up with the time the broker took to answer under its lock; down once this transport is
    // closed ("the transport is closed"), and while a durable broker's data file refuses
    // commits (Broker::commit_failure), which refuses persistent publishes.
    Health check_health(std::chrono::milliseconds timeout) override;
    // "inproc", "acemq", "inproc://NAME" (with "?data=FILE" for a durable broker);
    // capabilities "confirms", "dead-letters", "ttl", and "durable" with a data file.
    TransportInfo describe() const override;
    void close() override;

private:
    PublishResult closed_result() const;

    std::shared_ptr<Broker> broker_;
    Broker::ConnectionId connection_;
    std::atomic<bool> closed_{false};
};

}  // namespace acemq::inproc
