// A schema registry in a SQL table (docs/schema-registry.md §2), shared by every process
// that uses the same database: the id a publisher registers is the id every consumer reads,
// across restarts. SQLite and PostgreSQL run the same statements; create the tables with
// create_schema (or copy schema_ddl into your migrations): the registry table, its
// {table}_fingerprint and {table}_version unique indexes and the {table}_seq id counter.
//
//   acemq::postgres::Database db{url};
//   acemq::SqlSchemaRegistry registry{db};
//   const acemq::SchemaDefinition v1 = registry.register_schema("orders.OrderPlaced", "avro", schema_json);
//
// Registering finds (subject, fingerprint) or, in one transaction, takes the next id from
// {table}_seq (whose one row's lock serialises registrations), counts the subject's
// versions and inserts. Processes or threads registering one schema at once get one id:
// the unique index fails all but one insert, and a failed attempt is run again (5 attempts
// in all), when it finds the winner's row. The fifth failure is thrown as it was
// (sql::DatabaseError, sql::ConnectionError), never answered as "not found".
//
// Every call runs on a connection of its own, in a transaction of its own: there is no
// form taking the caller's connection, because a registration that loses a race must roll
// back and look again, which a caller's transaction cannot do (on PostgreSQL a failed
// statement spoils the whole transaction), and it would hold the counter's lock, and so
// every other registration, until the caller commits.
//
// by_id answers from a cache after the first time: a registered schema never changes, and
// a consumer looks one up for every message it reads.
//
// Thread-safe; the Database must outlive the registry and hand out connections to several
// threads (the shipped drivers do).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <acemq/schema_registry.hpp>
#include <acemq/sql.hpp>

namespace acemq {

struct SqlSchemaRegistryOptions {
    std::string table = "acemq_schema_registry";
};

class SqlSchemaRegistry final : public SchemaRegistry {
public:
    // How many times register_schema tries before it throws the last failure.
    static constexpr int attempts = 5;

    // Throws InvalidArgument for a table name schema_ddl would refuse (check_table_name).
    // Touches no table.
    explicit SqlSchemaRegistry(sql::Database& database, SqlSchemaRegistryOptions options = {});

    // See SchemaRegistry. Ids count from 1 across subjects, versions from 1 per subject.
    SchemaDefinition register_schema(std::string_view subject, std::string_view format,
                                     std::string_view definition) override;
    SchemaDefinition by_id(std::int64_t id) override;
    SchemaDefinition latest(std::string_view subject) override;
    std::vector<SchemaDefinition> versions(std::string_view subject) override;

    const std::string& table() const noexcept { return table_; }

private:
    SchemaDefinition register_once(std::string_view subject, std::string_view format, std::string_view definition,
                                   const std::string& print);

    sql::Database& database_;
    const std::string table_;

    const std::string select_by_fingerprint_;
    const std::string next_id_;
    const std::string read_last_id_;
    const std::string seed_counter_;
    const std::string count_versions_;
    const std::string insert_;
    const std::string select_by_id_;
    const std::string select_latest_;
    const std::string select_versions_;

    std::mutex cache_lock_;
    std::unordered_map<std::int64_t, SchemaDefinition> by_id_cache_;
};

}  // namespace acemq
