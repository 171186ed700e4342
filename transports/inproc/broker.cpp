#include <acemq/inproc.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/naming.hpp>
#include "inproc/ring.hpp"
#include "inproc/topic_routes.hpp"

namespace acemq::inproc {

using detail::Ring;
using detail::StringMap;
using detail::TopicRoutes;

namespace {

// How many DeliverFns are running on this thread: a call into a broker from inside one
// would deadlock on the broker's lock, so it is refused instead.
thread_local int deliveries_in_progress = 0;

void refuse_reentry(std::string_view action) {
    if (deliveries_in_progress > 0)
        throw Error("acemq: cannot " + std::string(action) +
                    " from inside a DeliverFn of the inproc broker: a DeliverFn must only queue the delivery "
                    "and return; settle, publish and subscribe from the thread that takes it off that queue");
}

// A delivery tag is the consumer's id above these bits and its own sequence number below.
constexpr unsigned sequence_bits = 40;
constexpr std::uint64_t sequence_mask = (std::uint64_t{1} << sequence_bits) - 1;

std::string quoted(std::string_view name) { return "\"" + std::string(name) + "\""; }

struct Stored {
    InboundMessage message;
    Clock::time_point enqueued{};  // when it entered this queue; its TTL runs from here
};

struct Queue;

struct Unacked {
    std::uint64_t sequence = 0;
    std::shared_ptr<Queue> queue;  // where a requeue sends it
    Stored stored;
    bool settled = false;
};

struct Consumer {
    std::uint64_t id = 0;
    Broker::ConnectionId connection = 0;
    std::shared_ptr<Queue> queue;  // null for the record of a connection's pulls
    std::string tag;
    std::uint16_t prefetch = 0;  // 0: no limit
    DeliverFn deliver;
    bool active = false;  // takes new deliveries
    std::uint64_t next_sequence = 1;
    Ring<Unacked> unacked;  // in delivery order; settled entries linger until they reach the front
    std::size_t outstanding = 0;

    bool has_room() const noexcept { return active && (prefetch == 0 || outstanding < prefetch); }

    Unacked* find(std::uint64_t sequence) {
        std::size_t low = 0, high = unacked.size();
        while (low < high) {
            const std::size_t middle = (low + high) / 2;
            if (unacked[middle].sequence < sequence) low = middle + 1;
            else high = middle;
        }
        return low < unacked.size() && unacked[low].sequence == sequence ? &unacked[low] : nullptr;
    }

    // Drops settled entries from the front, and rebuilds the ring when an old unsettled
    // entry holds so many settled ones behind it that they would pile up.
    void trim() {
        while (!unacked.empty() && unacked.front().settled) unacked.pop_front();
        if (unacked.size() <= 2 * outstanding + 64) return;
        Ring<Unacked> kept;
        while (!unacked.empty()) {
            Unacked entry = unacked.pop_front();
            if (!entry.settled) kept.push_back(std::move(entry));
        }
        unacked = std::move(kept);
    }
};

struct Queue : std::enable_shared_from_this<Queue> {
    QueueDeclaration declaration;
    Broker::ConnectionId owner = 0;  // the connection an exclusive queue belongs to
    std::optional<Clock::duration> ttl;
    std::optional<std::string> dead_letter_exchange;
    std::optional<std::string> dead_letter_routing_key;
    Ring<Stored> ready;
    std::vector<Consumer*> consumers;  // the active ones, served round-robin
    std::size_t next_consumer = 0;
    bool had_consumer = false;
    bool deleted = false;
    Clock::TimerId timer = 0;  // armed for the head's expiry; 0 = none
    Clock::time_point timer_deadline{};
    std::uint64_t timer_generation = 0;  // tells a stale firing from the armed one
    std::uint64_t route_mark = 0;        // the last publish that routed here, to route once
};

struct Binding {
    Queue* queue;
    std::string routing_key;
    FieldTable arguments;
};

struct Exchange {
    ExchangeDeclaration declaration;
    std::vector<Binding> bindings;
    // Built from the bindings, for the exchange's kind only.
    StringMap<std::vector<Queue*>> direct;
    TopicRoutes<Queue*> topic;
    std::vector<Queue*> fanout;

    void add_route(const Binding& binding) {
        switch (declaration.kind) {
            case ExchangeKind::direct: direct[binding.routing_key].push_back(binding.queue); break;
            case ExchangeKind::topic: topic.add(binding.routing_key, binding.queue); break;
            case ExchangeKind::fanout: fanout.push_back(binding.queue); break;
            case ExchangeKind::headers: break;  // refused at declare
        }
    }

