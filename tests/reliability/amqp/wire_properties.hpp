// What must hold of the AMQP transport's field-table reader and writer (transports/amqp/
// wire.hpp) for any input, checked by the seeded loop in test_wire_fuzz.cpp and by the
// libFuzzer target tests/fuzz/fuzz_amqp_table.cpp. Each check returns "" when everything
// holds, else what did not; none of them recurses over the input's nesting.
#pragma once

#include <amqp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <variant>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/field.hpp>
#include "amqp/wire.hpp"

namespace wire_properties {

// How deep tables and arrays nest, the outer table being level 1 (as max_table_depth counts).
inline int depth_of(const amqp_table_t& table) {
    struct Item {
        const amqp_table_t* table;
        const amqp_array_t* array;
        int level;
    };
    std::vector<Item> pending{{&table, nullptr, 1}};
    int deepest = 0;
    while (!pending.empty()) {
        const Item item = pending.back();
        pending.pop_back();
        deepest = std::max(deepest, item.level);
        auto look_into = [&](const amqp_field_value_t& value) {
            if (value.kind == AMQP_FIELD_KIND_TABLE) pending.push_back({&value.value.table, nullptr, item.level + 1});
            if (value.kind == AMQP_FIELD_KIND_ARRAY) pending.push_back({nullptr, &value.value.array, item.level + 1});
        };
        if (item.table != nullptr)
            for (int i = 0; i < item.table->num_entries; ++i) look_into(item.table->entries[i].value);
        else
            for (int i = 0; i < item.array->num_entries; ++i) look_into(item.array->entries[i]);
    }
    return deepest;
}

struct Shape {
    int depth = 0;
    std::size_t longest_name = 0;
};

inline Shape shape_of(const acemq::FieldTable& table) {
    struct Item {
        const acemq::FieldTable* table;
        const acemq::FieldArray* array;
        int level;
    };
    std::vector<Item> pending{{&table, nullptr, 1}};
    Shape shape;
    while (!pending.empty()) {
        const Item item = pending.back();
        pending.pop_back();
        shape.depth = std::max(shape.depth, item.level);
        auto look_into = [&](const acemq::FieldValue& value) {
            if (const auto* inner = std::get_if<acemq::FieldTable>(&value.get()))
                pending.push_back({inner, nullptr, item.level + 1});
            if (const auto* inner = std::get_if<acemq::FieldArray>(&value.get()))
                pending.push_back({nullptr, inner, item.level + 1});
        };
        if (item.table != nullptr) {
            for (const auto& [name, value] : *item.table) {
                shape.longest_name = std::max(shape.longest_name, name.size());
                look_into(value);
            }
        } else {
            for (const acemq::FieldValue& value : *item.array) look_into(value);
        }
    }
    return shape;
}

// `table` as rabbitmq-c encodes it through the transport's TableView, checking that
// encoded_size predicted every byte; "" in `failure` when it did.
inline std::vector<std::uint8_t> encode(const acemq::FieldTable& table, std::string& failure) {
    const acemq::amqp::TableSize size = acemq::amqp::encoded_size(table);
    const acemq::amqp::TableView view(table);
    std::vector<std::uint8_t> buffer(size.bytes + 16);
    std::size_t offset = 0;
    const int status =
        amqp_encode_table(amqp_bytes_t{buffer.size(), buffer.data()}, const_cast<amqp_table_t*>(&view.get()), &offset);
    if (status != AMQP_STATUS_OK)
        failure = "amqp_encode_table failed (" + std::string(amqp_error_string2(status)) +
                  ") on a table encoded_size put at " + std::to_string(size.bytes) + " bytes";
    else if (offset != size.bytes)
        failure = "encoded_size said " + std::to_string(size.bytes) + " bytes, amqp_encode_table wrote " +
                  std::to_string(offset);
    buffer.resize(offset);
    return buffer;
}

// Decodes `encoded` with rabbitmq-c (as a delivery's headers are) and reads it with table_of:
// nothing may crash; a table nested past max_table_depth is refused with DecodeError and any
// other is read no deeper than it is; what was read encodes again in the bytes encoded_size says.
// `read`, when given, receives the table read.
inline std::string check_encoded(const std::uint8_t* data, std::size_t size, acemq::FieldTable* read = nullptr) {
    amqp_pool_t pool;
    init_amqp_pool(&pool, 4096);
    amqp_table_t decoded{};
    std::size_t offset = 0;
    const int status = amqp_decode_table(amqp_bytes_t{size, const_cast<std::uint8_t*>(data)}, &pool, &decoded, &offset);
    std::string failure;
    if (status == AMQP_STATUS_OK) {
        const int depth = depth_of(decoded);
        try {
            acemq::FieldTable table = acemq::amqp::table_of(decoded);
            const Shape shape = shape_of(table);
            if (depth > acemq::amqp::max_table_depth) {
                failure = "table_of read a table nested " + std::to_string(depth) + " deep";
            } else if (shape.depth > depth) {
                // Shallower is fine: of two entries with one name the last is kept, and the
                // first may have held the deepest part.
                failure = "table_of read a table nested " + std::to_string(depth) + " deep as " +
                          std::to_string(shape.depth) + " deep";
            } else if (const std::string refusal = acemq::amqp::encoded_size(table).refusal; !refusal.empty()) {
                failure = "a table read from the wire cannot be written back: " + refusal;
            } else {
                (void)encode(table, failure);
            }
            if (read != nullptr) *read = std::move(table);
        } catch (const acemq::DecodeError& error) {
            if (depth <= acemq::amqp::max_table_depth)
                failure = "table_of refused a table only " + std::to_string(depth) + " deep: " + error.what();
        } catch (const std::exception& error) {
            failure = std::string("table_of threw something other than DecodeError: ") + error.what();
        }
    }
    // rabbitmq-c refusing the bytes is fine: such headers never reach table_of.
    empty_amqp_pool(&pool);
    return failure;
}

// A table built in C++: encoded_size refuses exactly what rabbitmq-c must not be given (a
// name over 255 bytes, nesting past the limit), predicts the size of everything else byte
// for byte, and what it lets through reads back equal (for the kinds that travel as
// themselves: no unsigned 64-bit values, no NaN).
inline std::string check_table(const acemq::FieldTable& table) {
    const Shape shape = shape_of(table);
    const bool writable = shape.depth <= acemq::amqp::max_table_depth && shape.longest_name <= 255;
    const std::string refusal = acemq::amqp::encoded_size(table).refusal;
    if (!writable)
        return refusal.empty() ? "encoded_size let through a table nested " + std::to_string(shape.depth) +
                                     " deep with a name of " + std::to_string(shape.longest_name) + " bytes"
                               : std::string();
    if (!refusal.empty()) return "encoded_size refused a writable table: " + refusal;
    std::string failure;
    const std::vector<std::uint8_t> bytes = encode(table, failure);
    if (!failure.empty()) return failure;
    acemq::FieldTable read;
    failure = check_encoded(bytes.data(), bytes.size(), &read);
    if (!failure.empty()) return failure;
    if (!(read == table))
        return "the table read back differs: " + acemq::to_string(read) + " against " + acemq::to_string(table);
    return {};
}

}  // namespace wire_properties
