// Internal: an Avro schema, parsed once, and the binary encoding it directs (the Avro 1.11
// specification's "Binary Encoding" and "Schema Resolution"), for avro_codec.hpp's codecs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/value.hpp>

namespace acemq::detail {

class AvroSchema {
public:
    enum class Type {
        null,
        boolean,
        int32,
        int64,
        float32,
        float64,
        bytes,
        string,
        record,
        enumeration,
        array,
        map,
        fixed,
        union_
    };

    struct Field {
        std::string name;
        std::size_t type;               // a node
        std::optional<Value> fallback;  // the schema's "default", as a Value of the field's type
    };

    // Named types are nodes once, referred to by index, so a schema may name itself.
    struct Node {
        Type type = Type::null;
        std::string name = {};                   // a named type's full name ("org.acemq.test.OrderPlaced")
        std::vector<Field> fields = {};          // record
        std::vector<std::string> symbols = {};   // enum
        std::vector<std::size_t> children = {};  // array items, map values: one; union branches
        std::size_t size = 0;                    // fixed
    };

    // Throws InvalidArgument saying what is wrong and where ("field 'orderId' has no type").
    explicit AvroSchema(std::string_view json);

    const Node& node(std::size_t index) const { return nodes_[index]; }
    const Node& root() const { return nodes_[root_]; }

    // Appends the body of `value` (a record, or a map keyed by field name, for a record) to
    // `body`. Throws EncodeError naming the field path.
    void encode(const Value& value, std::vector<std::byte>& body) const;
    // The value `body` holds, the whole of it. Throws DecodeError naming what and where.
    Value decode(std::span<const std::byte> body, std::size_t max_values) const;
    // `value`, read as this schema wrote it, reshaped to `reader`'s schema (resolution).
    // Throws DecodeError naming the field the two schemas disagree on.
    Value resolve(const Value& value, const AvroSchema& reader) const;

private:
    std::size_t parse(const Value& json, const std::string& space, const std::string& where);
    std::size_t named(const Value& json, Type type, const std::string& space, const std::string& where);
    std::optional<std::size_t> lookup(std::string_view name, const std::string& space) const;
    Value default_of(std::size_t node, const Value& json, const std::string& where) const;

    std::vector<Node> nodes_;
    std::size_t root_ = 0;
};

// The short name of a full one: "OrderPlaced" of "org.acemq.test.OrderPlaced".
std::string_view avro_short_name(std::string_view full) noexcept;

}  // namespace acemq::detail
