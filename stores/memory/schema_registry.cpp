#include <acemq/stores/memory_schema_registry.hpp>

#include <acemq/envelope.hpp>

#include "schema_registration.hpp"

namespace acemq {

SchemaDefinition InMemorySchemaRegistry::register_schema(std::string_view subject, std::string_view format,
                                                         std::string_view definition) {
    detail::check_registration(subject, format, definition);
    std::string print = fingerprint(definition);
    std::lock_guard guard(lock_);
    auto found = subjects_.find(subject);
    if (found == subjects_.end()) found = subjects_.emplace(std::string(subject), std::vector<std::size_t>{}).first;
    for (const std::size_t index : found->second)
        if (schemas_[index].fingerprint == print) return schemas_[index];
    schemas_.push_back(SchemaDefinition{
        .id = static_cast<std::int64_t>(schemas_.size() + 1),
        .subject = std::string(subject),
        .version = static_cast<std::int32_t>(found->second.size() + 1),
        .format = std::string(format),
        .definition = std::string(definition),
        .fingerprint = std::move(print),
        .registered_at_ms = epoch_millis_now().time_since_epoch().count(),
    });
    found->second.push_back(schemas_.size() - 1);
    return schemas_.back();
}

SchemaDefinition InMemorySchemaRegistry::by_id(std::int64_t id) {
    std::lock_guard guard(lock_);
    if (id < 1 || static_cast<std::uint64_t>(id) > schemas_.size()) throw detail::no_schema_with_id(id);
    return schemas_[static_cast<std::size_t>(id - 1)];
}

SchemaDefinition InMemorySchemaRegistry::latest(std::string_view subject) {
    std::lock_guard guard(lock_);
    const auto found = subjects_.find(subject);
    if (found == subjects_.end() || found->second.empty()) throw detail::no_schema_under(subject);
    return schemas_[found->second.back()];
}

std::vector<SchemaDefinition> InMemorySchemaRegistry::versions(std::string_view subject) {
    std::lock_guard guard(lock_);
    std::vector<SchemaDefinition> out;
    if (const auto found = subjects_.find(subject); found != subjects_.end())
        for (const std::size_t index : found->second) out.push_back(schemas_[index]);
    return out;
}

std::size_t InMemorySchemaRegistry::size() const {
    std::lock_guard guard(lock_);
    return schemas_.size();
}

}  // namespace acemq
