// The tables the SQL stores use: the idempotency table, the outbox and the schema registry
// (with its id counter), and on request the claim-check payloads, for SQLite and PostgreSQL. schema_ddl returns the statements;
// copy them into your migration tool for production. create_schema runs them, which is for
// development and tests only: schemas change through migrations, not application start-up.
//
//   for (const std::string& statement : acemq::schema_ddl(acemq::sql::Dialect::postgres))
//       std::cout << statement << ";\n\n";
//
// Every statement is CREATE TABLE IF NOT EXISTS / CREATE [UNIQUE] INDEX IF NOT EXISTS, so
// running them twice changes nothing. The dialects differ only in the blob type (BLOB vs
// BYTEA); times are epoch milliseconds in BIGINT. Both functions are thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <acemq/sql.hpp>

namespace acemq {

// Table names; nullopt leaves that table out. Each name is a plain SQL identifier that is
// not a reserved word (sql::check_identifier), short enough that the longest derived name
// ({registry}_fingerprint, {idempotency}_expiry, {outbox}_pending) stays within 63
// characters, which PostgreSQL would otherwise truncate silently. No two names, derived
// ones included, may coincide.
struct SchemaNames {
    std::optional<std::string> idempotency = "acemq_idempotency";
    std::optional<std::string> outbox = "acemq_outbox";
    std::optional<std::string> registry = "acemq_schema_registry";
    // SqlClaimCheckStore's payloads (<acemq/stores/sql_claim_check_store.hpp>): left out unless
    // named, e.g. "acemq_claims", since it holds payloads of megabytes that only an application
    // using that store wants in its database, and the DDL printed for the others stays the same.
    std::optional<std::string> claims = std::nullopt;
};

// Which table a name is for: each has its own derived names (see SchemaNames).
enum class SchemaTable { idempotency, outbox, registry, claims };

// Throws InvalidArgument unless `name` can name `table` in schema_ddl: a usable SQL
// identifier (sql::check_identifier: plain, not a reserved word) short enough for its
// derived names. The SQL stores' constructors call it, so a store refuses exactly the
// names schema_ddl refuses, before any statement runs. Returns `name`, so a constructor can
// check it as it keeps it.
const std::string& check_table_name(SchemaTable table, const std::string& name);

// The statements in run order, without a trailing ';' (8 with the default names: the
// idempotency table and its {t}_expiry index, the outbox and its {t}_pending index, the
// registry with its {t}_fingerprint and {t}_version unique indexes and its {t}_seq table;
// two more with a claims table: it and its {t}_stored index).
// InvalidArgument for a name that is not usable.
std::vector<std::string> schema_ddl(sql::Dialect dialect, const SchemaNames& names = {});

// Runs schema_ddl(database.dialect(), names) in one transaction on a new connection.
// Development and tests only (see above). Two processes creating the same tables at the
// same moment on PostgreSQL can fail with a unique violation on the catalogue; run it once.
void create_schema(sql::Database& database, const SchemaNames& names = {});
// The same on a connection the caller has (not inside a transaction).
void create_schema(sql::Connection& connection, const SchemaNames& names = {});

}  // namespace acemq
