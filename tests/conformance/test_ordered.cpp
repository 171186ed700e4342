// Ordered handling and consumer groups (docs/ordered.md §1, §3; the family's items 50, 57) on the
// transport the suite runs against: one consumer with eight workers keeps each key's
// messages one at a time in arrival order while other keys run beside them; a group starts
// its members all or nothing. Gates prove overlap; every wait is bounded.
#include "../support/forwarding_transport.hpp"
#include "../support/tally.hpp"
#include "../support/wait.hpp"
#include "conformance.hpp"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using namespace conformance;
using acemq::Message;

namespace {

// What the handlers saw: each key's messages in the order handled, whether two of one key
// were ever inside at once, and how many keys were inside together.
class Journal {
public:
    void enter(const std::string& key, std::int64_t step) {
        std::lock_guard guard(lock_);
        if (++inside_[key] > 1) overlapped_ = true;
        keys_inside_ = static_cast<int>(
            std::count_if(inside_.begin(), inside_.end(), [](const auto& entry) { return entry.second > 0; }));
        most_keys_inside_ = std::max(most_keys_inside_, keys_inside_);
        if (keys_inside_ >= 2)
            for (const auto& [inside_key, count] : inside_)
                if (count > 0) met_.insert(inside_key);
        steps_[key].push_back(step);
        changed_.notify_all();
    }
    void leave(const std::string& key) {
        std::lock_guard guard(lock_);
        --inside_[key];
        keys_inside_ = static_cast<int>(
            std::count_if(inside_.begin(), inside_.end(), [](const auto& entry) { return entry.second > 0; }));
        ++handled_;
        changed_.notify_all();
    }
    // The gate that opens once a message of another key has been inside together with
    // `key`'s (messages with no key count once each: give them distinct journal names).
    // False, counted as ran_alone, when that did not happen within 5 s.
    bool meet(const std::string& key) {
        std::unique_lock guard(lock_);
        if (changed_.wait_for(guard, 5s, [&] { return met_.contains(key); })) return true;
        ++ran_alone_;
        return false;
    }
    int ran_alone() {
        std::lock_guard guard(lock_);
        return ran_alone_;
    }
    bool wait_handled(int count) {
        std::unique_lock guard(lock_);
        return changed_.wait_for(guard, 10s, [&] { return handled_ >= count; });
    }
    std::vector<std::int64_t> steps(const std::string& key) {
        std::lock_guard guard(lock_);
        return steps_[key];
    }
    bool overlapped() {
        std::lock_guard guard(lock_);
        return overlapped_;
    }
    int most_keys_inside() {
        std::lock_guard guard(lock_);
        return most_keys_inside_;
    }

private:
    std::mutex lock_;
    std::condition_variable changed_;
    std::map<std::string, int> inside_;
    std::map<std::string, std::vector<std::int64_t>> steps_;
    std::set<std::string> met_;
    int ran_alone_ = 0;
    int keys_inside_ = 0;
    int most_keys_inside_ = 0;
    int handled_ = 0;
    bool overlapped_ = false;
};

acemq::SendOptions with_header(const std::string& name, const std::string& value) {
    acemq::SendOptions options;
    options.headers.insert_or_assign(name, acemq::FieldValue(value));
    return options;
}

std::vector<std::int64_t> first_steps(std::int64_t count) {
    std::vector<std::int64_t> steps(static_cast<std::size_t>(count));
    std::iota(steps.begin(), steps.end(), 0);
    return steps;
}

const acemq::ConsumerOptions eight_workers{.prefetch = 40, .concurrency = 8};

}  // namespace

