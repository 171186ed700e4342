// The PostgreSQL driver of the SQL seam (acemq/sql.hpp), over libpq.
//
//   acemq::postgres::Database db{"postgresql://app:PASSWORD@db.internal:5432/payments"};
//   auto connection = db.connect();
//   connection->execute("INSERT INTO t (k) VALUES (?) ON CONFLICT (k) DO NOTHING", {"key-1"});
//
// The connection string may carry a password, so it never appears in an exception or a
// log line: a failed connect names host, port and database only.
//
// Parameters: `?` placeholders are rewritten to $1, $2, ... (stores/postgres/placeholders.hpp).
// Integers are sent as int8, real numbers as float8, blobs as bytea in binary, text and
// NULL untyped (the server infers the type from where they are used).
// Columns: int2/int4/int8 -> integer, float4/float8 -> real, bytea -> blob, NULL -> null,
// every other type (text, varchar, numeric, boolean, timestamps, json) -> its text form.
// A function taking integer needs a cast (`f(?::integer)`): there is no implicit bigint ->
// integer cast for function arguments (columns, comparisons and LIMIT need none).
// execute() returns the rows the command changed (PQcmdTuples), and 0 for a SELECT.
//
// Errors: a statement the server refuses -> sql::DatabaseError whose code() is the SQLSTATE
// ("23505" unique violation, "40001" serialization failure, ...). After a failed statement
// inside a transaction PostgreSQL refuses everything but ROLLBACK (SQLSTATE 25P02); commit()
// then throws rather than report success. A connection that broke -> sql::ConnectionError;
// drop that Connection and connect again. Server notices go to acemq::log at debug level.
//
// Threads: a Database may be shared and connect() called from any thread. A Connection
// belongs to one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <acemq/sql.hpp>

struct pg_conn;
struct pg_result;

namespace acemq::postgres {

class Connection final : public sql::Connection {
public:
    // Connects with a libpq connection string or URL; ConnectionError when that fails.
    explicit Connection(const std::string& conninfo);
    ~Connection() override;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    sql::Dialect dialect() const noexcept override { return sql::Dialect::postgres; }
    std::int64_t execute(std::string_view statement, std::span<const sql::Value> parameters = {}) override;
    std::vector<sql::Row> query(std::string_view statement, std::span<const sql::Value> parameters = {}) override;
    using sql::Connection::execute;
    using sql::Connection::query;

    void begin() override;
    void commit() override;
    void rollback() override;
    bool in_transaction() const noexcept override;

    // The server process serving this connection (for pg_terminate_backend, logs).
    int backend_pid() const noexcept;

private:
    struct Finish {
        void operator()(pg_conn* connection) const noexcept;
    };
    struct Clear {
        void operator()(pg_result* result) const noexcept;
    };
    using ResultPtr = std::unique_ptr<pg_result, Clear>;

    // Runs `statement`; returns its result, or throws DatabaseError / ConnectionError.
    ResultPtr run(std::string_view statement, std::span<const sql::Value> parameters);

    std::unique_ptr<pg_conn, Finish> connection_;
    bool began_ = false;  // begin() was called and neither commit() nor rollback() since
};

class Database final : public sql::Database {
public:
    explicit Database(std::string conninfo);

    sql::Dialect dialect() const noexcept override { return sql::Dialect::postgres; }
    std::unique_ptr<sql::Connection> connect() override;

private:
    std::string conninfo_;  // may hold a password: never printed
};

}  // namespace acemq::postgres
