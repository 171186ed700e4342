// YAML bodies, as the family's Java and Go members write them (the optional yaml part:
// libacemq-yaml on yaml-cpp, acemq-yaml.pc, CMake component `yaml`; -Dyaml=disabled builds
// acemq without it). Writes application/yaml; reads that, application/x-yaml, text/yaml,
// text/x-yaml and any +yaml type, never an untyped message (that one is JSON's):
//
//   auto yaml = std::make_shared<acemq::YamlCodec>();
//   bus.publisher_to_queue("orders", {.codec = yaml}).send(order);
//   .codec = acemq::default_codec_reading({yaml})  // a consumer reading YAML beside JSON
//
// Mapping (docs/yaml-toml.md): a struct is a block mapping keyed by field, camelCase as
// JsonCodec writes them; a vector is a block sequence; bytes are !!binary; null is ~.
// Reading follows YAML 1.2's core schema, as Go's yaml.v3 does: an unquoted 4250 is an
// integer, 1.0 a float, true/false booleans, ~/null null; anything quoted, and any other
// plain scalar (no, on, yes, o-1), is a string. A string that a reader could take for
// something else (true, 1.0, no, 0x1f, ...) is written double-quoted, so what this codec
// writes reads back as written by any YAML reader, 1.1 or 1.2. A std::string field given an
// unquoted number or boolean is a DecodeError naming the field, as in JSON.
//
// Hostile bodies are DecodeErrors, which park the message: aliases (*name) are refused, so
// no anchor can be expanded (a "billion laughs" body stays its size); nesting deeper than
// max_depth, more than max_values values, more than one document, invalid UTF-8 and anything
// yaml-cpp cannot parse. A decode allocates in proportion to the body. Immutable after
// construction: safe to share between threads.
#pragma once

#include <cstddef>
#include <string_view>

#include <acemq/codec.hpp>

namespace acemq {

namespace content_types {
inline constexpr std::string_view yaml = "application/yaml";
}  // namespace content_types

class YamlCodec final : public Codec {
public:
    // Nested sequences and mappings allowed, both ways: what this codec writes, it can read.
    static constexpr std::size_t max_depth = 64;
    // Values one body may decode into, counted as JsonCodec counts them.
    static constexpr std::size_t default_max_values = 1'000'000;

    struct Options {
        FieldNames names = FieldNames::camel_case;
        std::size_t max_values = default_max_values;
    };

    // Both throw InvalidArgument for a max_values of 0.
    explicit YamlCodec(std::size_t max_values = default_max_values);
    explicit YamlCodec(Options options);

    std::string_view name() const noexcept override { return "YamlCodec"; }
    std::string_view content_type() const noexcept override { return content_types::yaml; }
    bool can_decode(std::string_view content_type) const noexcept override;
    // Throws EncodeError for a string that is not UTF-8 or nesting deeper than max_depth.
    std::vector<std::byte> encode(ValueSource source) const override;
    std::vector<std::byte> encode(const Value& value) const override { return encode(ValueSource(value)); }
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
    FieldNames field_names(std::string_view) const noexcept override { return names_; }

private:
    FieldNames names_;
    std::size_t max_values_;
};

}  // namespace acemq
