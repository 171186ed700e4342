#include "inproc/declarations.hpp"

#include <algorithm>
#include <chrono>
#include <string_view>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/naming.hpp>
#include "inproc/quoted.hpp"

namespace acemq::inproc::detail {

namespace {

bool is_integer(const FieldValue& value) {
    return value.holds<std::int32_t>() || value.holds<std::int64_t>() || value.holds<std::uint64_t>();
}

std::string shown(const FieldValue* value) { return value == nullptr ? "(absent)" : value->to_string(); }
std::string shown(bool flag) { return flag ? "true" : "false"; }

void compare_arguments(const FieldTable& existing, const FieldTable& asked, std::vector<std::string>& differences) {
    std::vector<std::string> names;
    for (const auto& [name, value] : existing) names.push_back(name.str());
    for (const auto& [name, value] : asked)
        if (!existing.contains(name)) names.push_back(name.str());
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

void refuse_differences(std::string_view what, std::string_view name, std::vector<std::string> differences) {
    if (differences.empty()) return;
    std::sort(differences.begin(), differences.end());
    std::string text =
        "acemq: cannot declare " + std::string(what) + " " + in_quotes(name) + ": PRECONDITION_FAILED - ";
    for (std::size_t i = 0; i < differences.size(); ++i) text += (i == 0 ? "" : "; ") + differences[i];
    text += "; it exists with other settings: declare it as it is, or delete it first";
    throw TopologyError(text);
}

}  // namespace

std::optional<Clock::duration> parse_max_age(std::string_view text) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0 || digits > 9 || text.size() != digits + 1) return std::nullopt;
    std::int64_t count = 0;
    for (std::size_t i = 0; i < digits; ++i) count = count * 10 + (text[i] - '0');
    constexpr std::int64_t day = 86400;
    std::int64_t unit = 0;
    switch (text[digits]) {
    case 'Y': unit = 365 * day; break;
    case 'M': unit = 30 * day; break;
    case 'D': unit = day; break;
    case 'h': unit = 3600; break;
    case 'm': unit = 60; break;
    case 's': unit = 1; break;
    default: return std::nullopt;
    }
    if (count <= 0) return std::nullopt;
    // Longer than two centuries is "forever" here: a Clock counts nanoseconds in 64 bits.
    constexpr std::int64_t forever = 200 * 365 * day;
    return std::chrono::seconds(std::min(count * unit, forever));
}

namespace {

// RabbitMQ's own limit on a stream's segment size (3 GB).
constexpr std::int64_t max_segment_size_bytes = 3'000'000'000;

template <class Invalid>
QueuePolicy read_stream_policy(const QueueDeclaration& queue, const Invalid& invalid) {
    auto refuse_property = [&](std::string_view property) {
        return TopologyError("acemq: cannot declare stream " + in_quotes(queue.name) +
                             ": PRECONDITION_FAILED - invalid property '" + std::string(property) +
                             "': a stream is durable, not exclusive and not auto-delete; declare it so");
    };
    if (!queue.durable) throw refuse_property("non-durable");
    if (queue.exclusive) throw refuse_property("exclusive");
    if (queue.auto_delete) throw refuse_property("auto-delete");
    const FieldTable& arguments = queue.arguments;
    QueuePolicy policy;
    if (const auto age = arguments.find(argument::max_age); age != arguments.end()) {
        const auto* text = std::get_if<std::string>(&age->second.get());
        policy.max_age = text ? parse_max_age(*text) : std::nullopt;
        if (!policy.max_age)
            throw invalid(argument::max_age, age->second,
                          "a positive whole number and a unit of Y, M, D, h, m or s, e.g. \"7D\"");
    }
    if (const auto bytes = arguments.find(argument::max_length_bytes); bytes != arguments.end()) {
        const auto value = bytes->second.as_integer();
        if (!is_integer(bytes->second) || !value || *value < 0)
            throw invalid(argument::max_length_bytes, bytes->second, "a non-negative integer of bytes");
        policy.max_length_bytes = static_cast<std::uint64_t>(*value);
    }
    if (const auto segment = arguments.find(argument::stream_max_segment_size_bytes); segment != arguments.end()) {
        const auto value = segment->second.as_integer();
        if (!is_integer(segment->second) || !value || *value <= 0 || *value > max_segment_size_bytes)
            throw invalid(argument::stream_max_segment_size_bytes, segment->second,
                          "a positive integer of bytes, at most 3000000000");
    }
    return policy;
}

}  // namespace

QueuePolicy read_policy(const QueueDeclaration& queue) {
    const FieldTable& arguments = queue.arguments;
    auto invalid = [&](std::string_view argument, const FieldValue& value, std::string_view must) {
        return TopologyError("acemq: cannot declare queue " + in_quotes(queue.name) +
                             ": PRECONDITION_FAILED - invalid " + std::string(argument) + " " + value.to_string() +
                             ": it must be " + std::string(must));
    };
    QueuePolicy policy;
    if (queue.type == QueueType::stream) return read_stream_policy(queue, invalid);
    if (const auto ttl = arguments.find(argument::message_ttl); ttl != arguments.end()) {
        const auto milliseconds = ttl->second.as_integer();
        if (!is_integer(ttl->second) || !milliseconds || *milliseconds < 0)
            throw invalid(argument::message_ttl, ttl->second, "a non-negative integer of milliseconds");
        policy.ttl = std::chrono::milliseconds(*milliseconds);
    }
    if (const auto exchange = arguments.find(argument::dead_letter_exchange); exchange != arguments.end()) {
        const auto* text = std::get_if<std::string>(&exchange->second.get());
        if (text == nullptr) throw invalid(argument::dead_letter_exchange, exchange->second, "an exchange name");
        policy.dead_letter_exchange = *text;
    }
    if (const auto key = arguments.find(argument::dead_letter_routing_key); key != arguments.end()) {
        const auto* text = std::get_if<std::string>(&key->second.get());
        if (text == nullptr) throw invalid(argument::dead_letter_routing_key, key->second, "a routing key");
        if (!policy.dead_letter_exchange)
            throw invalid(argument::dead_letter_routing_key, key->second, "given together with x-dead-letter-exchange");
        policy.dead_letter_routing_key = *text;
    }
    return policy;
}

void check_redeclaration(const ExchangeDeclaration& existing, const ExchangeDeclaration& asked) {
    std::vector<std::string> differences;
    if (existing.kind != asked.kind)
        differences.push_back("type: existing " + std::string(to_string(existing.kind)) + ", asked " +
                              std::string(to_string(asked.kind)));
    compare_flag("durable", existing.durable, asked.durable, differences);
    compare_flag("auto-delete", existing.auto_delete, asked.auto_delete, differences);
    compare_arguments(existing.arguments, asked.arguments, differences);
    refuse_differences("exchange", asked.name, std::move(differences));
}

void check_redeclaration(const QueueDeclaration& existing, const QueueDeclaration& asked) {
    std::vector<std::string> differences;
    if (existing.type != asked.type)
        differences.push_back("queue type: existing " + std::string(to_string(existing.type)) + ", asked " +
                              std::string(to_string(asked.type)));
    compare_flag("durable", existing.durable, asked.durable, differences);
    compare_flag("exclusive", existing.exclusive, asked.exclusive, differences);
    compare_flag("auto-delete", existing.auto_delete, asked.auto_delete, differences);
    compare_arguments(existing.arguments, asked.arguments, differences);
    refuse_differences("queue", asked.name, std::move(differences));
}

}  // namespace acemq::inproc::detail
