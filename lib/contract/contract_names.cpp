#include "contract_names.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace acemq::contract_names {

namespace {

constexpr std::size_t slot_count = 128;
constexpr std::uint8_t empty_slot = 0xff;
static_assert(all.size() < empty_slot);

constexpr std::size_t shortest = std::ranges::min(all, {}, &std::string_view::size).size();
constexpr std::size_t longest = std::ranges::max(all, {}, &std::string_view::size).size();
static_assert(shortest >= 4 && longest <= 32, "slot_of reads a name's third byte; same_bytes compares 4 to 32");

// The family's names share their first bytes (x-acemq-, x-first-death-): the length, the last
// byte and the third tell them apart, and with these factors each name has a slot of its own
// (checked below), so a lookup reads one slot and compares once.
constexpr std::size_t slot_of(std::string_view name) noexcept {
    const auto last = static_cast<std::uint8_t>(name.back());
    const auto third = static_cast<std::uint8_t>(name[2]);
    return (last + third * 33 + name.size() * 19) % slot_count;
}

constexpr std::array<std::uint8_t, slot_count> build_slots() {
    std::array<std::uint8_t, slot_count> slots{};
    slots.fill(empty_slot);
    for (std::size_t index = 0; index < all.size(); ++index)
        slots[slot_of(all[index])] = static_cast<std::uint8_t>(index);
    return slots;
}

constexpr auto slots = build_slots();

constexpr bool every_name_in_its_own_slot() {
    for (std::size_t index = 0; index < all.size(); ++index)
        if (slots[slot_of(all[index])] != index) return false;
    return true;
}
static_assert(every_name_in_its_own_slot(),
              "two names share a slot (or one is listed twice): pick other factors in slot_of");

template <class Word>
Word word_at(const char* at) noexcept {
    Word word;
    std::memcpy(&word, at, sizeof word);
    return word;
}

// Whether two texts of `size` bytes, 4 to 32, are equal: compared by words that may overlap,
// where memcmp would be a call and a loop for a score of bytes.
bool same_bytes(const char* a, const char* b, std::size_t size) noexcept {
    using std::uint32_t, std::uint64_t;
    if (size < 8)
        return word_at<uint32_t>(a) == word_at<uint32_t>(b) &&
               word_at<uint32_t>(a + size - 4) == word_at<uint32_t>(b + size - 4);
    const bool ends_equal = word_at<uint64_t>(a) == word_at<uint64_t>(b) &&
                            word_at<uint64_t>(a + size - 8) == word_at<uint64_t>(b + size - 8);
    if (size <= 16 || !ends_equal) return ends_equal;
    return word_at<uint64_t>(a + 8) == word_at<uint64_t>(b + 8) &&
           word_at<uint64_t>(a + size - 16) == word_at<uint64_t>(b + size - 16);
}

}  // namespace

int index_of(std::string_view name) noexcept {
    if (name.size() < shortest || name.size() > longest) return -1;
    const std::uint8_t index = slots[slot_of(name)];
    if (index == empty_slot || all[index].size() != name.size()) return -1;
    return same_bytes(all[index].data(), name.data(), name.size()) ? index : -1;
}

}  // namespace acemq::contract_names
