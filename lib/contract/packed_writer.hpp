// Internal: writes a packed header table front to back, for a caller that has its entries in
// name order already (pack_headers, envelope.cpp), so that no FieldTable is built between.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <acemq/field.hpp>
#include <acemq/packed_table.hpp>

#include "contract_names.hpp"

namespace acemq::detail {

// A name to write, with its number among the contract's names (-1: not one of them): looked
// up when made from a name, or found when compiled for a constant (known()).
struct PackedName {
    std::string_view text;
    int contract;

    PackedName(std::string_view name) : text(name), contract(contract_names::index_of(name)) {}  // NOLINT
    static consteval PackedName known(std::string_view name) { return PackedName(name, number_of(name)); }

private:
    constexpr PackedName(std::string_view name, int number) : text(name), contract(number) {}
    static consteval int number_of(std::string_view name) {
        for (std::size_t index = 0; index < contract_names::all.size(); ++index)
            if (contract_names::all[index] == name) return static_cast<int>(index);
        return -1;
    }
};

class PackedWriter {
public:
    // `bytes_hint`: what the entries are expected to take, reserved up front. A text equal to
    // `message_id` is written as a reference to it (PackedTable's constructor with an id).
    PackedWriter(std::size_t bytes_hint, std::string_view message_id);

    // Each appends one entry; the caller puts names in order, each once.
    void put(PackedName name, const FieldValue& value);
    void put_text(PackedName name, std::string_view text);
    void put_int32(PackedName name, std::int32_t value);
    void put_int64(PackedName name, std::int64_t value);

    PackedTable finish() &&;

private:
    std::string_view message_id_;
    std::string bytes_;  // written up to size_, room after it
    std::size_t size_ = 0;
    std::size_t count_at_ = 0;  // where the count goes, after the id
    std::size_t count_ = 0;
    bool nested_ = false;
};

}  // namespace acemq::detail
