// Avro bodies, as the other AceMQ languages write them (docs/avro.md): with a schema both
// sides know (AvroCodec, avro/binary), or with the writer's schema registered in a
// SchemaRegistry and its id on the front of every body (RegisteredAvroCodec,
// application/vnd.acemq.avro: one 0x00 byte, the id as 4 bytes big-endian, then the Avro
// body, Confluent's layout).
//
//   const std::string schema = R"({"type":"record","name":"OrderPlaced","fields":[
//       {"name":"orderId","type":"string"},{"name":"totalCents","type":"long"}]})";
//   auto codec = std::make_shared<acemq::RegisteredAvroCodec>(registry, "orders.OrderPlaced", schema);
//   bus.publisher_to_queue("orders", {.codec = codec}).send(OrderPlaced{"o-1", 4250});
//   bus.consume<OrderPlaced>("orders", handler, {.codec = acemq::default_codec_reading({codec})});
//
// Mapping: a C++ struct is an Avro record whose fields are found by name, spelled by the
// codec's FieldNames (camelCase by default, as the family's schemas are, so order_id is the
// schema's orderId; field_keys<T> renames the odd one), in any order; a schema field the
// struct lacks is written with the schema's default, and a struct field the schema lacks is
// refused. int and long are integers (an int must fit 32 bits), float and double numbers,
// string text, bytes and fixed bytes (fixed of its exact size), enum the symbol as text,
// array a std::vector, map a std::map with string keys, a union with null a std::optional
// (the first branch that takes the value is written). Decoding gives records keyed by the
// schema's field names, so decode<T> reads them under the same FieldNames.
//
// Supported: every Avro type, named types (also recursive ones) with namespaces, defaults;
// logical types are read as the type underneath. Not carried: Avro object container files.
//
// A body is read against its schema strictly: a length or count that is negative or larger
// than the bytes left, a varint of more than 10 bytes, an int out of 32 bits, a union or
// enum index out of range, invalid UTF-8 in a string, nesting deeper than max_depth, more
// values than max_values, and bytes left over after the value are DecodeErrors, and nothing
// is allocated for a length before its bytes are there. Schema-type mismatches name the
// field ("OrderPlaced.totalCents: expected a long, found a string").
//
// Both codecs are immutable after construction (the registered one keeps a thread-safe
// cache of the writers' schemas it has looked up): safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/codec.hpp>
#include <acemq/schema_registry.hpp>

namespace acemq {

namespace content_types {
inline constexpr std::string_view avro = "avro/binary";
inline constexpr std::string_view avro_registered = "application/vnd.acemq.avro";
}  // namespace content_types

namespace detail {
class AvroSchema;
class AvroSchemaCache;
}  // namespace detail

// How many values one body may decode into, and how deep, for both codecs.
struct AvroLimits {
    // Records, arrays, maps and unions inside one another (a recursive schema can nest
    // without end): what this codec writes deeper than this, it refuses to read.
    static constexpr std::size_t max_depth = 64;
    // Array and map entries counted once each: a million values are about 40 MB as a Value
    // tree, and an array of nulls claims no bytes, so the body's length alone bounds nothing.
    static constexpr std::size_t default_max_values = 1'000'000;
};

// One schema for writing and reading: writes avro/binary; reads avro/binary,
// application/avro and any +avro type, never application/vnd.acemq.avro (a registered body,
// whose first five bytes are not Avro) nor an untyped message. The reader's schema is the
// writer's: nothing is resolved (the family's AvroCodec).
class AvroCodec final : public Codec {
public:
    struct Options {
        FieldNames names = FieldNames::camel_case;
        std::size_t max_values = AvroLimits::default_max_values;
    };

    // Throw InvalidArgument when `schema` is not an Avro schema (saying where), or for a
    // max_values of 0.
    explicit AvroCodec(std::string_view schema);
    AvroCodec(std::string_view schema, Options options);

    std::string_view name() const noexcept override { return "AvroCodec"; }
    std::string_view content_type() const noexcept override { return content_types::avro; }
    bool can_decode(std::string_view content_type) const noexcept override;
    std::vector<std::byte> encode(const Value& value) const override;
    std::vector<std::byte> encode(ValueSource source) const override;
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
    FieldNames field_names(std::string_view) const noexcept override { return options_.names; }

private:
    std::shared_ptr<const detail::AvroSchema> schema_;
    Options options_;
};

// What a RegisteredAvroCodec decodes a record into when the writer's schema differs from
// the reader's (the family's avro-resolution-fixtures.json columns).
enum class AvroReading {
    // The writer's record reconciled with the reader's schema: a field the writer lacks is
    // filled in from the reader's default, one the reader does not declare is skipped.
    // What lets a producer be redeployed without its consumers: the default.
    resolved,
    // The writer's record as written, every field and nothing else.
    writer_shape,
};

// Writes application/vnd.acemq.avro with `schema`, registered under `subject`; reads that,
// application/avro and any +avro type, never avro/binary nor an untyped message. A body is
// read with the writer's schema, looked up in the registry by the id in its first five bytes,
// and resolved onto the reader's schema (Options::reader_schema, else `schema`). An
// application/avro or +avro body without the 0x00 framing byte is refused as such.
class RegisteredAvroCodec final : public Codec {
public:
    struct Options {
        FieldNames names = FieldNames::camel_case;
        std::size_t max_values = AvroLimits::default_max_values;
        // The schema records are read as, when it is not the one written; empty: `schema`.
        std::string reader_schema = {};
        AvroReading reading = AvroReading::resolved;
    };

    // Registers `schema` under `subject` (idempotent, so every publisher and consumer may),
    // and keeps the registry to look writers' schemas up. Throws InvalidArgument for a null
    // registry, an empty subject, a schema (or reader_schema) that is not Avro, a schema id
    // beyond 4 bytes or a max_values of 0; what the registry throws passes through.
    RegisteredAvroCodec(std::shared_ptr<SchemaRegistry> registry, std::string_view subject, std::string_view schema);
    RegisteredAvroCodec(std::shared_ptr<SchemaRegistry> registry, std::string_view subject, std::string_view schema,
                        Options options);
    ~RegisteredAvroCodec() override;

    std::string_view name() const noexcept override { return "RegisteredAvroCodec"; }
    std::string_view content_type() const noexcept override { return content_types::avro_registered; }
    bool can_decode(std::string_view content_type) const noexcept override;
    std::vector<std::byte> encode(const Value& value) const override;
    std::vector<std::byte> encode(ValueSource source) const override;
    // A DecodeError also when the id is not in the registry (the consumer parks the message);
    // a StoreUnavailableError when the registry cannot be asked (the consumer retries it).
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
    FieldNames field_names(std::string_view) const noexcept override { return options_.names; }

    // The schema this codec writes with, as registered.
    const SchemaDefinition& schema() const noexcept { return registered_; }

private:
    std::shared_ptr<SchemaRegistry> registry_;
    SchemaDefinition registered_;
    std::shared_ptr<const detail::AvroSchema> writer_;
    std::shared_ptr<const detail::AvroSchema> reader_;
    std::unique_ptr<detail::AvroSchemaCache> cache_;
    Options options_;
};

}  // namespace acemq