TEST_CASE("50 ordered, concurrency 8: a key's messages one at a time in arrival order, other keys side by side") {
    Fixture f;
    const std::string queue = f.source_queue("readings");
    const std::vector<std::string> devices{"d-a", "d-b", "d-c", "d-d"};
    constexpr std::int64_t per_device = 8;
    Journal journal;
    std::string rejected_id;
    auto handler = acemq::ordered(acemq::by_header("device"), [&](const Message<Order>& message) {
        const std::string& device = message.payload.id;
        journal.enter(device, message.payload.cents);
        // Each device's first reading waits for another device's to be inside with it: a
        // lock shared between keys would hold it here alone until the gate gave up.
        if (message.payload.cents == 0)
            journal.meet(device);
        else
            std::this_thread::yield();
        journal.leave(device);
        // The handler's own decision comes back through ordered.
        return device == "d-d" && message.payload.cents == per_device - 1
                   ? acemq::reject(std::runtime_error("the last reading of d-d is refused"))
                   : acemq::accept();
    });
    acemq::Consumer consumer = f.bus().consume(queue, handler, eight_workers);
    auto publisher = f.bus().publisher_to_queue(queue);
    for (std::int64_t step = 0; step < per_device; ++step)
        for (const std::string& device : devices) {
            const auto sent = publisher.send(Order{device, step}, with_header("device", device));
            if (device == "d-d" && step == per_device - 1) rejected_id = sent.message_id;
        }

    REQUIRE(journal.wait_handled(static_cast<int>(devices.size() * per_device)));
    for (const std::string& device : devices) {
        INFO(device);
        CHECK(journal.steps(device) == first_steps(per_device));
    }
    CHECK_FALSE(journal.overlapped());
    CHECK(journal.ran_alone() == 0);
    CHECK(journal.most_keys_inside() >= 2);
    CHECK(testing_support::eventually([&] { return handler.locks() == 0; }, 5s, 1ms));
    std::optional<acemq::Delivery> refused = f.pull(acemq::dead_letter_queue(queue));
    REQUIRE(refused);
    CHECK(envelope_of(*refused).id == rejected_id);
    CHECK(envelope_of(*refused).error.find("the last reading of d-d is refused") != std::string::npos);
    refused->ack();
    consumer.close();
}

TEST_CASE("50 ordered, concurrency 8: a later worker reaching the handler first still waits for the earlier message") {
    // The first message is held between the worker taking it and the handler (here in a
    // consume interceptor; a slow decode does the same) until the second, taken by another
    // worker, has reached its handler — or for half a second, which with the arrival order
    // kept it never does. A lock taken at the handler's door would let the second go first.
    std::mutex lock;
    std::condition_variable changed;
    bool second_handled = false;
    std::vector<std::string> handled;
    acemq::BusOptions options;
    options.consume_interceptors.push_back([&](acemq::ConsumeContext& context, const acemq::ConsumeNext& next) {
        const auto step = context.envelope.headers.find("step");
        if (step != context.envelope.headers.end() && step->second.as_text() == "1") {
            std::unique_lock guard(lock);
            changed.wait_for(guard, 500ms, [&] { return second_handled; });
        }
        return next(context);
    });
    Fixture f(std::move(options));
    const std::string queue = f.source_queue("readings");
    auto handler = acemq::ordered(acemq::by_header("device"), [&](const Message<Order>& message) {
        std::lock_guard guard(lock);
        handled.push_back(message.payload.id);
        if (message.payload.id == "2") second_handled = true;
        changed.notify_all();
        return acemq::accept();
    });
    // Inside with_timeout the ordered handler runs on a helper thread, and keeps the order.
    const bool timed = GENERATE(false, true);
    INFO((timed ? "inside with_timeout" : "as the consumer's handler"));
    acemq::Consumer consumer =
        timed ? f.bus().consume(queue, acemq::chain(handler, acemq::with_timeout(10s)), eight_workers)
              : f.bus().consume(queue, handler, eight_workers);
    auto publisher = f.bus().publisher_to_queue(queue);
    for (const std::string step : {"1", "2"}) {
        acemq::SendOptions send = with_header("device", "d-slow");
        send.headers.insert_or_assign("step", acemq::FieldValue(step));
        publisher.send(Order{step, 0}, send);
    }
    {
        std::unique_lock guard(lock);
        REQUIRE(changed.wait_for(guard, 10s, [&] { return handled.size() == 2; }));
        CHECK(handled == std::vector<std::string>{"1", "2"});
    }
    consumer.close();
}

TEST_CASE("50 ordered: messages without a key are not ordered, they run side by side") {
    Fixture f;
    const std::string queue = f.source_queue("readings");
    Journal journal;
    auto handler = acemq::ordered(acemq::by_header("device"), [&](const Message<Order>& message) {
        journal.enter(message.payload.id, 0);
        journal.meet(message.payload.id);  // an empty key shared as one key would wait alone
        journal.leave(message.payload.id);
        return acemq::accept();
    });
    acemq::Consumer consumer = f.bus().consume(queue, handler, eight_workers);
    auto publisher = f.bus().publisher_to_queue(queue);
    publisher.send(Order{"no-key-1", 0});
    publisher.send(Order{"no-key-2", 0}, with_header("device", ""));
    REQUIRE(journal.wait_handled(2));
    CHECK(journal.ran_alone() == 0);
    CHECK(testing_support::eventually([&] { return handler.locks() == 0; }, 5s, 1ms));
    consumer.close();
}

