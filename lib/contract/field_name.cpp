#include <acemq/field_name.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <ostream>

#include <acemq/envelope.hpp>
#include <acemq/error.hpp>
#include <acemq/naming.hpp>

namespace acemq {

namespace {

// The contract's names longer than a FieldName holds inline: those a message or a queue's
// arguments carry on the family's own traffic. The x-schedule-* names are the scheduler's
// (scheduler.hpp, a layer above this one); the x-death family is RabbitMQ's, written by the
// embedded broker as RabbitMQ does.
constexpr auto long_contract_names = std::to_array<std::string_view>({
    header::correlation,
    header::causation,
    header::first_seen,
    header::route_position,
    header::route_id,
    header::replayed_from,
    header::replayed_at,
    header::replay_count,
    "x-schedule-exchange",
    "x-schedule-routing-key",
    "x-schedule-due-at",
    "x-schedule-content-type",
    argument::dead_letter_exchange,
    argument::dead_letter_routing_key,
    argument::max_length_bytes,
    argument::stream_max_segment_size_bytes,
    "x-first-death-reason",
    "x-first-death-queue",
    "x-first-death-exchange",
    "x-last-death-reason",
    "x-last-death-queue",
    "x-last-death-exchange",
    "x-delivery-count",
});

const std::string_view* contract_constant(std::string_view name) noexcept {
    const auto found = std::find(long_contract_names.begin(), long_contract_names.end(), name);
    return found == long_contract_names.end() ? nullptr : &*found;
}

}  // namespace

FieldName::FieldName(std::string_view name) : bytes_{} {
    if (name.size() <= max_inline) {
        // An empty name may come as a null pointer (an empty key read off the wire): not for memcpy.
        if (!name.empty()) std::memcpy(bytes_, name.data(), name.size());
        bytes_[max_inline] = static_cast<char>(name.size());
        return;
    }
    if (const std::string_view* constant = contract_constant(name)) {
        point_at(constant->data(), constant->size(), constant_tag);
        return;
    }
    if (name.size() > std::numeric_limits<std::uint32_t>::max())
        throw InvalidArgument("acemq: a field name of " + std::to_string(name.size()) +
                              " bytes; a field table's names are at most 4 GiB");
    char* copy = new char[name.size()];
    std::memcpy(copy, name.data(), name.size());
    point_at(copy, name.size(), heap_tag);
}

FieldName::FieldName(const FieldName& other) : bytes_{} {
    if (other.tag() == heap_tag) {
        const std::string_view name = other.view();
        char* copy = new char[name.size()];
        std::memcpy(copy, name.data(), name.size());
        point_at(copy, name.size(), heap_tag);
    } else {
        std::memcpy(bytes_, other.bytes_, sizeof(bytes_));
    }
}

void FieldName::point_at(const char* name, std::size_t size, std::uint8_t kind) noexcept {
    const auto length = static_cast<std::uint32_t>(size);
    std::memcpy(bytes_, &name, sizeof(name));
    std::memcpy(bytes_ + sizeof(name), &length, sizeof(length));
    bytes_[max_inline] = static_cast<char>(kind);
}

std::ostream& operator<<(std::ostream& out, const FieldName& name) { return out << name.view(); }

}  // namespace acemq
