#include <acemq/stores/sql_schema_registry.hpp>

#include <exception>

#include <acemq/envelope.hpp>
#include <acemq/schema.hpp>

#include "schema_registration.hpp"

namespace acemq {

namespace {

constexpr std::string_view columns = "id, subject, version, format, definition, fingerprint, registered_at";

// "SELECT <columns> FROM <table> <rest>": every read of whole rows, in the order schema_of reads.
std::string select_rows(const std::string& table, std::string_view rest) {
    return std::string("SELECT ").append(columns).append(" FROM ").append(table).append(" ").append(rest);
}

SchemaDefinition schema_of(const sql::Row& row) {
    if (row.size() != 7)
        throw sql::DatabaseError("acemq: a schema registry row has " + std::to_string(row.size()) +
                                     " columns, not the 7 schema_ddl makes; check the table",
                                 "bad-row");
    return SchemaDefinition{
        .id = row[0].as_integer(),
        .subject = row[1].as_text(),
        .version = static_cast<std::int32_t>(row[2].as_integer()),
        .format = row[3].as_text(),
        .definition = row[4].as_text(),
        .fingerprint = row[5].as_text(),
        .registered_at_ms = row[6].as_integer(),
    };
}

std::int64_t single_integer(const std::vector<sql::Row>& rows, const std::string& what) {
    if (rows.empty() || rows.front().empty()) throw sql::DatabaseError("acemq: " + what + " returned no row", "no-row");
    return rows.front().front().as_integer();
}

}  // namespace

SqlSchemaRegistry::SqlSchemaRegistry(sql::Database& database, SqlSchemaRegistryOptions options)
    : database_(database), table_(check_table_name(SchemaTable::registry, options.table)),
      select_by_fingerprint_(select_rows(table_, "WHERE subject = ? AND fingerprint = ?")),
      next_id_("UPDATE " + table_ + "_seq SET last_id = last_id + 1 WHERE only_row = 1"),
      read_last_id_("SELECT last_id FROM " + table_ + "_seq WHERE only_row = 1"),
      seed_counter_("INSERT INTO " + table_ + "_seq (only_row, last_id) VALUES (1, 1)"),
      count_versions_("SELECT COUNT(*) FROM " + table_ + " WHERE subject = ?"),
      insert_("INSERT INTO " + table_ + " (" + std::string(columns) + ") VALUES (?, ?, ?, ?, ?, ?, ?)"),
      select_by_id_(select_rows(table_, "WHERE id = ?")),
      select_latest_(select_rows(table_, "WHERE subject = ? ORDER BY version DESC LIMIT 1")),
      select_versions_(select_rows(table_, "WHERE subject = ? ORDER BY version")) {}

SchemaDefinition SqlSchemaRegistry::register_schema(std::string_view subject, std::string_view format,
                                                    std::string_view definition) {
    detail::check_registration(subject, format, definition);
    const std::string print = fingerprint(definition);
    for (int attempt = 1;; ++attempt) {
        try {
            return register_once(subject, format, definition, print);
        } catch (const std::exception&) {
            // Losing a race fails the insert (or, with no counter row yet, the seed); the
            // next attempt then finds the winner's row. Any other failure is tried again too,
            // as the family does, and the last one is thrown as it was.
            if (attempt == attempts) throw;
        }
    }
}

SchemaDefinition SqlSchemaRegistry::register_once(std::string_view subject, std::string_view format,
                                                  std::string_view definition, const std::string& print) {
    sql::Transaction transaction = database_.begin();  // rolled back by its destructor on failure
    sql::Connection& connection = transaction.connection();
    if (const std::vector<sql::Row> found = connection.query(select_by_fingerprint_, {subject, print}); !found.empty())
        return schema_of(found.front());
    // The counter's row lock holds every other registration until this one commits, so the
    // version counted below cannot be counted twice. MAX(id) + 1 would race.
    std::int64_t id = 1;
    if (connection.execute(next_id_) == 1)
        id = single_integer(connection.query(read_last_id_), "reading " + table_ + "_seq");
    else
        connection.execute(seed_counter_);
    const std::int64_t version = single_integer(connection.query(count_versions_, {subject}), "counting versions") + 1;
    SchemaDefinition schema{
        .id = id,
        .subject = std::string(subject),
        .version = static_cast<std::int32_t>(version),
        .format = std::string(format),
        .definition = std::string(definition),
        .fingerprint = print,
        .registered_at_ms = epoch_millis_now().time_since_epoch().count(),
    };
    connection.execute(insert_, {schema.id, schema.subject, std::int64_t{schema.version}, schema.format,
                                 schema.definition, schema.fingerprint, schema.registered_at_ms});
    transaction.commit();
    return schema;
}

SchemaDefinition SqlSchemaRegistry::by_id(std::int64_t id) {
    {
        std::lock_guard guard(cache_lock_);
        if (const auto cached = by_id_cache_.find(id); cached != by_id_cache_.end()) return cached->second;
    }
    const std::vector<sql::Row> rows = database_.connect()->query(select_by_id_, {id});
    if (rows.empty()) throw detail::no_schema_with_id(id);
    SchemaDefinition schema = schema_of(rows.front());
    std::lock_guard guard(cache_lock_);
    by_id_cache_.emplace(id, schema);
    return schema;
}

SchemaDefinition SqlSchemaRegistry::latest(std::string_view subject) {
    const std::vector<sql::Row> rows = database_.connect()->query(select_latest_, {subject});
    if (rows.empty()) throw detail::no_schema_under(subject);
    return schema_of(rows.front());
}

std::vector<SchemaDefinition> SqlSchemaRegistry::versions(std::string_view subject) {
    std::vector<SchemaDefinition> out;
    for (const sql::Row& row : database_.connect()->query(select_versions_, {subject})) out.push_back(schema_of(row));
    return out;
}

}  // namespace acemq
