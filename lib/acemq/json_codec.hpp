// JSON, the default of every other AceMQ language: use it to talk to them. Writes
// application/json; reads an untyped message (the family rule), application/json*,
// text/json* and any +json type, case-insensitively.
//
// Mapping: a record (a C++ struct) is an object keyed by field, in declaration order, at
// every depth. The keys are camelCase by default, as the other AceMQ languages write them:
// struct Payment { std::string payment_id; std::int64_t amount_cents; } is
// {"paymentId":"p-1","amountCents":4250}; JsonCodec{{.names = FieldNames::as_is}} writes
// the C++ names ({"payment_id":...}) instead, and field_keys<T> renames the odd field under
// either (field_keys.hpp has the conversion rules). Reading, a key that matches no field is
// ignored; under camel_case a field whose camelCase key is absent is read from its C++ name
// (so what an as_is codec wrote still reads), the camelCase key winning when both are
// there; under as_is only the C++ name reads. Bytes are base64 text; int64 and
// uint64 are exact. Map keys must be strings or integers (written as decimal text, as Go
// does). NaN and infinities have no JSON form and are refused when encoding. Reading
// gives maps with string keys, int64 (uint64 past INT64_MAX) for integers, double for
// anything with a fraction or exponent.
//
// Invalid UTF-8, trailing bytes, nesting deeper than max_depth and more values than
// max_values are DecodeErrors; the parse stops at the first value past the limit, so a
// decode allocates in proportion to the body and to max_values at most. Immutable after
// construction: safe to share between threads.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <acemq/codec.hpp>

namespace acemq {

class JsonCodec final : public Codec {
public:
    // Nested arrays and objects allowed, both ways: what this codec writes, it can read.
    static constexpr std::size_t max_depth = 64;
    // Values one body may decode into, arrays, objects, keys and each element counted
    // once: a million values are about 40 MB as a Value tree.
    static constexpr std::size_t default_max_values = 1'000'000;

    struct Options {
        FieldNames names = FieldNames::camel_case;
        std::size_t max_values = default_max_values;
    };

    // Both throw InvalidArgument for a max_values of 0.
    explicit JsonCodec(std::size_t max_values = default_max_values);
    explicit JsonCodec(Options options);

    std::string_view name() const noexcept override { return "JsonCodec"; }
    std::string_view content_type() const noexcept override { return content_types::json; }
    bool can_decode(std::string_view content_type) const noexcept override;
    std::vector<std::byte> encode(ValueSource source) const override;
    std::vector<std::byte> encode(const Value& value) const override { return encode(ValueSource(value)); }
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
    // Reads the body checked as decode() does, without building a Value.
    std::unique_ptr<ValueReader> reader(std::span<const std::byte> body, std::string_view content_type) const override;
    FieldNames field_names(std::string_view) const noexcept override { return names_; }

private:
    FieldNames names_;
    std::size_t max_values_;
};

// `text` as a JSON string, quoted and escaped as JsonCodec writes strings ("orders.new"),
// for a program that writes JSON of its own around what the library tells it (acemq-load's
// report). UTF-8 is passed through as it is, and so are bytes that are not UTF-8: the text
// is the caller's to check. Thread-safe.
std::string json_quoted(std::string_view text);

}  // namespace acemq