TEST_CASE("50 ordered by_correlation: each conversation in order, one message at a time") {
    Fixture f;
    const std::string queue = f.source_queue("conversations");
    Journal journal;
    auto handler = acemq::ordered(acemq::by_correlation(), [&](const Message<Order>& message) {
        journal.enter(message.envelope.correlation, message.payload.cents);
        std::this_thread::yield();
        journal.leave(message.envelope.correlation);
        return acemq::accept();
    });
    acemq::Consumer consumer = f.bus().consume(queue, handler, eight_workers);
    auto publisher = f.bus().publisher_to_queue(queue);
    constexpr std::int64_t per_conversation = 6;
    const std::vector<std::string> conversations{"conv-1", "conv-2", "conv-3"};
    for (std::int64_t step = 0; step < per_conversation; ++step)
        for (const std::string& conversation : conversations) {
            acemq::SendOptions send;
            send.correlation = conversation;
            publisher.send(Order{conversation, step}, send);
        }
    REQUIRE(journal.wait_handled(static_cast<int>(conversations.size() * per_conversation)));
    for (const std::string& conversation : conversations) {
        INFO(conversation);
        CHECK(journal.steps(conversation) == first_steps(per_conversation));
    }
    CHECK_FALSE(journal.overlapped());
    CHECK(testing_support::eventually([&] { return handler.locks() == 0; }, 5s, 1ms));
    consumer.close();
}

TEST_CASE("50 ordered: 50 keys leave 0 locks behind") {
    Fixture f;
    const std::string queue = f.source_queue("readings");
    Journal journal;
    std::size_t most_locks = 0;
    std::mutex lock;
    const acemq::Ordered<Order>* self = nullptr;
    auto handler = acemq::ordered(acemq::by_header("device"), [&](const Message<Order>& message) {
        {
            std::lock_guard guard(lock);
            most_locks = std::max(most_locks, self->locks());
        }
        journal.enter(message.payload.id, 0);
        journal.leave(message.payload.id);
        return acemq::accept();
    });
    self = &handler;
    acemq::Consumer consumer = f.bus().consume(queue, handler, eight_workers);
    auto publisher = f.bus().publisher_to_queue(queue);
    for (int device = 0; device < 50; ++device) {
        const std::string key = "device-" + std::to_string(device);
        publisher.send(Order{key, 0}, with_header("device", key));
    }
    REQUIRE(journal.wait_handled(50));
    CHECK(testing_support::eventually([&] { return handler.locks() == 0; }, 5s, 1ms));
    {
        std::lock_guard guard(lock);
        CHECK(most_locks >= 1);  // the count is live: each handler ran holding its key
    }
    consumer.close();
}

TEST_CASE("50 ordered: a retried message is republished behind the later messages of its key, on every transport") {
    // Retries go back through a publish, never a requeue (docs/wire-contract.md §6.1), so where a broker
    // puts a nack-requeued message (RabbitMQ's quorum queue: at the back; the embedded broker:
    // at the head, tools/README.md) does not change the order ordered handling gives.
    Fixture f({.retry = acemq::fixed_retry(2, 0ms)});
    const std::string queue = f.source_queue("readings");
    std::mutex lock;
    std::condition_variable changed;
    std::vector<std::string> handled;
    auto handler = acemq::ordered(acemq::by_header("device"), [&](const Message<Order>& message) {
        std::lock_guard guard(lock);
        handled.push_back(message.payload.id + "@" + std::to_string(message.envelope.attempt));
        changed.notify_all();
        return message.payload.id == "r-1" && message.envelope.attempt == 1
                   ? acemq::retry(std::runtime_error("not yet"))
                   : acemq::accept();
    });
    auto publisher = f.bus().publisher_to_queue(queue);
    for (const std::string id : {"r-1", "r-2", "r-3"}) publisher.send(Order{id, 0}, with_header("device", "d-r"));
    acemq::Consumer consumer = f.bus().consume(queue, handler, eight_workers);
    std::unique_lock guard(lock);
    REQUIRE(changed.wait_for(guard, 10s, [&] { return handled.size() == 4; }));
    CHECK(handled == std::vector<std::string>{"r-1@1", "r-2@1", "r-3@1", "r-1@2"});
    guard.unlock();
    consumer.close();
}

namespace {

// The fixture's broker as a second bus sees it, recording the consumes the group makes, and
// refusing the one numbered `refuse` (from 1) when set. Closing the bus leaves the fixture's
// transport open.
class RecordingTransport : public testing_support::ForwardingTransport {
public:
    explicit RecordingTransport(acemq::Transport& inner, int refuse = 0)
        : ForwardingTransport(std::shared_ptr<acemq::Transport>(&inner, [](acemq::Transport*) {})), refuse_(refuse) {}

