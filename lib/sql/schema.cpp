#include <acemq/schema.hpp>

#include <algorithm>
#include <set>
#include <span>
#include <string_view>

namespace acemq {

namespace {

// The names schema_ddl derives from each table's name (its indexes, the registry's counter).
std::span<const std::string_view> derived_suffixes(SchemaTable table) {
    static constexpr std::string_view idempotency[] = {"_expiry"};
    static constexpr std::string_view outbox[] = {"_pending"};
    static constexpr std::string_view registry[] = {"_fingerprint", "_version", "_seq"};
    static constexpr std::string_view claims[] = {"_stored"};
    switch (table) {
    case SchemaTable::idempotency: return idempotency;
    case SchemaTable::outbox: return outbox;
    case SchemaTable::registry: return registry;
    case SchemaTable::claims: return claims;
    }
    return {};
}

// Checks `name` and returns it; records it and every name derived from it in `seen`.
const std::string& checked(SchemaTable table, const std::string& name, std::set<std::string>& seen) {
    check_table_name(table, name);
    auto claim = [&](const std::string& taken) {
        if (!seen.insert(taken).second)
            throw InvalidArgument("acemq: two schema objects would both be named \"" + taken +
                                  "\"; give the tables distinct names");
    };
    claim(name);
    for (auto suffix : derived_suffixes(table)) claim(name + std::string(suffix));
    return name;
}

}  // namespace

const std::string& check_table_name(SchemaTable table, const std::string& name) {
    sql::check_identifier(name);
    std::size_t longest = 0;
    for (auto suffix : derived_suffixes(table)) longest = std::max(longest, suffix.size());
    if (name.size() + longest > sql::max_identifier_bytes)
        throw InvalidArgument("acemq: the table name \"" + name + "\" is too long: with its derived names (up to +" +
                              std::to_string(longest) + " characters) it must fit " +
                              std::to_string(sql::max_identifier_bytes) + " characters, so use at most " +
                              std::to_string(sql::max_identifier_bytes - longest));
    return name;
}

std::vector<std::string> schema_ddl(sql::Dialect dialect, const SchemaNames& names) {
    const std::string blob = dialect == sql::Dialect::postgres ? "BYTEA" : "BLOB";
    std::set<std::string> seen;
    std::vector<std::string> statements;
    if (names.idempotency) {
        const std::string& t = checked(SchemaTable::idempotency, *names.idempotency, seen);
        statements.push_back("CREATE TABLE IF NOT EXISTS " + t +
                             " (\n"
                             "    message_id VARCHAR(255) NOT NULL PRIMARY KEY,\n"
                             "    state VARCHAR(16) NOT NULL,\n"
                             "    claimed_by VARCHAR(64),\n"
                             "    recorded_at BIGINT NOT NULL,\n"
                             "    expires_at BIGINT NOT NULL\n"
                             ")");
        statements.push_back("CREATE INDEX IF NOT EXISTS " + t + "_expiry ON " + t + " (expires_at)");
    }
    if (names.outbox) {
        const std::string& t = checked(SchemaTable::outbox, *names.outbox, seen);
        statements.push_back("CREATE TABLE IF NOT EXISTS " + t +
                             " (\n"
                             "    id VARCHAR(64) NOT NULL PRIMARY KEY,\n"
                             "    exchange_name VARCHAR(255) NOT NULL,\n"
                             "    routing_key VARCHAR(255) NOT NULL,\n"
                             "    body " +
                             blob +
                             " NOT NULL,\n"
                             "    content_type VARCHAR(255) NOT NULL,\n"
                             "    headers TEXT NOT NULL,\n"
                             "    created_at BIGINT NOT NULL,\n"
                             "    attempts INTEGER NOT NULL DEFAULT 0,\n"
                             "    last_error TEXT,\n"
                             // Our addition to the family's table: a relay's lease on the
                             // rows it is sending, so several relays on one table are safe.
                             "    claimed_by VARCHAR(64),\n"
                             "    claim_expires_at BIGINT\n"
                             ")");
        statements.push_back("CREATE INDEX IF NOT EXISTS " + t + "_pending ON " + t + " (created_at)");
    }
    if (names.registry) {
        const std::string& t = checked(SchemaTable::registry, *names.registry, seen);
        statements.push_back("CREATE TABLE IF NOT EXISTS " + t +
                             " (\n"
                             "    id INTEGER NOT NULL PRIMARY KEY,\n"
                             "    subject VARCHAR(255) NOT NULL,\n"
                             "    version INTEGER NOT NULL,\n"
                             "    format VARCHAR(32) NOT NULL,\n"
                             "    definition TEXT NOT NULL,\n"
                             "    fingerprint VARCHAR(64) NOT NULL,\n"
                             "    registered_at BIGINT NOT NULL\n"
                             ")");
        statements.push_back("CREATE UNIQUE INDEX IF NOT EXISTS " + t + "_fingerprint ON " + t +
                             " (subject, fingerprint)");
        statements.push_back("CREATE UNIQUE INDEX IF NOT EXISTS " + t + "_version ON " + t + " (subject, version)");
        statements.push_back("CREATE TABLE IF NOT EXISTS " + t +
                             "_seq (\n"
                             "    only_row INTEGER NOT NULL PRIMARY KEY,\n"
                             "    last_id INTEGER NOT NULL\n"
                             ")");
    }
    if (names.claims) {
        const std::string& t = checked(SchemaTable::claims, *names.claims, seen);
        // claim_key: check_claim_key's 128 characters; stored_at: for removing by age.
        statements.push_back("CREATE TABLE IF NOT EXISTS " + t +
                             " (\n"
                             "    claim_key VARCHAR(128) NOT NULL PRIMARY KEY,\n"
                             "    payload " +
                             blob +
                             " NOT NULL,\n"
                             "    stored_at BIGINT NOT NULL\n"
                             ")");
        statements.push_back("CREATE INDEX IF NOT EXISTS " + t + "_stored ON " + t + " (stored_at)");
    }
    return statements;
}

void create_schema(sql::Connection& connection, const SchemaNames& names) {
    const auto statements = schema_ddl(connection.dialect(), names);  // a bad name fails before BEGIN
    sql::Transaction transaction(connection);
    for (const std::string& statement : statements) connection.execute(statement);
    transaction.commit();
}

void create_schema(sql::Database& database, const SchemaNames& names) {
    const auto connection = database.connect();
    create_schema(*connection, names);
}

}  // namespace acemq
