#include <acemq/topology_file.hpp>

#include <cstddef>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/naming.hpp>
#include <acemq/retry.hpp>
#include <acemq/value.hpp>
#include "field_json.hpp"

namespace acemq {

namespace {

// How a value read from the file is shown in an error: what the reader would recognise.
std::string shown(const Value& value) {
    switch (value.kind()) {
    case Value::Kind::null: return "null";
    case Value::Kind::boolean: return value.as_bool() ? "true" : "false";
    case Value::Kind::string: return "the text " + json_quoted(value.as_string());
    case Value::Kind::array: return "an array";
    case Value::Kind::map: return "an object";
    default: {
        const std::vector<std::byte> text = JsonCodec{}.encode(value);
        return "the number " + std::string(reinterpret_cast<const char*>(text.data()), text.size());
    }
    }
}

// An object of the file with its fields checked: each a known name, none given twice.
class Object {
public:
    const Value* find(std::string_view name) const {
        for (const auto& [key, value] : fields_)
            if (key == name) return value;
        return nullptr;
    }
    std::vector<std::pair<std::string, const Value*>> fields_;
};

class Reader {
public:
    explicit Reader(std::string_view source) : source_(source) {}

    [[noreturn]] void fail(const std::string& where, std::string_view what) const {
        throw TopologyError("acemq: " + source_ + ": " + where + ": " + std::string(what));
    }

    Object object(const Value& value, const std::string& where, std::initializer_list<std::string_view> known) const {
        if (value.kind() != Value::Kind::map) fail(where, "expected an object, found " + shown(value));
        std::string names;
        for (std::string_view name : known) names += (names.empty() ? "" : ", ") + std::string(name);
        Object checked;
        for (const auto& [key, field] : value.as_map()) {
            const std::string& name = key.as_string();
            bool is_known = false;
            for (std::string_view candidate : known) is_known = is_known || candidate == name;
            if (!is_known) fail(where, "unknown field " + json_quoted(name) + "; the fields here are " + names);
            if (checked.find(name)) fail(where, "field " + json_quoted(name) + " is given twice");
            checked.fields_.emplace_back(name, &field);
        }
        return checked;
    }

    const Value::Array& array(const Value& value, const std::string& where) const {
        if (value.kind() != Value::Kind::array) fail(where, "expected an array, found " + shown(value));
        return value.as_array();
    }

    std::optional<std::string> text(const Object& object, const std::string& where, std::string_view name,
                                    bool required) const {
        const Value* value = object.find(name);
        if (value == nullptr) {
            if (required) fail(where, "field " + json_quoted(name) + " is missing");
            return std::nullopt;
        }
        if (value->kind() != Value::Kind::string)
            fail(where + "." + std::string(name), "expected text, found " + shown(*value));
        return value->as_string();
    }

    bool flag(const Object& object, const std::string& where, std::string_view name, bool absent) const {
        const Value* value = object.find(name);
        if (value == nullptr) return absent;
        if (value->kind() != Value::Kind::boolean)
            fail(where + "." + std::string(name), "expected true or false, found " + shown(*value));
        return value->as_bool();
    }

    FieldTable arguments(const Object& object, const std::string& where) const {
        const Value* value = object.find("arguments");
        if (value == nullptr) return {};
        const std::string at = where + ".arguments";
        if (value->kind() != Value::Kind::map) fail(at, "expected an object, found " + shown(*value));
        FieldTable table;
        for (const auto& [key, item] : value->as_map()) {
            const std::string& name = key.as_string();
            if (!table.emplace(name, detail::field_from_json(item)).second)
                fail(at, "argument " + json_quoted(name) + " is given twice");
        }
        return table;
    }

