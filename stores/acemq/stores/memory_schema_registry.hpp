// A schema registry in this process's memory: for tests, examples and a single process
// whose publishers and consumers all live in it.
//
// Not for production across processes: each process's ids are its own and are lost on
// restart, so a message written with id 7 by one process names nothing (or another schema)
// in the next. Use SqlSchemaRegistry (<acemq/stores/sql_schema_registry.hpp>) when messages
// outlive the process or cross to another one.
//
//   acemq::InMemorySchemaRegistry registry;
//   const acemq::SchemaDefinition v1 = registry.register_schema("orders.OrderPlaced", "avro", schema_json);
//   registry.latest("orders.OrderPlaced") == v1;
//
// Thread-safe: one mutex around every call.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <acemq/schema_registry.hpp>

namespace acemq {

class InMemorySchemaRegistry final : public SchemaRegistry {
public:
    InMemorySchemaRegistry() = default;

    // See SchemaRegistry. Ids count from 1 across subjects, versions from 1 per subject.
    SchemaDefinition register_schema(std::string_view subject, std::string_view format,
                                     std::string_view definition) override;
    SchemaDefinition by_id(std::int64_t id) override;
    SchemaDefinition latest(std::string_view subject) override;
    std::vector<SchemaDefinition> versions(std::string_view subject) override;

    // How many schemas are registered, all subjects together.
    std::size_t size() const;

private:
    mutable std::mutex lock_;
    std::vector<SchemaDefinition> schemas_;                                  // schemas_[id - 1]
    std::map<std::string, std::vector<std::size_t>, std::less<>> subjects_;  // subject → indexes, by version
};

}  // namespace acemq
