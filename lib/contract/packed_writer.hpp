// Internal: writes a packed header table front to back, for a caller that has its entries in
// name order already (pack_headers, envelope.cpp), so that no FieldTable is built between.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <acemq/field.hpp>
#include <acemq/packed_table.hpp>

namespace acemq::detail {

class PackedWriter {
public:
    // `bytes_hint`: what the entries are expected to take, reserved up front.
    explicit PackedWriter(std::size_t bytes_hint);

    // Each appends one entry; the caller puts names in order, each once.
    void put(std::string_view name, const FieldValue& value);
    void put_text(std::string_view name, std::string_view text);
    void put_int32(std::string_view name, std::int32_t value);
    void put_int64(std::string_view name, std::int64_t value);

    PackedTable finish() &&;

private:
    std::string bytes_;
    std::size_t count_ = 0;
    bool nested_ = false;
};

}  // namespace acemq::detail
