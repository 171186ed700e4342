#include <acemq/naming.hpp>

#include <cstdint>

namespace acemq {

std::string dead_letter_queue(std::string_view queue) { return std::string(queue) + std::string(dead_letter_suffix); }

std::string parked_queue(std::string_view queue) { return std::string(queue) + std::string(parked_suffix); }

std::string rung_delay_name(std::chrono::milliseconds delay) {
    const std::int64_t seconds = delay.count() / 1000;
    if (seconds <= 0) return "0s";
    if (seconds % 3600 == 0) return std::to_string(seconds / 3600) + "h";
    if (seconds % 60 == 0) return std::to_string(seconds / 60) + "m";
    return std::to_string(seconds) + "s";
}

std::string rung_queue(std::string_view queue, std::chrono::milliseconds delay) {
    return std::string(queue) + std::string(retry_infix) + rung_delay_name(delay);
}

FieldTable rung_args(std::string_view queue, std::chrono::milliseconds delay) {
    return FieldTable{
        {std::string(argument::message_ttl), FieldValue(static_cast<std::int64_t>(delay.count()))},
        {std::string(argument::dead_letter_exchange), FieldValue(retry_exchange)},
        {std::string(argument::dead_letter_routing_key), FieldValue(queue)},
    };
}

FieldTable dead_letter_args(std::string_view queue) {
    return FieldTable{
        {std::string(argument::dead_letter_exchange), FieldValue(dead_letter_exchange)},
        {std::string(argument::dead_letter_routing_key), FieldValue(dead_letter_queue(queue))},
    };
}

std::optional<std::chrono::milliseconds> choose_rung(std::span<const std::chrono::milliseconds> rungs,
                                                     std::chrono::milliseconds delay) {
    std::optional<std::chrono::milliseconds> shortest_fitting;
    std::optional<std::chrono::milliseconds> longest;
    for (auto rung : rungs) {
        if (!longest || rung > *longest) longest = rung;
        if (rung >= delay && (!shortest_fitting || rung < *shortest_fitting)) shortest_fitting = rung;
    }
    return shortest_fitting ? shortest_fitting : longest;
}

}  // namespace acemq
