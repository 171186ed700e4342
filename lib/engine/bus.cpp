#include <acemq/bus.hpp>

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <acemq/log.hpp>
#include "bus_core.hpp"
#include "consumer_core.hpp"

namespace acemq {

namespace {

std::string default_origin() {
    char host[HOST_NAME_MAX + 1] = {};
    if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "acemq@unknown";
    return std::string("acemq@") + host;
}

template <class T>
std::shared_ptr<const std::vector<T>> appended(const std::shared_ptr<const std::vector<T>>& list, T item) {
    auto copy = std::make_shared<std::vector<T>>(*list);
    copy->push_back(std::move(item));
    return copy;
}

}  // namespace

namespace detail {

BusCore::BusCore(std::shared_ptr<Transport> transport, BusOptions options)
    : transport_(std::move(transport)), options_(std::move(options)),
      telemetry_(options_.metrics, options_.tracer, transport_->describe()) {
    if (options_.origin.empty()) options_.origin = default_origin();
    if (!options_.codec) options_.codec = default_codec();
    if (!options_.clock) options_.clock = system_clock();
    if (options_.concurrency < 1 || options_.concurrency > max_concurrency)
        throw InvalidArgument("acemq: concurrency must be between 1 and " + std::to_string(max_concurrency) + ", got " +
                              std::to_string(options_.concurrency) +
                              ": each is a thread; for more messages in flight raise the prefetch instead");
    if (options_.max_outstanding_publishes < 1)
        throw InvalidArgument("acemq: max_outstanding_publishes must be at least 1");
    publish_interceptors_ =
        std::make_shared<const std::vector<PublishInterceptor>>(std::move(options_.publish_interceptors));
    consume_interceptors_ =
        std::make_shared<const std::vector<ConsumeInterceptor>>(std::move(options_.consume_interceptors));
    std::vector<std::shared_ptr<Observer>> observers;
    if (options_.observer) observers.push_back(options_.observer);
    observers_ = std::make_shared<const std::vector<std::shared_ptr<Observer>>>(std::move(observers));
    any_publish_interceptors_ = !publish_interceptors_->empty();
    any_consume_interceptors_ = !consume_interceptors_->empty();
    any_observers_ = !observers_->empty();
    if (options_.metrics) transport_->measure_connection(options_.metrics);
}

std::shared_ptr<const std::vector<PublishInterceptor>> BusCore::publish_interceptors() const {
    if (!any_publish_interceptors_.load(std::memory_order_acquire)) return nullptr;
    std::lock_guard guard(lock_);
    return publish_interceptors_;
}

std::shared_ptr<const std::vector<ConsumeInterceptor>> BusCore::consume_interceptors() const {
    if (!any_consume_interceptors_.load(std::memory_order_acquire)) return nullptr;
    std::lock_guard guard(lock_);
    return consume_interceptors_;
}

void BusCore::add_publish_interceptor(PublishInterceptor interceptor) {
    std::lock_guard guard(lock_);
    publish_interceptors_ = appended(publish_interceptors_, std::move(interceptor));
    any_publish_interceptors_.store(true, std::memory_order_release);
}

void BusCore::add_consume_interceptor(ConsumeInterceptor interceptor) {
    std::lock_guard guard(lock_);
    consume_interceptors_ = appended(consume_interceptors_, std::move(interceptor));
    any_consume_interceptors_.store(true, std::memory_order_release);
}

void BusCore::add_observer(std::shared_ptr<Observer> observer) {
    if (!observer) throw InvalidArgument("acemq: add_observer was given a null observer");
    std::lock_guard guard(lock_);
    observers_ = appended(observers_, std::move(observer));
    any_observers_.store(true, std::memory_order_release);
}

void BusCore::notify_all(const std::function<void(Observer&)>& tell) const {
    if (!any_observers_.load(std::memory_order_acquire)) return;
    std::shared_ptr<const std::vector<std::shared_ptr<Observer>>> snapshot;
    {
        std::lock_guard guard(lock_);
        snapshot = observers_;
    }
    for (const auto& observer : *snapshot) {
        try {
            tell(*observer);
        } catch (const std::exception& error) {
            // An observer must not change what happened to a message; say so and go on.
            log(LogLevel::warning, "engine", std::string("an observer threw and was ignored: ") + error.what());
        }
    }
}

void BusCore::notify(const PublishedEvent& event) const {
    notify_all([&](Observer& observer) { observer.published(event); });
}

void BusCore::notify(const SettledEvent& event) const {
    notify_all([&](Observer& observer) { observer.settled(event); });
}

void BusCore::notify_rung_missing(std::string_view queue, std::string_view rung) const {
    notify_all([&](Observer& observer) { observer.rung_missing(queue, rung); });
}

void BusCore::notify_set_aside_failed(std::string_view queue, std::string_view target) const {
    notify_all([&](Observer& observer) { observer.set_aside_failed(queue, target); });
}

bool BusCore::closed() const {
    std::lock_guard guard(lock_);
    return closed_;
}

void BusCore::track(const std::shared_ptr<ConsumerCore>& consumer) {
    std::lock_guard guard(lock_);
    if (closed_) throw UsageError("acemq: this bus is closed; connect again to consume");
    std::erase_if(consumers_, [](const auto& weak) { return weak.expired(); });
    consumers_.push_back(consumer);
}

std::vector<std::shared_ptr<ConsumerCore>> BusCore::live_consumers() const {
    std::lock_guard guard(lock_);
    std::vector<std::shared_ptr<ConsumerCore>> live;
    for (const auto& weak : consumers_)
        if (auto consumer = weak.lock()) live.push_back(std::move(consumer));
    return live;
}

std::string BusCore::default_tag(const std::string& queue) {
    std::lock_guard guard(lock_);
    const int issued = ++tags_issued_[queue];
    return issued == 1 ? "acemq-" + queue : "acemq-" + queue + "-" + std::to_string(issued);
}

void BusCore::close() {
    std::vector<std::weak_ptr<ConsumerCore>> consumers;
    {
        std::lock_guard guard(lock_);
        if (closed_) return;
        closed_ = true;
        consumers.swap(consumers_);
    }
    // Every consumer drains at the same time, each within its own deadline from now: one
    // after another, three stuck consumers would take three deadlines, past a container's
    // grace period.
    std::mutex failures_lock;
    std::vector<std::string> failures;
    auto close_one = [&](const std::shared_ptr<ConsumerCore>& consumer) {
        try {
            consumer->close(consumer->drain_timeout());
        } catch (...) {
            // Kept as text (an exception object must not cross threads) and thrown below, once
            // every consumer had its chance to close.
            const std::string what =
                "the consumer of " + consumer->queue() + ": " + describe(Failure::of(std::current_exception()));
            std::lock_guard guard(failures_lock);
            failures.push_back(what);
        }
    };
    std::vector<std::thread> closers;
    for (const auto& weak : consumers) {
        auto consumer = weak.lock();
        if (!consumer) continue;
        try {
            closers.emplace_back(close_one, consumer);
        } catch (const std::system_error&) {
            close_one(consumer);  // no thread to spare: this one drains here, while the others do
        }
    }
    for (std::thread& closer : closers) closer.join();
    transport_->close();
    if (!failures.empty()) {
        std::string text =
            "acemq: closing the bus, some consumers could not be closed cleanly (their unsettled "
            "messages go back to their queues):";
        for (const std::string& failure : failures) text += " " + failure + ";";
        text.pop_back();
        throw Error(text);
    }
}

}  // namespace detail

Bus::Bus(std::shared_ptr<detail::BusCore> core) : core_(std::move(core)) {}

Bus::~Bus() {
    if (core_) core_->close();
}

void Bus::declare(const Topology& topology) { core_->transport().declare(topology); }

Publisher Bus::publisher(std::string exchange, std::string routing_key, PublisherOptions options) {
    return Publisher(core_, std::move(exchange), std::move(routing_key), std::move(options));
}

Publisher Bus::publisher_to_queue(std::string queue, PublisherOptions options) {
    return publisher("", std::move(queue), std::move(options));
}

Consumer Bus::consume_raw(std::string_view queue, Handler<Bytes> handler, ConsumerOptions options) {
    return start_consumer(queue, detail::raw_decoder(std::move(handler)), std::move(options));
}

Consumer Bus::start_consumer(std::string_view queue, detail::Decoder decoder, ConsumerOptions options) {
    auto core = detail::ConsumerCore::start(core_, std::string(queue), std::move(decoder), std::move(options));
    return Consumer(std::move(core));
}

void Bus::add_observer(std::shared_ptr<Observer> observer) { core_->add_observer(std::move(observer)); }
void Bus::add_publish_interceptor(PublishInterceptor interceptor) {
    core_->add_publish_interceptor(std::move(interceptor));
}
void Bus::add_consume_interceptor(ConsumeInterceptor interceptor) {
    core_->add_consume_interceptor(std::move(interceptor));
}
Health Bus::health(std::chrono::milliseconds timeout) {
    if (core_->closed()) return Health{.status = Health::Status::down, .detail = "the bus is closed"};
    Health report = core_->transport().check_health(timeout);
    // Consumers are asked only of a connection that answers: down already says the rest, and
    // asking a broker that is away would hold the answer (a readiness probe's) until it is back.
    const bool answering = report.status != Health::Status::down;
    for (const auto& consumer : core_->live_consumers()) {
        const detail::ConsumerCore::Reading reading = consumer->reading(answering);
        if (!reading.open) continue;
        ++report.consumers;
        report.in_flight += reading.in_flight;
        if (answering && reading.stopped &&
            std::find(report.stopped_reading.begin(), report.stopped_reading.end(), consumer->queue()) ==
                report.stopped_reading.end())
            report.stopped_reading.push_back(consumer->queue());
    }
    if (answering && !report.stopped_reading.empty()) {
        // A transport that reported stopped consumers itself (AMQP) said so in the same words.
        std::string stopped = "these consumers have stopped reading: ";
        for (std::size_t i = 0; i < report.stopped_reading.size(); ++i)
            stopped += (i == 0 ? "" : ", ") + report.stopped_reading[i];
        report.detail = report.blocked ? report.detail + "; " + stopped : stopped;
        report.status = Health::Status::degraded;
    }
    return report;
}
Transport& Bus::transport() { return core_->transport(); }
const std::string& Bus::origin() const { return core_->options().origin; }
const std::shared_ptr<const Codec>& Bus::codec() const { return core_->options().codec; }
std::shared_ptr<Clock> Bus::clock() const { return core_->options().clock; }
void Bus::close() { core_->close(); }

Bus connect(std::string_view url, BusOptions options) { return connect(open_transport(url), std::move(options)); }

Bus connect(std::shared_ptr<Transport> transport, BusOptions options) {
    if (!transport) throw InvalidArgument("acemq: cannot connect a bus to no transport: pass an open one");
    return Bus(std::make_shared<detail::BusCore>(std::move(transport), std::move(options)));
}

}  // namespace acemq