    // Runs one call of the builder, reporting what it refuses at `where`.
    template <class Call>
    void build(const std::string& where, Call&& call) const {
        try {
            call();
        } catch (const Error& refused) {
            fail(where, without_prefix(refused.what()));
        }
    }

private:
    std::string source_;
};

template <class Kind>
Kind named_kind(const Reader& reader, const std::string& where, const std::string& name,
                std::initializer_list<Kind> kinds) {
    std::string names;
    for (Kind kind : kinds) {
        if (to_string(kind) == name) return kind;
        names += (names.empty() ? "" : ", ") + std::string(to_string(kind));
    }
    reader.fail(where, json_quoted(name) + " is not one of " + names);
}

// "queues[1] (\"orders.new\")": where a declaration is, and which, when it has a readable name.
std::string position(std::string_view list, std::size_t index, const Value& item, std::string_view name_field) {
    std::string where = std::string(list) + "[" + std::to_string(index) + "]";
    if (item.kind() == Value::Kind::map)
        if (const Value* name = item.find(name_field); name != nullptr && name->kind() == Value::Kind::string)
            where += " (" + json_quoted(name->as_string()) + ")";
    return where;
}

const Value::Array* list_of(const Reader& reader, const Object& file, std::string_view name) {
    const Value* value = file.find(name);
    return value == nullptr ? nullptr : &reader.array(*value, std::string(name));
}

void read_existing(const Reader& reader, const Object& file, std::string_view list, Topology& topology) {
    const Value::Array* names = list_of(reader, file, list);
    if (names == nullptr) return;
    for (std::size_t i = 0; i < names->size(); ++i) {
        const std::string where = std::string(list) + "[" + std::to_string(i) + "]";
        const Value& name = (*names)[i];
        if (name.kind() != Value::Kind::string) reader.fail(where, "expected a name, found " + shown(name));
        reader.build(where, [&] {
            if (list == "existingQueues")
                topology.existing_queue(name.as_string());
            else
                topology.existing_exchange(name.as_string());
        });
    }
}

void read_exchange(const Reader& reader, const Value& item, const std::string& where, Topology& topology) {
    const Object exchange = reader.object(item, where, {"name", "type", "durable", "autoDelete", "arguments"});
    const std::string name = *reader.text(exchange, where, "name", true);
    const ExchangeKind kind =
        named_kind(reader, where + ".type", *reader.text(exchange, where, "type", true),
                   {ExchangeKind::direct, ExchangeKind::topic, ExchangeKind::fanout, ExchangeKind::headers});
    ExchangeOptions options{.durable = reader.flag(exchange, where, "durable", true),
                            .auto_delete = reader.flag(exchange, where, "autoDelete", false),
                            .arguments = reader.arguments(exchange, where)};
    reader.build(where, [&] { topology.exchange(name, kind, std::move(options)); });
}

void read_queue(const Reader& reader, const Value& item, const std::string& where, Topology& topology) {
    const Object queue = reader.object(
        item, where, {"name", "type", "durable", "exclusive", "autoDelete", "deadLetter", "retry", "arguments"});
    const std::string name = *reader.text(queue, where, "name", true);
    QueueOptions options{.dead_letter = reader.flag(queue, where, "deadLetter", false),
                         .durable = reader.flag(queue, where, "durable", true),
                         .exclusive = reader.flag(queue, where, "exclusive", false),
                         .auto_delete = reader.flag(queue, where, "autoDelete", false),
                         .arguments = reader.arguments(queue, where)};
    if (const auto type = reader.text(queue, where, "type", false))
        options.type =
            named_kind(reader, where + ".type", *type, {QueueType::quorum, QueueType::classic, QueueType::stream});
    if (const auto retry = reader.text(queue, where, "retry", false))
        reader.build(where + ".retry", [&] { options.retry = parse_retry_policy(*retry); });
    reader.build(where, [&] { topology.queue(name, std::move(options)); });
}

void read_binding(const Reader& reader, const Value& item, const std::string& where, Topology& topology) {
    const Object binding = reader.object(item, where, {"queue", "exchange", "routingKey", "arguments"});
    const std::string queue = *reader.text(binding, where, "queue", true);
    const std::string exchange = *reader.text(binding, where, "exchange", true);
    const std::string routing_key = reader.text(binding, where, "routingKey", false).value_or("");
    FieldTable arguments = reader.arguments(binding, where);
    // Validated binding by binding, so that a binding to something undeclared is named by
    // its place in the file.
    reader.build(where, [&] {
        topology.bind(queue, exchange, routing_key, std::move(arguments));
        topology.validate();
    });
}

std::string quoted_value(const FieldValue& value, std::string_view name) {
    const std::vector<std::byte> text =
        JsonCodec{}.encode(detail::field_to_json(value, "argument", name, "a topology file cannot hold (it is JSON)"));
    return std::string(reinterpret_cast<const char*>(text.data()), text.size());
}

// `, "arguments": {...}` for the arguments other than `left_out`, or nothing.
std::string arguments_text(const FieldTable& arguments, std::string_view left_out = {}) {
    std::string entries;
    for (const auto& [name, value] : arguments) {
        if (name == left_out) continue;
        entries += (entries.empty() ? "" : ", ") + json_quoted(name) + ": " + quoted_value(value, name);
    }
    return entries.empty() ? "" : ", \"arguments\": {" + entries + "}";
}

std::string names_text(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& name : names) out += (out.empty() ? "" : ", ") + json_quoted(name);
    return "[" + out + "]";
}

void add_list(std::string& out, std::string_view name, const std::vector<std::string>& lines) {
    if (out.size() > 2) out += ",\n";
    out += "  " + json_quoted(name) + ": [";
    for (std::size_t i = 0; i < lines.size(); ++i) out += (i == 0 ? "\n    " : ",\n    ") + lines[i];
    out += lines.empty() ? "]" : "\n  ]";
}

}  // namespace