    void rebuild_routes() {
        direct.clear();
        topic.clear();
        fanout.clear();
        for (const Binding& binding : bindings) add_route(binding);
    }
};

bool is_integer(const FieldValue& value) {
    return value.holds<std::int32_t>() || value.holds<std::int64_t>() || value.holds<std::uint64_t>();
}

// RabbitMQ compares arguments by value, so 60000 sent as a 32-bit and as a 64-bit
// integer are the same argument.
bool equivalent(const FieldValue& a, const FieldValue& b) {
    if (is_integer(a) && is_integer(b)) {
        const auto left = a.as_integer(), right = b.as_integer();
        if (left && right) return *left == *right;
    }
    return a == b;
}

std::string shown(const FieldValue* value) { return value == nullptr ? "(absent)" : value->to_string(); }
std::string shown(bool flag) { return flag ? "true" : "false"; }

void compare_arguments(const FieldTable& existing, const FieldTable& asked, std::vector<std::string>& differences) {
    std::vector<std::string> names;
    for (const auto& [name, value] : existing) names.push_back(name);
    for (const auto& [name, value] : asked)
        if (!existing.contains(name)) names.push_back(name);
    for (const std::string& name : names) {
        const auto had = existing.find(name), wants = asked.find(name);
        const FieldValue* had_value = had == existing.end() ? nullptr : &had->second;
        const FieldValue* wanted_value = wants == asked.end() ? nullptr : &wants->second;
        if (had_value && wanted_value && equivalent(*had_value, *wanted_value)) continue;
        differences.push_back(name + ": existing " + shown(had_value) + ", asked " + shown(wanted_value));
    }
}

void compare_flag(std::string_view name, bool existing, bool asked, std::vector<std::string>& differences) {
    if (existing != asked)
        differences.push_back(std::string(name) + ": existing " + shown(existing) + ", asked " + shown(asked));
}

[[noreturn]] void precondition_failed(std::string_view what, std::string_view name, std::vector<std::string> differences) {
    std::sort(differences.begin(), differences.end());
    std::string text = "acemq: cannot declare " + std::string(what) + " " + quoted(name) + ": PRECONDITION_FAILED - ";
    for (std::size_t i = 0; i < differences.size(); ++i) text += (i == 0 ? "" : "; ") + differences[i];
    text += "; it exists with other settings: declare it as it is, or delete it first";
    throw TopologyError(text);
}

InboundMessage inbound(OutboundMessage&& message) {
    return InboundMessage{std::move(message.body),       std::move(message.content_type), std::move(message.exchange),
                          std::move(message.routing_key), std::move(message.message_id),   std::move(message.reply_to),
                          std::move(message.headers),     false};
}

const std::string* text_field(const FieldTable& table, std::string_view name) {
    const auto found = table.find(name);
    return found == table.end() ? nullptr : std::get_if<std::string>(&found->second.get());
}

// Adds this death to the message's `x-death` header as RabbitMQ does: newest first, and a
// second death through the same queue for the same reason counts up the entry it already
// has (moving it to the front) instead of adding one.
void record_death(InboundMessage& message, std::string_view queue, std::string_view reason) {
    FieldArray deaths;
    if (const auto found = message.headers.find("x-death"); found != message.headers.end())
        if (const auto* earlier = std::get_if<FieldArray>(&found->second.get())) deaths = *earlier;
    const auto same = std::find_if(deaths.begin(), deaths.end(), [&](const FieldValue& death) {
        const auto* table = std::get_if<FieldTable>(&death.get());
        if (table == nullptr) return false;
        const std::string* its_queue = text_field(*table, "queue");
        const std::string* its_reason = text_field(*table, "reason");
        return its_queue && its_reason && *its_queue == queue && *its_reason == reason;
    });
    FieldTable death;
    if (same != deaths.end()) {
        death = std::get<FieldTable>(same->get());
        const auto count = death["count"].as_integer();
        death["count"] = FieldValue(static_cast<std::int64_t>(count.value_or(0) + 1));
        deaths.erase(same);
    } else {
        death = FieldTable{
            {"count", FieldValue(std::int64_t{1})},
            {"reason", FieldValue(reason)},
            {"queue", FieldValue(queue)},
            {"exchange", FieldValue(message.exchange)},
            {"routing-keys", FieldValue(FieldArray{FieldValue(message.routing_key)})},
            {"time", FieldValue(std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()))},
        };
    }
    deaths.insert(deaths.begin(), FieldValue(std::move(death)));
    Headers& headers = message.headers;
    headers.insert_or_assign("x-death", FieldValue(std::move(deaths)));
    headers.try_emplace("x-first-death-reason", FieldValue(reason));
    headers.try_emplace("x-first-death-queue", FieldValue(queue));
    headers.try_emplace("x-first-death-exchange", FieldValue(message.exchange));
    headers.insert_or_assign("x-last-death-reason", FieldValue(reason));
    headers.insert_or_assign("x-last-death-queue", FieldValue(queue));
    headers.insert_or_assign("x-last-death-exchange", FieldValue(message.exchange));
}

// RabbitMQ drops a message dead-lettered by expiry back into a queue it already died in,
// unless a consumer rejected it somewhere on the way (then a client is in the loop).
bool dead_letter_cycle(const InboundMessage& message, std::string_view target) {
    const auto found = message.headers.find("x-death");
    if (found == message.headers.end()) return false;
    const auto* deaths = std::get_if<FieldArray>(&found->second.get());
    if (deaths == nullptr) return false;
    for (const FieldValue& death : *deaths) {
        const auto* table = std::get_if<FieldTable>(&death.get());
        if (table == nullptr) continue;
        const std::string* reason = text_field(*table, "reason");
        if (reason && *reason == "rejected") return false;
        const std::string* queue = text_field(*table, "queue");
        if (queue && *queue == target) return true;
    }
    return false;
}

struct Registry {
    std::mutex lock;
    std::map<std::string, std::weak_ptr<Broker>, std::less<>> brokers;
};

// Never destroyed: a broker's last owner may be a consumer's worker that outlives main()
// (one left to finish a close begun inside its handler, or stuck in a handler), and its
// destructor must still find the registry after static destruction has begun.
Registry& registry() {
    static Registry* const instance = new Registry;
    return *instance;
}

}  // namespace

