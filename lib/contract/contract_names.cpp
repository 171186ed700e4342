#include "contract_names.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace acemq::contract_names {

namespace {

constexpr std::size_t slot_count = 128;
constexpr std::uint8_t empty_slot = 0xff;
static_assert(all.size() < slot_count / 2, "the table stays at most half full, so that a probe ends soon");

constexpr std::size_t shortest = std::ranges::min(all, {}, &std::string_view::size).size();
constexpr std::size_t longest = std::ranges::max(all, {}, &std::string_view::size).size();
static_assert(shortest >= 3, "slot_of reads a name's third byte");

// The family's names share their first bytes (x-acemq-, x-first-death-): the length, the last
// byte and the third tell them apart, and with these factors each name has a slot of its own,
// so looking one up compares once (checked below).
constexpr std::size_t slot_of(std::string_view name) noexcept {
    const auto last = static_cast<std::uint8_t>(name.back());
    const auto third = static_cast<std::uint8_t>(name[2]);
    return (last + third * 33 + name.size() * 19) % slot_count;
}

// Open addressing: a name sits at its slot or, when that is taken, in the next free one.
constexpr std::array<std::uint8_t, slot_count> build_slots() {
    std::array<std::uint8_t, slot_count> slots{};
    slots.fill(empty_slot);
    for (std::size_t index = 0; index < all.size(); ++index) {
        std::size_t slot = slot_of(all[index]);
        while (slots[slot] != empty_slot) slot = (slot + 1) % slot_count;
        slots[slot] = static_cast<std::uint8_t>(index);
    }
    return slots;
}

constexpr auto slots = build_slots();

constexpr int find(std::string_view name) noexcept {
    if (name.size() < shortest || name.size() > longest) return -1;
    for (std::size_t slot = slot_of(name);; slot = (slot + 1) % slot_count) {
        const std::uint8_t index = slots[slot];
        if (index == empty_slot) return -1;
        if (all[index] == name) return index;
    }
}

constexpr bool every_name_found_at_its_index() {
    for (std::size_t index = 0; index < all.size(); ++index)
        if (find(all[index]) != static_cast<int>(index)) return false;
    return true;
}
static_assert(every_name_found_at_its_index(), "a name is listed twice");

constexpr bool every_name_in_its_own_slot() {
    for (std::size_t index = 0; index < all.size(); ++index)
        if (slots[slot_of(all[index])] != index) return false;
    return true;
}
static_assert(every_name_in_its_own_slot(),
              "two names share a slot, which costs a lookup a probe: pick other factors in slot_of");

}  // namespace

int index_of(std::string_view name) noexcept { return find(name); }

}  // namespace acemq::contract_names
