// Where writers' schemas are kept under a small numeric id, so a message can carry the id
// instead of the schema (docs/schema-registry.md; the Avro codec's registered framing,
// docs/avro.md). A schema is registered under a subject (usually the message type, e.g.
// "orders.OrderPlaced"); registering the same definition under the same subject again
// answers the same id, so every publisher may register at start-up.
//
//   acemq::InMemorySchemaRegistry registry;                       // or SqlSchemaRegistry
//   const acemq::SchemaDefinition& v1 = registry.register_schema("orders.OrderPlaced", "avro", schema_json);
//   registry.by_id(v1.id).definition;                            // what a reader resolves against
//
// Ids are global (1, 2, ...), versions count per subject (1, 2, ...); the same definition
// under another subject is a new id, version 1. A definition is compared by its exact bytes
// (fingerprint(): no normalisation, so reformatting a schema registers a new version).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/error.hpp>

namespace acemq {

// One registered schema. A value: copied freely.
struct SchemaDefinition {
    std::int64_t id = 0;
    std::string subject;
    std::int32_t version = 0;
    std::string format;                 // "avro", "protobuf", "json": what `definition` is written in
    std::string definition;             // the schema's text, exactly as registered
    std::string fingerprint;            // fingerprint(definition)
    std::int64_t registered_at_ms = 0;  // epoch milliseconds

    bool operator==(const SchemaDefinition&) const = default;
};

// "<subject> v<version> (<format>, id <id>)", e.g. "orders.OrderPlaced v2 (avro, id 7)".
std::string to_string(const SchemaDefinition& schema);

// Lowercase hex SHA-256 of the definition's exact UTF-8 bytes (fingerprint("") is
// "e3b0c442...b855").
std::string fingerprint(std::string_view definition);

// No schema has that id, or the subject has none.
class SchemaNotFoundError : public Error {
public:
    using Error::Error;
};

// The registry interface: in memory (<acemq/stores/memory_schema_registry.hpp>) and SQL
// (<acemq/stores/sql_schema_registry.hpp>). Implementations are thread-safe; the SQL one
// is also safe across processes sharing its database (several registering one schema at
// once get one id). A store error is thrown (sql::DatabaseError, ...), never answered as
// "not found".
class SchemaRegistry {
public:
    virtual ~SchemaRegistry() = default;

    // Registers `definition` under `subject`, or finds it registered already (same subject,
    // same fingerprint) and answers that. InvalidArgument when subject or definition is
    // empty ("acemq: a schema needs a subject and a definition").
    virtual SchemaDefinition register_schema(std::string_view subject, std::string_view format,
                                             std::string_view definition) = 0;
    // SchemaNotFoundError when there is none.
    virtual SchemaDefinition by_id(std::int64_t id) = 0;
    // The subject's highest version; SchemaNotFoundError when it has none.
    virtual SchemaDefinition latest(std::string_view subject) = 0;
    // Oldest first; empty when the subject has none.
    virtual std::vector<SchemaDefinition> versions(std::string_view subject) = 0;

protected:
    SchemaRegistry() = default;
    SchemaRegistry(const SchemaRegistry&) = default;
    SchemaRegistry& operator=(const SchemaRegistry&) = default;
};

}  // namespace acemq