// ---------------------------------------------------------------------------------------

class Broker::Impl final : public DeliverySettler {
public:
    Impl(Broker& owner, std::string name, std::shared_ptr<Clock> clock)
        : owner_(owner), name_(std::move(name)), clock_(std::move(clock)) {}

    // Holds the broker lock for one operation; on the way out, after unlocking, cancels the
    // expiry timers the operation retired. Cancelling under the lock could deadlock: a
    // clock's cancel waits for a firing timer, whose action waits for this lock.
    class Guard {
    public:
        Guard(Impl& impl, std::string_view action) : impl_(impl), lock_((refuse_reentry(action), impl.mutex_)) {}
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;
        ~Guard() {
            if (impl_.retired_timers_.empty()) return;
            std::vector<Clock::TimerId> retired;
            retired.swap(impl_.retired_timers_);
            lock_.unlock();
            for (Clock::TimerId timer : retired) impl_.clock_->cancel(timer);
        }

    private:
        Impl& impl_;
        std::unique_lock<std::mutex> lock_;
    };

    ~Impl() {
        // Nobody owns the broker any more, so no operation runs and no timer action gets
        // past its weak pointer; cancel what is armed so nothing keeps firing.
        std::vector<Clock::TimerId> armed;
        {
            std::lock_guard guard(mutex_);
            for (const auto& [name, queue] : queues_)
                if (queue->timer != 0) armed.push_back(queue->timer);
            armed.insert(armed.end(), retired_timers_.begin(), retired_timers_.end());
        }
        for (Clock::TimerId timer : armed) clock_->cancel(timer);
    }

    // ---- connections

    ConnectionId open_connection() {
        Guard guard(*this, "open a connection");
        const ConnectionId connection = next_id_++;
        auto pulls = std::make_unique<Consumer>();
        pulls->id = next_id_++;
        pulls->connection = connection;
        connections_.emplace(connection, pulls->id);
        consumers_.emplace(pulls->id, std::move(pulls));
        return connection;
    }

    void close_connection(ConnectionId connection) {
        Guard guard(*this, "close a connection");
        if (connections_.erase(connection) == 0) return;
        std::vector<std::uint64_t> owned;
        for (const auto& [id, consumer] : consumers_)
            if (consumer->connection == connection) owned.push_back(id);
        std::sort(owned.begin(), owned.end());
        for (std::uint64_t id : owned) close_consumer_locked(id);
        std::vector<std::shared_ptr<Queue>> exclusive;
        for (const auto& [name, queue] : queues_)
            if (queue->owner == connection) exclusive.push_back(queue);
        for (const auto& queue : exclusive) remove_queue(queue);
    }

    // ---- topology

    void declare(ConnectionId connection, const Topology& topology) {
        {
            Guard guard(*this, "declare a topology");
            require_open(connection, "declare a topology");
        }
        for (const ExchangeDeclaration& exchange : topology.exchanges()) declare_exchange(exchange);
        for (const QueueDeclaration& queue : topology.queues()) declare_queue(connection, queue);
        for (const BindingDeclaration& binding : topology.bindings()) bind(connection, binding);
    }

    void declare_exchange(const ExchangeDeclaration& asked) {
        Guard guard(*this, "declare an exchange");
        if (asked.name.empty())
            throw TopologyError("acemq: cannot declare the default exchange \"\": ACCESS_REFUSED - it always exists; "
                                "publish to it with exchange \"\" and the queue's name as routing key");
        if (asked.kind == ExchangeKind::headers)
            throw TopologyError("acemq: cannot declare exchange " + quoted(asked.name) +
                                " (headers): the inproc broker does not route headers exchanges; use a direct, "
                                "topic or fanout exchange, or run against RabbitMQ");
        if (auto found = exchanges_.find(asked.name); found != exchanges_.end()) {
            const ExchangeDeclaration& existing = found->second->declaration;
            std::vector<std::string> differences;
            if (existing.kind != asked.kind)
                differences.push_back("type: existing " + std::string(to_string(existing.kind)) + ", asked " +
                                      std::string(to_string(asked.kind)));
            compare_flag("durable", existing.durable, asked.durable, differences);
            compare_flag("auto-delete", existing.auto_delete, asked.auto_delete, differences);
            compare_arguments(existing.arguments, asked.arguments, differences);
            if (!differences.empty()) precondition_failed("exchange", asked.name, std::move(differences));
            return;
        }
        auto exchange = std::make_unique<Exchange>();
        exchange->declaration = asked;
        exchanges_.emplace(asked.name, std::move(exchange));
    }

