#include "inproc/inproc_transport.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>

#include <acemq/error.hpp>
#include <acemq/url.hpp>
#include "inproc/journal.hpp"

namespace acemq::inproc {

namespace {

constexpr std::string_view scheme_prefix = "inproc://";

}  // namespace

InprocTransport::InprocTransport(std::shared_ptr<Broker> broker, ConnectionOptions options)
    : broker_(std::move(broker)), connection_(broker_->open_connection(options)) {}

std::shared_ptr<Broker> broker_at(std::string_view url) {
    auto refuse = [&](std::string_view why) {
        return InvalidArgument("acemq: cannot open \"" + redacted_url(url) +
                               "\" as an inproc transport: " + std::string(why));
    };
    if (!url.starts_with(scheme_prefix) || url.size() == scheme_prefix.size())
        throw refuse(
            "write inproc://NAME, where NAME names the embedded broker (inproc://NAME?data=FILE keeps "
            "its durable state in FILE)");
    std::string_view rest = url.substr(scheme_prefix.size());
    const std::size_t query = rest.find('?');
    const std::string_view name = rest.substr(0, query);
    if (name.empty()) throw refuse("it names no broker; write inproc://NAME");
    if (query == std::string_view::npos) return inproc::broker(name);
    const std::string_view parameter = rest.substr(query + 1);
    if (!parameter.starts_with("data=") || parameter.size() == 5)
        throw refuse("the only parameter it takes is data=FILE, the SQLite file of a durable broker");
    return inproc::broker(name, BrokerOptions{.data = std::string(parameter.substr(5))});
}

std::shared_ptr<Transport> open(std::string_view url, ConnectionOptions options) {
    return std::make_shared<InprocTransport>(broker_at(url), std::move(options));
}

InprocTransport::~InprocTransport() {
    try {
        close();
    } catch (const Error&) {
        // Destroyed inside a DeliverFn, where the broker refuses calls: the connection's
        // state stays with the broker until the broker itself goes.
    }
}

void InprocTransport::declare(const Topology& topology) { broker_->declare(connection_, topology); }

PublishResult InprocTransport::publish(OutboundMessage message) {
    if (closed_.load(std::memory_order_relaxed)) return closed_result();
    return broker_->publish(std::move(message));
}

std::vector<PublishResult> InprocTransport::publish_batch(std::vector<OutboundMessage> messages) {
    if (detail::Journal::on_writer_thread())
        throw UsageError("acemq: cannot publish a batch to inproc broker \"" + broker_->name() +
                         "\" and wait from a ConfirmFn, on the writer thread that makes the commit");
    if (closed_.load(std::memory_order_relaxed)) {
        std::vector<PublishResult> results(messages.size());
        for (PublishResult& result : results) result = closed_result();
        return results;
    }
    // Shared with the callback, not borrowed from this frame: should the broker throw half-way,
    // the confirms of messages already waiting for a commit still arrive after this returns.
    struct Batch {
        std::mutex mutex;
        std::condition_variable done;
        std::vector<PublishResult> results;
        std::size_t waiting;
    };
    auto batch = std::make_shared<Batch>();
    batch->results.resize(messages.size());
    batch->waiting = messages.size();
    broker_->publish_batch(std::move(messages), [batch](std::size_t index, PublishResult result) {
        std::lock_guard guard(batch->mutex);
        batch->results[index] = std::move(result);
        if (--batch->waiting == 0) batch->done.notify_one();
    });
    std::unique_lock lock(batch->mutex);
    batch->done.wait(lock, [&] { return batch->waiting == 0; });
    return std::move(batch->results);
}

PublishResult InprocTransport::closed_result() const {
    return PublishResult{
        .return_reason = "the transport to inproc broker \"" + broker_->name() + "\" is closed; open a new one",
        .why = PublishResult::Unconfirmed::unsent};
}

std::unique_ptr<Subscription> InprocTransport::consume(std::string_view queue, const ConsumeSpec& spec,
                                                       DeliverFn deliver) {
    return broker_->consume(connection_, queue, spec, std::move(deliver));
}

std::optional<Delivery> InprocTransport::pull(std::string_view queue) { return broker_->pull(connection_, queue); }
std::uint64_t InprocTransport::queue_depth(std::string_view queue) { return broker_->queue_depth(connection_, queue); }
bool InprocTransport::queue_exists(std::string_view queue) { return broker_->queue_exists(connection_, queue); }
void InprocTransport::delete_queue(std::string_view queue) { broker_->delete_queue(connection_, queue); }

std::optional<std::string> refusing_commits(Broker& broker) {
    const std::optional<std::string> failure = broker.commit_failure();
    if (!failure) return std::nullopt;
    return "the data file \"" + broker.data() + "\" refuses commits (" + *failure +
           "); persistent publishes are refused until it writes again";
}

Health InprocTransport::check_health(std::chrono::milliseconds /*timeout*/) {
    // No deadline to keep: the broker is in this process, and its lock is held only briefly.
    if (closed_.load(std::memory_order_relaxed))
        return Health{.status = Health::Status::down, .detail = "the transport is closed"};
    const auto started = std::chrono::steady_clock::now();
    std::optional<std::string> refusing;
    try {
        refusing = refusing_commits(*broker_);
    } catch (const Error& error) {
        return Health{.status = Health::Status::down, .detail = error.what()};  // asked from inside a DeliverFn
    }
    const auto round_trip =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    if (refusing) return Health{.status = Health::Status::down, .detail = *refusing, .round_trip = round_trip};
    return Health{.round_trip = round_trip};
}

TransportInfo InprocTransport::describe() const {
    TransportInfo info{.name = "inproc",
                       .messaging_system = "acemq",
                       .address = std::string(scheme_prefix) + broker_->name(),
                       .capabilities = {"confirms", "dead-letters", "ttl"}};
    if (!broker_->data().empty()) {
        info.address += "?data=" + broker_->data();
        info.capabilities.push_back("durable");
    }
    return info;
}

void InprocTransport::close() {
    closed_.store(true, std::memory_order_relaxed);
    broker_->close_connection(connection_);
}

}  // namespace acemq::inproc
