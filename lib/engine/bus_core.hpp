// The shared state behind a Bus, its Publishers and its Consumers (not a public header).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <acemq/bus.hpp>
#include "telemetry.hpp"

namespace acemq::detail {

class ConsumerCore;

class BusCore : public std::enable_shared_from_this<BusCore> {
public:
    BusCore(std::shared_ptr<Transport> transport, BusOptions options);

    Transport& transport() noexcept { return *transport_; }
    const BusOptions& options() const noexcept { return options_; }
    const Codec& codec() const noexcept { return *options_.codec; }
    Telemetry& telemetry() noexcept { return telemetry_; }

    // Copy-on-write lists: a publish or delivery reads a snapshot without holding a lock
    // while user code runs; adding one replaces the list. Null while the list is empty, the
    // common case, which then costs no lock and no count shared between threads.
    std::shared_ptr<const std::vector<PublishInterceptor>> publish_interceptors() const;
    std::shared_ptr<const std::vector<ConsumeInterceptor>> consume_interceptors() const;
    void add_publish_interceptor(PublishInterceptor interceptor);
    void add_consume_interceptor(ConsumeInterceptor interceptor);
    void add_observer(std::shared_ptr<Observer> observer);

    void notify(const PublishedEvent& event) const;
    void notify(const SettledEvent& event) const;
    void notify_rung_missing(std::string_view queue, std::string_view rung) const;
    void notify_set_aside_failed(std::string_view queue, std::string_view target) const;

    void track(const std::shared_ptr<ConsumerCore>& consumer);
    // The consumers still alive, for Bus::health.
    std::vector<std::shared_ptr<ConsumerCore>> live_consumers() const;
    // "acemq-{queue}" for the first consumer of a queue on this bus, then "acemq-{queue}-2",
    // "-3", ...: a broker refuses two consumers with one tag on one connection.
    std::string default_tag(const std::string& queue);
    void close();
    bool closed() const;

private:
    // Calls `tell` on every observer; an observer that throws is logged and skipped.
    void notify_all(const std::function<void(Observer&)>& tell) const;

    std::shared_ptr<Transport> transport_;
    BusOptions options_;
    Telemetry telemetry_;
    mutable std::mutex lock_;
    std::shared_ptr<const std::vector<PublishInterceptor>> publish_interceptors_;
    std::shared_ptr<const std::vector<ConsumeInterceptor>> consume_interceptors_;
    std::shared_ptr<const std::vector<std::shared_ptr<Observer>>> observers_;
    std::atomic<bool> any_publish_interceptors_{false};
    std::atomic<bool> any_consume_interceptors_{false};
    std::atomic<bool> any_observers_{false};
    std::vector<std::weak_ptr<ConsumerCore>> consumers_;
    std::map<std::string, int, std::less<>> tags_issued_;
    bool closed_ = false;
};

}  // namespace acemq::detail
