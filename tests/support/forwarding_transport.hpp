// A Transport that hands every call to another one: the base of test transports that change
// one behaviour (refuse some publishes, throw, hold) and leave the rest to the real broker.
#pragma once

#include <acemq/transport.hpp>

#include <memory>

namespace testing_support {

class ForwardingTransport : public acemq::Transport {
public:
    explicit ForwardingTransport(std::shared_ptr<acemq::Transport> inner) : inner_(std::move(inner)) {}

    void declare(const acemq::Topology& topology) override { inner_->declare(topology); }
    acemq::PublishResult publish(acemq::OutboundMessage message) override {
        return inner_->publish(std::move(message));
    }
    std::unique_ptr<acemq::Subscription> consume(std::string_view queue, const acemq::ConsumeSpec& spec,
                                                 acemq::DeliverFn deliver) override {
        return inner_->consume(queue, spec, std::move(deliver));
    }
    std::optional<acemq::Delivery> pull(std::string_view queue) override { return inner_->pull(queue); }
    std::uint64_t queue_depth(std::string_view queue) override { return inner_->queue_depth(queue); }
    bool queue_exists(std::string_view queue) override { return inner_->queue_exists(queue); }
    void delete_queue(std::string_view queue) override { inner_->delete_queue(queue); }
    void close() override { inner_->close(); }

private:
    std::shared_ptr<acemq::Transport> inner_;
};

}  // namespace testing_support