    void declare_queue(ConnectionId connection, const QueueDeclaration& asked) {
        Guard guard(*this, "declare a queue");
        require_open(connection, "declare queue " + quoted(asked.name));
        if (asked.name.empty())
            throw TopologyError("acemq: cannot declare a queue without a name on the inproc broker: it does not "
                                "generate names; give the queue one");
        if (auto found = queues_.find(asked.name); found != queues_.end()) {
            Queue& queue = *found->second;
            require_access(queue, connection, "declare");
            const QueueDeclaration& existing = queue.declaration;
            std::vector<std::string> differences;
            if (existing.type != asked.type)
                differences.push_back("queue type: existing " + std::string(to_string(existing.type)) + ", asked " +
                                      std::string(to_string(asked.type)));
            compare_flag("durable", existing.durable, asked.durable, differences);
            compare_flag("exclusive", existing.exclusive, asked.exclusive, differences);
            compare_flag("auto-delete", existing.auto_delete, asked.auto_delete, differences);
            compare_arguments(existing.arguments, asked.arguments, differences);
            if (!differences.empty()) precondition_failed("queue", asked.name, std::move(differences));
            return;
        }
        auto queue = std::make_shared<Queue>();
        queue->declaration = asked;
        if (asked.exclusive) queue->owner = connection;
        read_dead_letter_arguments(*queue);
        queues_.emplace(asked.name, std::move(queue));
    }

    void bind(ConnectionId connection, const BindingDeclaration& asked) {
        Guard guard(*this, "bind a queue");
        const std::string what = "bind queue " + quoted(asked.queue) + " to exchange " + quoted(asked.exchange);
        require_open(connection, what);
        if (asked.exchange.empty())
            throw TopologyError("acemq: cannot " + what +
                                ": ACCESS_REFUSED - the default exchange cannot be bound; every queue is reachable "
                                "through it by its own name already");
        const auto exchange = exchanges_.find(asked.exchange);
        if (exchange == exchanges_.end())
            throw TopologyError("acemq: cannot " + what + ": NOT_FOUND - no exchange " + quoted(asked.exchange) +
                                " on inproc broker " + quoted(name_) + "; declare the exchange first");
        const auto queue = queues_.find(asked.queue);
        if (queue == queues_.end())
            throw TopologyError("acemq: cannot " + what + ": NOT_FOUND - no queue " + quoted(asked.queue) +
                                " on inproc broker " + quoted(name_) + "; declare the queue first");
        require_access(*queue->second, connection, "bind");
        Exchange& target = *exchange->second;
        Queue* bound = queue->second.get();
        for (const Binding& binding : target.bindings)
            if (binding.queue == bound && binding.routing_key == asked.routing_key && binding.arguments == asked.arguments)
                return;  // the same binding twice is one binding, as in RabbitMQ
        target.bindings.push_back(Binding{bound, asked.routing_key, asked.arguments});
        target.add_route(target.bindings.back());
    }

    // ---- publishing

    PublishResult publish(OutboundMessage message) {
        Guard guard(*this, "publish");
        if (message.exchange.empty()) {  // the default exchange: the hot path, one lookup
            const auto found = queues_.find(message.routing_key);
            if (found == queues_.end()) return not_routed(message.mandatory);
            enqueue(*found->second, Stored{inbound(std::move(message))});
            return PublishResult{true, true, {}};
        }
        const auto exchange = exchanges_.find(message.exchange);
        // RabbitMQ closes the channel with 404 and confirms nothing, so the publisher reports
        // a PublishError carrying the broker's sentence; the embedded broker says the same
        // (a refusal: here it is certain that nothing arrived), and its connection goes on.
        if (exchange == exchanges_.end())
            return PublishResult{false, true,
                                 "404 NOT_FOUND - no exchange '" + message.exchange + "' on inproc broker '" + name_ +
                                     "'; declare the exchange first",
                                 PublishResult::Unconfirmed::refused};
        routed_.clear();
        route(*exchange->second, message.routing_key, routed_);
        if (routed_.empty()) return not_routed(message.mandatory);
        Stored stored{inbound(std::move(message))};
        // Enqueueing cannot route again into routed_: dead-lettering routes into its own list.
        for (std::size_t i = 0; i + 1 < routed_.size(); ++i) enqueue(*routed_[i], Stored(stored));
        enqueue(*routed_.back(), std::move(stored));
        return PublishResult{true, true, {}};
    }

    // ---- consuming

    std::unique_ptr<Subscription> consume(ConnectionId connection, std::string_view queue_name, const ConsumeSpec& spec,
                                          DeliverFn deliver);

    std::optional<Delivery> pull(ConnectionId connection, std::string_view queue_name) {
        Guard guard(*this, "pull");
        const std::shared_ptr<Queue> queue = existing_queue(connection, queue_name, "pull from");
        if (queue->ttl) expire_due(*queue);
        if (queue->ready.empty()) {
            sync_timer(*queue);
            return std::nullopt;
        }
        Consumer& pulls = *consumers_.at(connections_.at(connection));
        Stored stored = queue->ready.pop_front();
        sync_timer(*queue);
        InboundMessage copy = stored.message;
        const std::uint64_t tag = hand_out(pulls, queue, std::move(stored));
        return Delivery(std::move(copy), *this, tag);
    }

