// Internal: the checks every SchemaRegistry makes before registering, and its "not found"
// errors, so the in-memory and the SQL registry refuse exactly the same input with the same
// sentences. Thread-safe (pure).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <acemq/schema_registry.hpp>

namespace acemq::detail {

// What the registry table's columns hold (schema_ddl): subject VARCHAR(255), format VARCHAR(32).
inline constexpr std::size_t max_schema_subject = 255;
inline constexpr std::size_t max_schema_format = 32;

// InvalidArgument when subject or definition is empty ("acemq: a schema needs a subject and
// a definition"), or subject or format is longer than its column (in characters).
void check_registration(std::string_view subject, std::string_view format, std::string_view definition);

// The registries' answers when there is nothing to answer with.
SchemaNotFoundError no_schema_with_id(std::int64_t id);
SchemaNotFoundError no_schema_under(std::string_view subject);

}  // namespace acemq::detail
