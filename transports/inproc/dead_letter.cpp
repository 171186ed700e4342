#include "inproc/dead_letter.hpp"

#include <algorithm>
#include <chrono>
#include <string>

namespace acemq::inproc::detail {

namespace {

const std::string* text_field(const FieldTable& table, std::string_view name) {
    const auto found = table.find(name);
    return found == table.end() ? nullptr : std::get_if<std::string>(&found->second.get());
}

}  // namespace

void record_death(InboundParts& message, std::string_view queue, std::string_view reason) {
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

bool dead_letter_cycle(const InboundMessage& message, std::string_view target) {
    const auto found = message.headers().find("x-death");
    if (found == message.headers().end()) return false;
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

}  // namespace acemq::inproc::detail