    void stop(std::uint64_t consumer) {
        Guard guard(*this, "stop a subscription");
        if (auto found = consumers_.find(consumer); found != consumers_.end()) stop_consumer(*found->second);
    }

    void close_consumer(std::uint64_t consumer) {
        Guard guard(*this, "close a subscription");
        close_consumer_locked(consumer);
    }

    void ack(std::uint64_t tag) override { settle(tag, Settlement::ack); }
    void nack(std::uint64_t tag, bool requeue) override { settle(tag, requeue ? Settlement::requeue : Settlement::reject); }

    // ---- inspection

    std::uint64_t queue_depth(ConnectionId connection, std::string_view queue_name) {
        Guard guard(*this, "ask a queue's depth");
        return existing_queue(connection, queue_name, "ask the depth of")->ready.size();
    }

    bool queue_exists(ConnectionId connection, std::string_view queue_name) {
        Guard guard(*this, "ask whether a queue exists");
        require_open(connection, "ask whether queue " + quoted(queue_name) + " exists");
        const auto found = queues_.find(queue_name);
        if (found == queues_.end()) return false;
        require_access(*found->second, connection, "inspect");
        return true;
    }

    void delete_queue(ConnectionId connection, std::string_view queue_name) {
        Guard guard(*this, "delete a queue");
        require_open(connection, "delete queue " + quoted(queue_name));
        const auto found = queues_.find(queue_name);
        if (found == queues_.end()) return;
        require_access(*found->second, connection, "delete");
        remove_queue(std::shared_ptr<Queue>(found->second));
    }

    Broker& owner_;
    const std::string name_;
    const std::shared_ptr<Clock> clock_;

private:
    enum class Settlement { ack, requeue, reject };

    static PublishResult not_routed(bool mandatory) {
        if (mandatory) return PublishResult{true, false, "312 NO_ROUTE"};
        return PublishResult{true, true, {}};  // RabbitMQ drops it and confirms: no return without mandatory
    }

    void require_open(ConnectionId connection, const std::string& what) const {
        if (!connections_.contains(connection))
            throw Error("acemq: cannot " + what + ": the connection to inproc broker " + quoted(name_) +
                        " is closed; open a new transport");
    }

    void require_access(const Queue& queue, ConnectionId connection, std::string_view action) const {
        if (queue.owner != 0 && queue.owner != connection)
            throw Error("acemq: cannot " + std::string(action) + " queue " + quoted(queue.declaration.name) +
                        ": RESOURCE_LOCKED - it is exclusive to the connection that declared it; use that "
                        "connection, or declare a queue that is not exclusive");
    }

    const std::shared_ptr<Queue>& existing_queue(ConnectionId connection, std::string_view name, std::string_view action) {
        require_open(connection, std::string(action) + " queue " + quoted(name));
        const auto found = queues_.find(name);
        if (found == queues_.end())
            throw Error("acemq: cannot " + std::string(action) + " queue " + quoted(name) +
                        ": NOT_FOUND - no such queue on inproc broker " + quoted(name_) + "; declare it first");
        require_access(*found->second, connection, action);
        return found->second;
    }

    void read_dead_letter_arguments(Queue& queue) {
        const FieldTable& arguments = queue.declaration.arguments;
        const std::string& name = queue.declaration.name;
        auto invalid = [&](std::string_view argument, const FieldValue& value, std::string_view must) {
            return TopologyError("acemq: cannot declare queue " + quoted(name) + ": PRECONDITION_FAILED - invalid " +
                                 std::string(argument) + " " + value.to_string() + ": it must be " + std::string(must));
        };
        if (const auto ttl = arguments.find(argument::message_ttl); ttl != arguments.end()) {
            const auto milliseconds = ttl->second.as_integer();
            if (!is_integer(ttl->second) || !milliseconds || *milliseconds < 0)
                throw invalid(argument::message_ttl, ttl->second, "a non-negative integer of milliseconds");
            queue.ttl = std::chrono::milliseconds(*milliseconds);
        }
        if (const auto exchange = arguments.find(argument::dead_letter_exchange); exchange != arguments.end()) {
            const auto* text = std::get_if<std::string>(&exchange->second.get());
            if (text == nullptr) throw invalid(argument::dead_letter_exchange, exchange->second, "an exchange name");
            queue.dead_letter_exchange = *text;
        }
        if (const auto key = arguments.find(argument::dead_letter_routing_key); key != arguments.end()) {
            const auto* text = std::get_if<std::string>(&key->second.get());
            if (text == nullptr) throw invalid(argument::dead_letter_routing_key, key->second, "a routing key");
            if (!queue.dead_letter_exchange)
                throw invalid(argument::dead_letter_routing_key, key->second,
                              "given together with x-dead-letter-exchange");
            queue.dead_letter_routing_key = *text;
        }
    }

