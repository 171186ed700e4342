// Internal: a header table handed value by value to a writer of another encoding (msgpack,
// for the zmq wire and the data file), from a FieldTable or straight from packed headers.
// Packed, no FieldValue is made of an entry: the writer is given the bytes where they lie
// (docs/design.md decision 12). Both sources make the same calls for the same table, so one
// writer serves both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <acemq/field.hpp>
#include <acemq/packed_headers.hpp>

namespace acemq::detail {

class FieldVisitor {
public:
    virtual ~FieldVisitor() = default;

    // A table of `entries` entries begins: each is a name() and then its value.
    virtual void table(std::size_t entries) = 0;
    virtual void name(std::string_view name) = 0;
    // An array of `elements` values begins.
    virtual void array(std::size_t elements) = 0;

    virtual void nil() = 0;
    virtual void boolean(bool value) = 0;
    virtual void int32(std::int32_t value) = 0;
    virtual void int64(std::int64_t value) = 0;
    virtual void uint64(std::uint64_t value) = 0;
    virtual void float64(double value) = 0;
    virtual void text(std::string_view value) = 0;
    virtual void bytes(std::span<const std::byte> value) = 0;
    virtual void timestamp(FieldTimestamp value) = 0;
};

void visit(const FieldValue& value, FieldVisitor& visitor);
void visit(const FieldTable& table, FieldVisitor& visitor);
void visit(const PackedHeaders& headers, FieldVisitor& visitor);

}  // namespace acemq::detail
