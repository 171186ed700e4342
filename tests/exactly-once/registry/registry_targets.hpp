// The schema registries the contract tests run on, each made fresh per test:
//   MemoryTarget    an InMemorySchemaRegistry.
#pragma once

#include <acemq/stores/memory_schema_registry.hpp>

namespace registry_targets {

class MemoryTarget {
public:
    acemq::SchemaRegistry& registry() { return registry_; }

private:
    acemq::InMemorySchemaRegistry registry_;
};

}  // namespace registry_targets