    // Appends every queue `exchange` routes `key` to, each once.
    void route(const Exchange& exchange, std::string_view key, std::vector<Queue*>& into) {
        const std::uint64_t mark = ++route_epoch_;
        auto add = [&](Queue* queue) {
            if (queue->route_mark == mark) return;
            queue->route_mark = mark;
            into.push_back(queue);
        };
        switch (exchange.declaration.kind) {
            case ExchangeKind::direct:
                if (const auto found = exchange.direct.find(key); found != exchange.direct.end())
                    for (Queue* queue : found->second) add(queue);
                break;
            case ExchangeKind::topic: exchange.topic.match(key, add); break;
            case ExchangeKind::fanout:
                for (Queue* queue : exchange.fanout) add(queue);
                break;
            case ExchangeKind::headers: break;  // refused at declare
        }
    }

    void enqueue(Queue& queue, Stored&& stored) {
        if (queue.deleted) return;
        if (queue.ttl) stored.enqueued = clock_->now();
        queue.ready.push_back(std::move(stored));
        if (!queue.consumers.empty()) dispatch(queue);
        // After dispatch: a message with TTL 0 still goes to a consumer that has room.
        if (queue.ttl) {
            expire_due(queue);
            sync_timer(queue);
        }
    }

    // After messages came back to a queue or a consumer got room: expire, deliver, re-arm.
    void refresh(Queue& queue) {
        if (queue.deleted) return;
        if (queue.ttl) expire_due(queue);
        dispatch(queue);
        sync_timer(queue);
    }

    void dispatch(Queue& queue) {
        while (!queue.ready.empty() && !queue.consumers.empty()) {
            const std::size_t count = queue.consumers.size();
            Consumer* chosen = nullptr;
            for (std::size_t step = 0; step < count && chosen == nullptr; ++step) {
                const std::size_t at = (queue.next_consumer + step) % count;
                if (queue.consumers[at]->has_room()) {
                    chosen = queue.consumers[at];
                    queue.next_consumer = (at + 1) % count;
                }
            }
            if (chosen == nullptr) return;
            Stored stored = queue.ready.pop_front();
            InboundMessage copy = stored.message;
            const std::uint64_t tag = hand_out(*chosen, chosen->queue, std::move(stored));
            ++deliveries_in_progress;
            try {
                chosen->deliver(Delivery(std::move(copy), *this, tag));
            } catch (...) {
                // A DeliverFn must not throw (it only queues), and this may be some other
                // thread's publish: keep the error from it, stop the broken consumer, and
                // leave its delivery to come back when its subscription closes.
                stop_consumer(*chosen);
            }
            --deliveries_in_progress;
        }
    }

    std::uint64_t hand_out(Consumer& consumer, const std::shared_ptr<Queue>& queue, Stored&& stored) {
        const std::uint64_t sequence = consumer.next_sequence++;
        consumer.unacked.push_back(Unacked{sequence, queue, std::move(stored), false});
        ++consumer.outstanding;
        return consumer.id << sequence_bits | sequence;
    }

    void settle(std::uint64_t tag, Settlement settlement) {
        Guard guard(*this, settlement == Settlement::ack ? "ack" : "nack");
        const auto found = consumers_.find(tag >> sequence_bits);
        Unacked* entry = found == consumers_.end() ? nullptr : found->second->find(tag & sequence_mask);
        if (entry == nullptr || entry->settled)
            throw Error("acemq: cannot " + std::string(settlement == Settlement::ack ? "ack" : "nack") + " delivery " +
                        std::to_string(tag) + " on inproc broker " + quoted(name_) +
                        ": PRECONDITION_FAILED - unknown delivery tag; its subscription or transport was closed, "
                        "which handed it back to its queue. Settle deliveries before closing what they came from");
        Consumer& consumer = *found->second;
        entry->settled = true;
        --consumer.outstanding;
        Stored stored = std::move(entry->stored);
        std::shared_ptr<Queue> queue = std::move(entry->queue);
        consumer.trim();
        if (settlement == Settlement::requeue && !queue->deleted) {
            stored.message.redelivered = true;
            queue->ready.push_front(std::move(stored));
        } else if (settlement == Settlement::reject && !queue->deleted) {
            dead_letter(*queue, std::move(stored), "rejected");
        }
        if (queue != consumer.queue) refresh(*queue);  // a pull: its queue may have got it back
        if (consumer.queue) refresh(*consumer.queue);  // the consumer has room again
    }

    // Republishes through the queue's dead-letter exchange, or drops without one.
    void dead_letter(Queue& from, Stored&& stored, std::string_view reason) {
        if (!from.dead_letter_exchange) return;
        InboundMessage& message = stored.message;
        record_death(message, from.declaration.name, reason);
        message.exchange = *from.dead_letter_exchange;
        if (from.dead_letter_routing_key) message.routing_key = *from.dead_letter_routing_key;
        message.redelivered = false;
        std::vector<Queue*> targets;
        if (message.exchange.empty()) {
            if (const auto found = queues_.find(message.routing_key); found != queues_.end())
                targets.push_back(found->second.get());
        } else if (const auto exchange = exchanges_.find(message.exchange); exchange != exchanges_.end()) {
            route(*exchange->second, message.routing_key, targets);
        }  // a dead-letter exchange that does not exist drops the message, as in RabbitMQ
        if (reason != "rejected")
            std::erase_if(targets, [&](Queue* target) { return dead_letter_cycle(message, target->declaration.name); });
        if (targets.empty()) return;
        for (std::size_t i = 0; i + 1 < targets.size(); ++i) enqueue(*targets[i], Stored(stored));
        enqueue(*targets.back(), std::move(stored));
    }