    std::unique_ptr<acemq::Subscription> consume(std::string_view queue, const acemq::ConsumeSpec& spec,
                                                 acemq::DeliverFn deliver) override {
        {
            std::lock_guard guard(lock_);
            tags_.push_back(spec.tag);
            if (static_cast<int>(tags_.size()) == refuse_)
                throw acemq::Error("acemq: consume refused by the test for " + spec.tag);
        }
        return std::make_unique<Recorded>(*this, ForwardingTransport::consume(queue, spec, std::move(deliver)));
    }
    void close() override {}

    std::vector<std::string> tags() {
        std::lock_guard guard(lock_);
        return tags_;
    }
    int open_subscriptions() {
        std::lock_guard guard(lock_);
        return open_;
    }

private:
    class Recorded : public acemq::Subscription {
    public:
        Recorded(RecordingTransport& owner, std::unique_ptr<acemq::Subscription> inner)
            : owner_(owner), inner_(std::move(inner)) {
            std::lock_guard guard(owner_.lock_);
            ++owner_.open_;
        }
        ~Recorded() override { close(); }
        void stop() override { inner_->stop(); }
        void close() override {
            inner_->close();
            std::lock_guard guard(owner_.lock_);
            if (!closed_) --owner_.open_;
            closed_ = true;
        }

    private:
        RecordingTransport& owner_;
        std::unique_ptr<acemq::Subscription> inner_;
        bool closed_ = false;
    };

    std::mutex lock_;
    std::vector<std::string> tags_;
    int open_ = 0;
    int refuse_;
};

}  // namespace

TEST_CASE("57 consumer group: size consumers tagged acemq-<queue>-1..N (or <tag>-n) share the queue") {
    Fixture f;
    const std::string queue = f.source_queue("orders.new");
    auto recording = std::make_shared<RecordingTransport>(f.transport());
    acemq::Bus bus = acemq::connect(recording);
    testing_support::Tally handled;
    auto group = acemq::ConsumerGroup::start(bus, queue, 3, [&](const Message<Order>&) {
        handled.add();
        return acemq::accept();
    });
    const std::vector<std::string> expected{"acemq-" + queue + "-1", "acemq-" + queue + "-2", "acemq-" + queue + "-3"};
    CHECK(group.tags() == expected);
    CHECK(recording->tags() == expected);  // what each member asked the broker for
    CHECK(recording->open_subscriptions() == 3);
    CHECK(group.size() == 3);
    CHECK(group.queue() == queue);
    auto publisher = bus.publisher_to_queue(queue);
    for (int n = 0; n < 6; ++n) publisher.send(Order{"o-" + std::to_string(n), n});
    CHECK(handled.wait_at_least(6, 10s));
    CHECK(group.close());
    CHECK(recording->open_subscriptions() == 0);

    auto shipping = acemq::ConsumerGroup::start<Order>(
        bus, queue, 2, [](const Message<Order>&) { return acemq::accept(); }, {.tag = "shipping"});
    CHECK(shipping.tags() == std::vector<std::string>{"shipping-1", "shipping-2"});
    shipping.close();
    bus.close();
}

TEST_CASE("57 consumer group: a member failing to start releases the ones started, and the failure goes on") {
    Fixture f;
    const std::string queue = f.source_queue("orders.new");
    auto recording = std::make_shared<RecordingTransport>(f.transport(), 3);
    acemq::Bus bus = acemq::connect(recording);
    CHECK_THROWS_WITH(
        acemq::ConsumerGroup::start<Order>(bus, queue, 3, [](const Message<Order>&) { return acemq::accept(); }),
        Catch::Contains("consume refused by the test for acemq-" + queue + "-3"));
    CHECK(recording->tags().size() == 3);
    CHECK(recording->open_subscriptions() == 0);  // both started members were released
    bus.close();
}

TEST_CASE("57 consumer group: a size below 1 is refused; closing twice is fine") {
    Fixture f;
    const std::string queue = f.source_queue("orders.new");
    const auto handle = [](const Message<Order>&) { return acemq::accept(); };
    CHECK_THROWS_AS(acemq::ConsumerGroup::start(f.bus(), queue, 0, handle), acemq::InvalidArgument);
    CHECK_THROWS_WITH(acemq::ConsumerGroup::start(f.bus(), queue, 0, handle),
                      Catch::Contains("needs at least one consumer"));
    auto group = acemq::ConsumerGroup::start(f.bus(), queue, 2, handle);
    CHECK(group.size() == 2);
    CHECK(group.close());
    CHECK(group.size() == 0);
    CHECK(group.tags().empty());
    CHECK(group.close());
}
