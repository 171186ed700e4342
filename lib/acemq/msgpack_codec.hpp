// MessagePack, the default codec for C++ structs (docs/design.md §3: compact, and
// positional so a struct costs no field names on the wire). Content type
// application/msgpack; also reads application/x-msgpack and any *+msgpack type.
//
// Mapping: a record (a C++ struct) is written as an array of its fields in declaration
// order, and reads back as that array, which from_value matches to the struct by
// position; maps stay maps, bytes are bin, strings are str (UTF-8, checked both ways).
// Positive integers read back as int64 unless only uint64 can hold them.
//
// Reading is hardened against hostile bodies: truncation, trailing bytes, nesting deeper
// than max_depth, ext types, lengths larger than the body could hold and more values than
// max_values (both refused on the header, before anything is allocated for them) are all
// DecodeErrors. Room for an array or map grows as its elements are read, never as its
// header claims, so a decode allocates in proportion to the body (a Value is 40 bytes, the
// smallest msgpack value 1) and to max_values at most. decode<T> checks the body by the
// same rules, then reads the C++ value straight from the bytes. Immutable after
// construction (each encode packs with a writer of its own): safe to share between threads.
#pragma once

#include <cstddef>

#include <acemq/codec.hpp>

namespace acemq {

class MsgpackCodec final : public Codec {
public:
    // Nested arrays and maps allowed, both ways: what this codec writes, it can read.
    static constexpr std::size_t max_depth = 64;
    // Values one body may decode into, arrays and maps and each element counted once: a
    // million values are about 40 MB as a Value tree.
    static constexpr std::size_t default_max_values = 1'000'000;

    // Throws InvalidArgument for 0.
    explicit MsgpackCodec(std::size_t max_values = default_max_values);

    std::string_view name() const noexcept override { return "MsgpackCodec"; }
    std::string_view content_type() const noexcept override { return content_types::msgpack; }
    bool can_decode(std::string_view content_type) const noexcept override;
    std::vector<std::byte> encode(ValueSource source) const override;
    std::vector<std::byte> encode(const Value& value) const override { return encode(ValueSource(value)); }
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
    // Checks the body whole as decode() does, then reads it in place: decode<T> of a struct
    // allocates only what the struct holds.
    std::unique_ptr<ValueReader> reader(std::span<const std::byte> body, std::string_view content_type) const override;

private:
    std::size_t max_values_;
};

}  // namespace acemq