    void expire_due(Queue& queue) {
        if (queue.ready.empty()) return;
        const Clock::time_point now = clock_->now();
        while (!queue.ready.empty() && queue.ready.front().enqueued + *queue.ttl <= now)
            dead_letter(queue, queue.ready.pop_front(), "expired");
    }

    // Keeps one timer armed for the head's expiry, when the queue has a TTL and a head. A
    // timer armed earlier than needed stays: it fires, finds nothing due and re-arms.
    void sync_timer(Queue& queue) {
        if (!queue.ttl) return;
        if (queue.ready.empty() || queue.deleted) {
            retire_timer(queue);
            return;
        }
        const Clock::time_point deadline = queue.ready.front().enqueued + *queue.ttl;
        if (queue.timer != 0 && queue.timer_deadline <= deadline) return;
        retire_timer(queue);
        const std::uint64_t generation = ++queue.timer_generation;
        std::weak_ptr<Broker> broker = owner_.weak_from_this();
        std::weak_ptr<Queue> target = queue.weak_from_this();
        queue.timer = clock_->call_at(deadline, [broker = std::move(broker), target = std::move(target), generation] {
            // The broker may be gone, or going: then there is nothing left to expire.
            if (const std::shared_ptr<Broker> alive = broker.lock()) alive->impl_->on_timer(target, generation);
        });
        queue.timer_deadline = deadline;
    }

    void retire_timer(Queue& queue) {
        if (queue.timer == 0) return;
        retired_timers_.push_back(queue.timer);
        queue.timer = 0;
        ++queue.timer_generation;
    }

public:
    void on_timer(const std::weak_ptr<Queue>& target, std::uint64_t generation) {
        Guard guard(*this, "expire messages");
        const std::shared_ptr<Queue> queue = target.lock();
        if (!queue || queue->deleted || queue->timer_generation != generation) return;  // superseded
        queue->timer = 0;
        expire_due(*queue);
        sync_timer(*queue);
    }

private:
    void stop_consumer(Consumer& consumer) {
        if (!consumer.active) return;
        consumer.active = false;
        Queue& queue = *consumer.queue;
        std::erase(queue.consumers, &consumer);
        queue.next_consumer = 0;
        if (queue.declaration.auto_delete && queue.had_consumer && queue.consumers.empty() && !queue.deleted)
            remove_queue(consumer.queue);
    }

    void close_consumer_locked(std::uint64_t id) {
        const auto found = consumers_.find(id);
        if (found == consumers_.end()) return;
        const std::unique_ptr<Consumer> consumer = std::move(found->second);
        consumers_.erase(found);
        stop_consumer(*consumer);
        // Back to the head of their queues, last first, so they stand in the order they
        // were handed out.
        std::vector<std::shared_ptr<Queue>> touched;
        for (std::size_t i = consumer->unacked.size(); i-- > 0;) {
            Unacked& entry = consumer->unacked[i];
            if (entry.settled || entry.queue->deleted) continue;
            entry.stored.message.redelivered = true;
            entry.queue->ready.push_front(std::move(entry.stored));
            if (std::find(touched.begin(), touched.end(), entry.queue) == touched.end()) touched.push_back(entry.queue);
        }
        for (const auto& queue : touched) refresh(*queue);
    }

    void remove_queue(std::shared_ptr<Queue> queue) {
        queue->deleted = true;
        queues_.erase(queue->declaration.name);
        for (Consumer* consumer : queue->consumers) consumer->active = false;
        queue->consumers.clear();
        queue->ready.clear();
        retire_timer(*queue);
        for (auto exchange = exchanges_.begin(); exchange != exchanges_.end();) {
            Exchange& from = *exchange->second;
            const std::size_t removed =
                std::erase_if(from.bindings, [&](const Binding& binding) { return binding.queue == queue.get(); });
            if (removed > 0) from.rebuild_routes();
            // RabbitMQ deletes an auto-delete exchange when its last binding goes.
            if (removed > 0 && from.bindings.empty() && from.declaration.auto_delete) exchange = exchanges_.erase(exchange);
            else ++exchange;
        }
    }

    std::mutex mutex_;
    StringMap<std::unique_ptr<Exchange>> exchanges_;
    StringMap<std::shared_ptr<Queue>> queues_;
    std::unordered_map<std::uint64_t, std::unique_ptr<Consumer>> consumers_;
    std::unordered_map<ConnectionId, std::uint64_t> connections_;  // → the consumer id of its pulls
    std::uint64_t next_id_ = 1;
    std::uint64_t route_epoch_ = 0;
    std::vector<Queue*> routed_;  // publish's routing result, kept to reuse its memory
    std::vector<Clock::TimerId> retired_timers_;
};

// ---------------------------------------------------------------------------------------

