// The small SQL seam the stores stand on: a Connection runs one statement with parameters
// and says how many rows changed or hands back the rows; a Transaction is an RAII object
// that rolls back unless committed; a Database hands out connections. Drivers:
// stores/sqlite (sqlite3) and stores/postgres (libpq).
//
//   acemq::sqlite::Database db{"payments.db"};
//   {
//       acemq::sql::Transaction tx = db.begin();          // rolls back unless committed
//       tx.connection().execute("UPDATE accounts SET cents = cents - ? WHERE id = ?", {4250, "a-1"});
//       seen.claim(id, tx);                                // a store joins the same transaction
//       tx.commit();
//   }
//
// Statements are written with `?` placeholders; a driver rewrites them for its database
// (libpq's $1, $2, ...). Threads: a Connection and a Transaction belong to one thread at a
// time; a Database may be shared and asked for connections from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/field.hpp>

namespace acemq::sql {

enum class Dialect { sqlite, postgres };
std::string_view to_string(Dialect dialect) noexcept;

// A parameter or a column value. Integers are 64-bit; text is UTF-8; blobs are bytes.
class Value {
public:
    using Variant = std::variant<std::nullptr_t, std::int64_t, double, std::string, Bytes>;

    Value() : value_(nullptr) {}
    Value(std::nullptr_t) : value_(nullptr) {}
    Value(std::int64_t number) : value_(number) {}
    Value(int number) : value_(std::int64_t{number}) {}
    Value(double number) : value_(number) {}
    Value(std::string text) : value_(std::move(text)) {}
    Value(std::string_view text) : value_(std::string(text)) {}
    Value(const char* text) : value_(std::string(text)) {}
    Value(Bytes blob) : value_(std::move(blob)) {}

    const Variant& get() const noexcept { return value_; }
    bool is_null() const noexcept { return std::holds_alternative<std::nullptr_t>(value_); }
    // Each throws DatabaseError naming the wanted and the actual kind.
    std::int64_t as_integer() const;
    const std::string& as_text() const;
    const Bytes& as_blob() const;

    friend bool operator==(const Value&, const Value&) = default;

private:
    Variant value_;
};

using Row = std::vector<Value>;

// A statement failed: the database said no (constraint, syntax, trigger, lock timeout).
// `code` is the database's own: SQLSTATE for PostgreSQL, the extended result code name
// for SQLite. A database error is never read as an answer (a duplicate, a missing row).
class DatabaseError : public Error {
public:
    DatabaseError(const std::string& what, std::string code) : Error(what), code_(std::move(code)) {}
    const std::string& code() const noexcept { return code_; }

private:
    std::string code_;
};

// The database could not be reached or the connection broke. Retry later. A subclass of
// its own, not an alias, so that a caller holding a database and a broker connection can
// tell which one went away.
class ConnectionError : public acemq::ConnectionError {
public:
    using acemq::ConnectionError::ConnectionError;
};

class Connection {
public:
    virtual ~Connection() = default;
    virtual Dialect dialect() const noexcept = 0;

    // Runs one statement; returns how many rows it changed.
    virtual std::int64_t execute(std::string_view statement, std::span<const Value> parameters = {}) = 0;
    std::int64_t execute(std::string_view statement, std::initializer_list<Value> parameters) {
        return execute(statement, std::span<const Value>(parameters.begin(), parameters.size()));
    }
    // Runs one query; returns every row.
    virtual std::vector<Row> query(std::string_view statement, std::span<const Value> parameters = {}) = 0;
    std::vector<Row> query(std::string_view statement, std::initializer_list<Value> parameters) {
        return query(statement, std::span<const Value>(parameters.begin(), parameters.size()));
    }

    // Used by Transaction; call those, not these.
    virtual void begin() = 0;
    virtual void commit() = 0;
    virtual void rollback() = 0;
    virtual bool in_transaction() const noexcept = 0;
};

// One transaction on one connection: begun when made, rolled back when destroyed unless
// commit() was called. Move-only. Either borrows a connection or owns one (Database::begin).
class Transaction {
public:
    explicit Transaction(Connection& connection);
    explicit Transaction(std::unique_ptr<Connection> connection);
    Transaction(Transaction&& other) noexcept;
    Transaction& operator=(Transaction&&) = delete;
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    ~Transaction();

    Connection& connection() noexcept { return *connection_; }
    operator Connection&() noexcept { return *connection_; }

    // Each throws UsageError when the transaction is already over.
    void commit();
    void rollback();

private:
    std::unique_ptr<Connection> owned_;
    Connection* connection_;
    bool open_ = true;
};

class Database {
public:
    virtual ~Database() = default;
    virtual Dialect dialect() const noexcept = 0;
    // A new connection of its own; ConnectionError when the database cannot be reached.
    virtual std::unique_ptr<Connection> connect() = 0;
    // A transaction on a new connection that it owns.
    Transaction begin() { return Transaction(connect()); }
};

// Runs `work(connection)` in a transaction of its own on a new connection: committed when
// `work` returns, rolled back (by the Transaction's destructor) when it throws. Returns what
// `work` returns.
template <class Work>
auto in_transaction(Database& database, Work&& work) {
    Transaction transaction = database.begin();
    if constexpr (std::is_void_v<std::invoke_result_t<Work&, Connection&>>) {
        work(transaction.connection());
        transaction.commit();
    } else {
        auto result = work(transaction.connection());
        transaction.commit();
        return result;
    }
}

// PostgreSQL's NAMEDATALEN - 1: it truncates longer identifiers without an error.
inline constexpr std::size_t max_identifier_bytes = 63;

// Throws InvalidArgument unless `name` is a plain SQL identifier that both SQLite and
// PostgreSQL take unquoted: [A-Za-z_][A-Za-z0-9_]{0,62}, not a reserved word of either
// database in any case ("order", "SELECT", "user"), not starting with "sqlite_". Table
// names are written into statements, so nothing else may pass. A table that schema_ddl
// creates must also leave room for its derived names: see check_table_name in schema.hpp.
void check_identifier(std::string_view name);

}  // namespace acemq::sql