Topology parse_topology_file(std::string_view text, std::string_view source) {
    const Reader reader(source);
    Value document;
    try {
        document = JsonCodec{}.decode(std::as_bytes(std::span(text.data(), text.size())), content_types::json);
    } catch (const DecodeError& invalid) {
        reader.fail("the file", without_prefix(invalid.what()));
    }
    const Object file =
        reader.object(document, "the file", {"exchanges", "queues", "bindings", "existingExchanges", "existingQueues"});
    Topology topology;
    read_existing(reader, file, "existingExchanges", topology);
    read_existing(reader, file, "existingQueues", topology);
    if (const Value::Array* exchanges = list_of(reader, file, "exchanges"))
        for (std::size_t i = 0; i < exchanges->size(); ++i)
            read_exchange(reader, (*exchanges)[i], position("exchanges", i, (*exchanges)[i], "name"), topology);
    if (const Value::Array* queues = list_of(reader, file, "queues"))
        for (std::size_t i = 0; i < queues->size(); ++i)
            read_queue(reader, (*queues)[i], position("queues", i, (*queues)[i], "name"), topology);
    if (const Value::Array* bindings = list_of(reader, file, "bindings"))
        for (std::size_t i = 0; i < bindings->size(); ++i)
            read_binding(reader, (*bindings)[i], position("bindings", i, (*bindings)[i], "queue"), topology);
    return topology;
}

Topology read_topology_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in || in.bad())
        throw TopologyError("acemq: cannot read topology file " + path + "; check that it exists and is readable");
    return parse_topology_file(text.str(), path);
}

std::string print_topology_file(const Topology& topology) {
    std::vector<std::string> exchanges, queues, bindings;
    for (const ExchangeDeclaration& exchange : topology.exchanges()) {
        std::string line =
            "{\"name\": " + json_quoted(exchange.name) + ", \"type\": " + json_quoted(to_string(exchange.kind));
        if (!exchange.durable) line += ", \"durable\": false";
        if (exchange.auto_delete) line += ", \"autoDelete\": true";
        exchanges.push_back(line + arguments_text(exchange.arguments) + "}");
    }
    for (const QueueDeclaration& queue : topology.queues()) {
        // The type is named, and x-queue-type left out: the file's reader adds it back for
        // the type, and refuses both at once.
        std::string line =
            "{\"name\": " + json_quoted(queue.name) + ", \"type\": " + json_quoted(to_string(queue.type));
        if (!queue.durable) line += ", \"durable\": false";
        if (queue.exclusive) line += ", \"exclusive\": true";
        if (queue.auto_delete) line += ", \"autoDelete\": true";
        queues.push_back(line + arguments_text(queue.arguments, argument::queue_type) + "}");
    }
    for (const BindingDeclaration& binding : topology.bindings())
        bindings.push_back(
            "{\"queue\": " + json_quoted(binding.queue) + ", \"exchange\": " + json_quoted(binding.exchange) +
            ", \"routingKey\": " + json_quoted(binding.routing_key) + arguments_text(binding.arguments) + "}");
    std::string out = "{\n";
    add_list(out, "exchanges", exchanges);
    add_list(out, "queues", queues);
    add_list(out, "bindings", bindings);
    if (!topology.existing_exchanges().empty())
        out += ",\n  \"existingExchanges\": " + names_text(topology.existing_exchanges());
    if (!topology.existing_queues().empty())
        out += ",\n  \"existingQueues\": " + names_text(topology.existing_queues());
    return out + "\n}\n";
}

}  // namespace acemq