class Broker::ConsumerSubscription final : public Subscription {
public:
    ConsumerSubscription(std::shared_ptr<Broker> broker, std::uint64_t consumer)
        : broker_(std::move(broker)), consumer_(consumer) {}

    ~ConsumerSubscription() override {
        try {
            close();
        } catch (const Error&) {
            // Destroyed inside a DeliverFn, where the broker refuses calls: the consumer
            // stays until its connection closes, which hands its deliveries back.
        }
    }

    void stop() override { broker_->impl_->stop(consumer_); }
    void close() override { broker_->impl_->close_consumer(consumer_); }

private:
    std::shared_ptr<Broker> broker_;  // deliveries settle through it, so it must outlive them here
    std::uint64_t consumer_;
};

std::unique_ptr<Subscription> Broker::Impl::consume(ConnectionId connection, std::string_view queue_name,
                                                    const ConsumeSpec& spec, DeliverFn deliver) {
    Guard guard(*this, "consume");
    const std::shared_ptr<Queue> queue = existing_queue(connection, queue_name, "consume from");
    if (!deliver)
        throw InvalidArgument("acemq: cannot consume from queue " + quoted(queue_name) +
                              " without a DeliverFn; pass the function that queues deliveries");
    if (!spec.tag.empty())
        for (const auto& [id, other] : consumers_)
            if (other->connection == connection && other->tag == spec.tag)
                throw Error("acemq: cannot consume from queue " + quoted(queue_name) + ": NOT_ALLOWED - consumer tag " +
                            quoted(spec.tag) + " is in use on this connection; pick another or leave it empty");
    auto consumer = std::make_unique<Consumer>();
    consumer->id = next_id_++;
    consumer->connection = connection;
    consumer->queue = queue;
    consumer->tag = spec.tag;
    consumer->prefetch = spec.prefetch;
    consumer->deliver = std::move(deliver);
    consumer->active = true;
    auto subscription = std::make_unique<ConsumerSubscription>(owner_.shared_from_this(), consumer->id);
    queue->consumers.push_back(consumer.get());
    queue->had_consumer = true;
    consumers_.emplace(consumer->id, std::move(consumer));
    refresh(*queue);
    return subscription;
}

// ---------------------------------------------------------------------------------------

std::shared_ptr<Broker> broker(std::string_view name, std::shared_ptr<Clock> clock) {
    std::shared_ptr<Broker> found;  // declared before the lock: if it is the last owner, it dies unlocked
    Registry& known = registry();
    std::lock_guard guard(known.lock);
    if (const auto entry = known.brokers.find(name); entry != known.brokers.end()) found = entry->second.lock();
    if (found) {
        if (clock && clock != found->clock())
            throw InvalidArgument("acemq: inproc broker " + quoted(name) +
                                  " already exists with another clock; pass no clock to share it, or use another name");
        return found;
    }
    auto made = std::make_shared<Broker>(Broker::Key{}, std::string(name), clock ? std::move(clock) : system_clock());
    known.brokers.insert_or_assign(std::string(name), made);
    return made;
}

Broker::Broker(Key, std::string name, std::shared_ptr<Clock> clock)
    : impl_(std::make_unique<Impl>(*this, std::move(name), std::move(clock))) {}

Broker::~Broker() {
    {
        Registry& known = registry();
        std::lock_guard guard(known.lock);
        // A broker of the same name made since this one's last owner let go stays listed.
        if (const auto entry = known.brokers.find(impl_->name_); entry != known.brokers.end() && entry->second.expired())
            known.brokers.erase(entry);
    }
    impl_.reset();
}

const std::string& Broker::name() const noexcept { return impl_->name_; }
const std::shared_ptr<Clock>& Broker::clock() const noexcept { return impl_->clock_; }
Broker::ConnectionId Broker::open_connection() { return impl_->open_connection(); }
void Broker::close_connection(ConnectionId connection) { impl_->close_connection(connection); }
void Broker::declare(ConnectionId connection, const Topology& topology) { impl_->declare(connection, topology); }
void Broker::declare_exchange(const ExchangeDeclaration& exchange) { impl_->declare_exchange(exchange); }
void Broker::declare_queue(ConnectionId connection, const QueueDeclaration& queue) { impl_->declare_queue(connection, queue); }
void Broker::bind(ConnectionId connection, const BindingDeclaration& binding) { impl_->bind(connection, binding); }
PublishResult Broker::publish(OutboundMessage message) { return impl_->publish(std::move(message)); }

std::unique_ptr<Subscription> Broker::consume(ConnectionId connection, std::string_view queue, const ConsumeSpec& spec,
                                              DeliverFn deliver) {
    return impl_->consume(connection, queue, spec, std::move(deliver));
}

std::optional<Delivery> Broker::pull(ConnectionId connection, std::string_view queue) { return impl_->pull(connection, queue); }
std::uint64_t Broker::queue_depth(ConnectionId connection, std::string_view queue) {
    return impl_->queue_depth(connection, queue);
}
bool Broker::queue_exists(ConnectionId connection, std::string_view queue) { return impl_->queue_exists(connection, queue); }
void Broker::delete_queue(ConnectionId connection, std::string_view queue) { impl_->delete_queue(connection, queue); }

}  // namespace acemq::inproc
