// TOML bodies, as the family's Java and Go members write them (the optional toml part:
// libacemq-toml on toml++, acemq-toml.pc, CMake component `toml`; -Dtoml=disabled builds
// acemq without it). Writes application/toml; reads that, text/toml and any +toml type,
// never an untyped message (that one is JSON's):
//
//   auto toml = std::make_shared<acemq::TomlCodec>();
//   bus.publisher_to_queue("orders", {.codec = toml}).send(order);
//   .codec = acemq::default_codec_reading({toml})  // a consumer reading TOML beside JSON
//
// Mapping (docs/yaml-toml.md): the body is a table, so only a struct or a map can be sent
// (anything else is refused with an EncodeError saying so); fields are keyed camelCase as
// JsonCodec writes them. TOML has no null: a null member (an empty std::optional) is left
// out, which reads back as empty, and a null inside an array is refused. Bytes are base64
// text, as in JSON; map keys must be strings or integers (written as decimal text); an
// integer past INT64_MAX has no TOML form and is refused. Reading gives maps with string
// keys, int64, double, bool and strings; dates and times come back as their RFC 3339 text.
//
// Hostile bodies are DecodeErrors, which park the message: tables nested deeper than
// max_depth (checked on the text before toml++ sees it, as toml++ recurses once per dotted
// key part), a non-ASCII character outside a string or comment (TOML allows none there, and
// toml++ 3.3 has undefined behaviour on some), more than max_values values, invalid UTF-8 and
// anything toml++ cannot parse.
// A decode allocates in proportion to the body. Immutable after construction: safe to
// share between threads.
#pragma once

#include <cstddef>
#include <string_view>

#include <acemq/codec.hpp>

namespace acemq {

namespace content_types {
inline constexpr std::string_view toml = "application/toml";
}  // namespace content_types

class TomlCodec final : public Codec {
public:
    // Nested tables and arrays allowed, both ways: what this codec writes, it can read.
    static constexpr std::size_t max_depth = 64;
    // Values one body may decode into, counted as JsonCodec counts them.
    static constexpr std::size_t default_max_values = 1'000'000;

    struct Options {
        FieldNames names = FieldNames::camel_case;
        std::size_t max_values = default_max_values;
    };

    // Both throw InvalidArgument for a max_values of 0.
    explicit TomlCodec(std::size_t max_values = default_max_values);
    explicit TomlCodec(Options options);

    std::string_view name() const noexcept override { return "TomlCodec"; }
    std::string_view content_type() const noexcept override { return content_types::toml; }
    bool can_decode(std::string_view content_type) const noexcept override;
    // Throws EncodeError for a value that is not a struct or map, and for what TOML cannot
    // carry (see above).
    std::vector<std::byte> encode(ValueSource source) const override;
    std::vector<std::byte> encode(const Value& value) const override { return encode(ValueSource(value)); }
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
    FieldNames field_names(std::string_view) const noexcept override { return names_; }

private:
    FieldNames names_;
    std::size_t max_values_;
};

}  // namespace acemq
