#include <acemq/topology.hpp>

#include <algorithm>
#include <ostream>

#include <acemq/error.hpp>
#include <acemq/naming.hpp>

namespace acemq {

namespace {

constexpr std::size_t longest_name = 255;  // AMQP short string

void check_name(std::string_view what, std::string_view name) {
    if (name.empty()) throw InvalidArgument("acemq: " + std::string(what) + " name is empty; give it a name");
    if (name.size() > longest_name)
        throw InvalidArgument("acemq: " + std::string(what) + " name \"" + std::string(name.substr(0, 40)) +
                              "...\" is " + std::to_string(name.size()) + " bytes; AMQP allows at most 255");
    if (name.starts_with("amq."))
        throw InvalidArgument("acemq: " + std::string(what) + " name \"" + std::string(name) +
                              "\" starts with \"amq.\", which the broker reserves for itself");
}

// Largest exact unit, as the family writes stream retention: 7D, 1D, 90m, 2h, 45s.
std::string max_age_text(std::chrono::seconds age) {
    const auto seconds = age.count();
    if (seconds > 0 && seconds % 86400 == 0) return std::to_string(seconds / 86400) + "D";
    if (seconds > 0 && seconds % 3600 == 0) return std::to_string(seconds / 3600) + "h";
    if (seconds > 0 && seconds % 60 == 0) return std::to_string(seconds / 60) + "m";
    return std::to_string(seconds) + "s";
}

std::optional<QueueType> queue_type_named(std::string_view name) {
    if (name == "quorum") return QueueType::quorum;
    if (name == "classic") return QueueType::classic;
    if (name == "stream") return QueueType::stream;
    return std::nullopt;
}

QueueDeclaration plain_classic_queue(std::string name) {
    return QueueDeclaration{std::move(name), QueueType::classic, true, false, false, {}};
}

void add_existing(std::vector<std::string>& names, std::string_view name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

template <class Declaration>
Declaration* find_named(std::vector<Declaration>& declarations, std::string_view name) {
    auto it =
        std::find_if(declarations.begin(), declarations.end(), [&](const Declaration& d) { return d.name == name; });
    return it == declarations.end() ? nullptr : &*it;
}

QueueType resolve_queue_type(std::string_view name, const QueueOptions& options) {
    const bool quorum_impossible = options.exclusive || options.auto_delete || !options.durable;
    auto hand_written = options.arguments.find(argument::queue_type);
    if (hand_written != options.arguments.end()) {
        if (options.type)
            throw TopologyError("acemq: queue \"" + std::string(name) +
                                "\" asks for a type and also sets the x-queue-type argument; pick one");
        auto type = queue_type_named(hand_written->second.as_text().value_or(""));
        if (!type)
            throw TopologyError("acemq: queue \"" + std::string(name) + "\" sets x-queue-type to \"" +
                                hand_written->second.to_string() + "\"; use quorum, classic or stream");
        return *type;
    }
    if (!options.type) return quorum_impossible ? QueueType::classic : QueueType::quorum;
    if (*options.type != QueueType::classic && quorum_impossible)
        throw TopologyError("acemq: queue \"" + std::string(name) + "\" asks to be " +
                            std::string(to_string(*options.type)) +
                            " and also exclusive, auto-delete or transient; RabbitMQ only allows "
                            "those flags on classic queues, so drop the flag or the type");
    return *options.type;
}

}  // namespace

std::string_view to_string(ExchangeKind kind) noexcept {
    switch (kind) {
    case ExchangeKind::direct: return "direct";
    case ExchangeKind::topic: return "topic";
    case ExchangeKind::fanout: return "fanout";
    case ExchangeKind::headers: return "headers";
    }
    return "unknown";
}

std::string_view to_string(QueueType type) noexcept {
    switch (type) {
    case QueueType::quorum: return "quorum";
    case QueueType::classic: return "classic";
    case QueueType::stream: return "stream";
    }
    return "unknown";
}

void Topology::add_exchange(ExchangeDeclaration declaration, bool shared) {
    if (ExchangeDeclaration* existing = find_named(exchanges_, declaration.name)) {
        if (shared && *existing == declaration) return;
        throw TopologyError("acemq: exchange \"" + declaration.name + "\" is declared twice in one topology");
    }
    exchanges_.push_back(std::move(declaration));
}

void Topology::add_queue(QueueDeclaration declaration, bool shared) {
    if (QueueDeclaration* existing = find_named(queues_, declaration.name)) {
        if (shared && *existing == declaration) return;
        throw TopologyError("acemq: queue \"" + declaration.name + "\" is declared twice in one topology");
    }
    queues_.push_back(std::move(declaration));
}

void Topology::add_binding(BindingDeclaration declaration) {
    if (std::find(bindings_.begin(), bindings_.end(), declaration) == bindings_.end())
        bindings_.push_back(std::move(declaration));
}

void Topology::add_dead_letter_half(std::string_view queue) {
    add_exchange(ExchangeDeclaration{std::string(dead_letter_exchange), ExchangeKind::direct, true, false, {}}, true);
    for (std::string set_aside : {dead_letter_queue(queue), parked_queue(queue)}) {
        add_queue(plain_classic_queue(set_aside), true);
        add_binding(BindingDeclaration{set_aside, std::string(dead_letter_exchange), set_aside, {}});
    }
}

void Topology::add_retry_half(std::string_view queue, const RetryPolicy& policy) {
    const std::vector<std::chrono::milliseconds> rungs = policy.broker_rungs();
    if (rungs.empty()) return;
    add_exchange(ExchangeDeclaration{std::string(retry_exchange), ExchangeKind::direct, true, false, {}}, true);
    for (std::chrono::milliseconds delay : rungs) {
        std::string name = rung_queue(queue, delay);
        // Two delays within one second share a name, and so one rung: the first one's.
        if (find_named(queues_, name)) continue;
        QueueDeclaration rung = plain_classic_queue(std::move(name));
        rung.arguments = rung_args(queue, delay);
        add_queue(std::move(rung), true);
    }
    add_binding(BindingDeclaration{std::string(queue), std::string(retry_exchange), std::string(queue), {}});
}

Topology& Topology::exchange(std::string_view name, ExchangeKind kind, ExchangeOptions options) {
    check_name("exchange", name);
    add_exchange(ExchangeDeclaration{std::string(name), kind, options.durable, options.auto_delete,
                                     std::move(options.arguments)},
                 false);
    return *this;
}

Topology& Topology::queue(std::string_view name, QueueOptions options) {
    check_name("queue", name);
    QueueDeclaration declaration{std::string(name),   resolve_queue_type(name, options),
                                 options.durable,     options.exclusive,
                                 options.auto_delete, options.arguments};
    if (declaration.type == QueueType::stream && (options.dead_letter || options.retry))
        throw TopologyError("acemq: queue \"" + std::string(name) +
                            "\" is a stream and asks for dead letters or retry rungs, which a stream cannot "
                            "have (its messages never leave it); drop them: read_stream sets copies aside to " +
                            dead_letter_queue(name) + " and " + parked_queue(name) + " itself");
    if (options.dead_letter) {
        for (std::string_view clash : {argument::dead_letter_exchange, argument::dead_letter_routing_key}) {
            if (declaration.arguments.contains(clash))
                throw TopologyError("acemq: queue \"" + std::string(name) + "\" asks for dead_letter and also sets " +
                                    std::string(clash) + "; pick one");
        }
        declaration.arguments.merge(dead_letter_args(name));
    }
    if (declaration.type != QueueType::classic && !declaration.arguments.contains(argument::queue_type))
        declaration.arguments.emplace(std::string(argument::queue_type),
                                      FieldValue(acemq::to_string(declaration.type)));
    if (declaration.type == QueueType::stream) {
        declaration.durable = true;
        declaration.exclusive = false;
        declaration.auto_delete = false;
    }
    add_queue(std::move(declaration), false);
    if (options.dead_letter) add_dead_letter_half(name);
    if (options.retry) add_retry_half(name, *options.retry);
    return *this;
}

Topology& Topology::stream(std::string_view name, StreamOptions options) {
    FieldTable retention;
    if (options.max_age) {
        if (options.max_age->count() <= 0)
            throw InvalidArgument("acemq: stream \"" + std::string(name) + "\" max_age must be positive");
        retention.emplace(std::string(argument::max_age), FieldValue(max_age_text(*options.max_age)));
    }
    if (options.max_length_bytes)
        retention.emplace(std::string(argument::max_length_bytes), FieldValue(*options.max_length_bytes));
    if (options.max_segment_size_bytes)
        retention.emplace(std::string(argument::stream_max_segment_size_bytes),
                          FieldValue(*options.max_segment_size_bytes));
    return queue(name, QueueOptions{.type = QueueType::stream, .arguments = std::move(retention)});
}

Topology& Topology::bind(std::string_view queue, std::string_view exchange, std::string_view routing_key,
                         FieldTable arguments) {
    check_name("queue", queue);
    if (exchange.empty())
        throw TopologyError("acemq: queue \"" + std::string(queue) +
                            "\" cannot be bound to the default exchange, which already routes to every "
                            "queue by its name");
    add_binding(
        BindingDeclaration{std::string(queue), std::string(exchange), std::string(routing_key), std::move(arguments)});
    return *this;
}

Topology& Topology::existing_queue(std::string_view name) {
    check_name("queue", name);
    add_existing(existing_queues_, name);
    return *this;
}

Topology& Topology::existing_exchange(std::string_view name) {
    if (name.empty()) throw InvalidArgument("acemq: exchange name is empty; give it a name");
    add_existing(existing_exchanges_, name);
    return *this;
}

Topology& Topology::merge(const Topology& other) {
    for (const ExchangeDeclaration& declaration : other.exchanges_) add_exchange(declaration, true);
    for (const QueueDeclaration& declaration : other.queues_) add_queue(declaration, true);
    for (const BindingDeclaration& declaration : other.bindings_) add_binding(declaration);
    for (const std::string& name : other.existing_queues_) add_existing(existing_queues_, name);
    for (const std::string& name : other.existing_exchanges_) add_existing(existing_exchanges_, name);
    return *this;
}

const QueueDeclaration* Topology::find_queue(std::string_view name) const noexcept {
    auto it = std::find_if(queues_.begin(), queues_.end(), [&](const auto& d) { return d.name == name; });
    return it == queues_.end() ? nullptr : &*it;
}

const ExchangeDeclaration* Topology::find_exchange(std::string_view name) const noexcept {
    auto it = std::find_if(exchanges_.begin(), exchanges_.end(), [&](const auto& d) { return d.name == name; });
    return it == exchanges_.end() ? nullptr : &*it;
}

void Topology::validate() const {
    for (const BindingDeclaration& binding : bindings_) {
        if (!find_queue(binding.queue) && !contains(existing_queues_, binding.queue))
            throw TopologyError("acemq: a binding names queue \"" + binding.queue +
                                "\", which this topology does not declare; declare it, or name it with "
                                "existing_queue if its owner declares it");
        if (!find_exchange(binding.exchange) && !contains(existing_exchanges_, binding.exchange))
            throw TopologyError("acemq: queue \"" + binding.queue + "\" is bound to exchange \"" + binding.exchange +
                                "\", which this topology does not declare; declare it, or name it with "
                                "existing_exchange if its owner declares it");
    }
}

std::string Topology::to_string() const {
    try {
        validate();
    } catch (const TopologyError& invalid) {
        return std::string("Topology{invalid: ") + invalid.what() + "}";
    }
    std::string out = "Topology: " + std::to_string(exchanges_.size()) + " exchanges, " +
                      std::to_string(queues_.size()) + " queues, " + std::to_string(bindings_.size()) + " bindings\n";
    for (const ExchangeDeclaration& exchange : exchanges_) {
        out += "  declare exchange " + exchange.name + " (" + std::string(acemq::to_string(exchange.kind));
        if (!exchange.durable) out += ", transient";
        if (exchange.auto_delete) out += ", auto-delete";
        for (const auto& [name, value] : exchange.arguments) out += ", " + name + "=" + value.to_string();
        out += ")\n";
    }
    for (const QueueDeclaration& queue : queues_) {
        out += "  declare queue " + queue.name + " (" + (queue.durable ? "durable" : "transient") + ", " +
               std::string(acemq::to_string(queue.type));
        if (queue.auto_delete) out += ", auto-delete";
        if (queue.exclusive) out += ", exclusive";
        for (const auto& [name, value] : queue.arguments) {
            if (name != argument::queue_type) out += ", " + name + "=" + value.to_string();
        }
        out += ")\n";
    }
    for (const BindingDeclaration& binding : bindings_) {
        out += "  declare binding " + binding.queue + " (from " + binding.exchange + " on " + binding.routing_key;
        for (const auto& [name, value] : binding.arguments) out += ", " + name + "=" + value.to_string();
        out += ")\n";
    }
    for (const std::string& name : existing_exchanges_) {
        if (!find_exchange(name)) out += "  expect exchange " + name + " (declared by its owner)\n";
    }
    for (const std::string& name : existing_queues_) {
        if (!find_queue(name)) out += "  expect queue " + name + " (declared by its owner)\n";
    }
    return out;
}

std::ostream& operator<<(std::ostream& out, const Topology& topology) { return out << topology.to_string(); }

Topology consumer_topology(std::string_view queue, const RetryPolicy& policy) {
    check_name("queue", queue);
    Topology topology;
    topology.existing_queue(queue);
    topology.add_dead_letter_half(queue);
    topology.add_retry_half(queue, policy);
    return topology;
}

}  // namespace acemq
