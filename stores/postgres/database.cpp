#include <acemq/stores/postgres.hpp>

#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include <acemq/log.hpp>
#include "postgres/placeholders.hpp"

namespace acemq::postgres {

namespace {

// Type OIDs from the server's pg_type catalogue (stable since forever).
constexpr Oid bytea_oid = 17;
constexpr Oid int8_oid = 20;
constexpr Oid int2_oid = 21;
constexpr Oid int4_oid = 23;
constexpr Oid float4_oid = 700;
constexpr Oid float8_oid = 701;

struct FreeMemory {
    void operator()(void* memory) const noexcept { PQfreemem(memory); }
};
struct FreeOptions {
    void operator()(PQconninfoOption* options) const noexcept { PQconninfoFree(options); }
};

std::string excerpt(std::string_view statement) {
    constexpr std::size_t limit = 200;
    if (statement.size() <= limit) return std::string(statement);
    return std::string(statement.substr(0, limit)) + "...";
}

// The parts libpq may quote in a message that are safe to repeat: option names, and for a
// connection that got as far as parsing its string, its host, port, database and user.
std::vector<std::string> safe_words(PGconn* connection) {
    std::vector<std::string> words;
    if (std::unique_ptr<PQconninfoOption, FreeOptions> defaults{PQconndefaults()})
        for (const PQconninfoOption* option = defaults.get(); option->keyword; ++option)
            words.emplace_back(option->keyword);
    if (connection)
        for (const char* value : {PQhost(connection), PQport(connection), PQdb(connection), PQuser(connection)})
            if (value && *value) words.emplace_back(value);
    return words;
}

// A libpq message about a connection string with every occurrence of `password` blanked,
// and every quoted part that is not a safe word too: libpq quotes pieces of a string it
// could not use, and those pieces may be (part of) the password.
std::string scrub(std::string message, std::string_view password, const std::vector<std::string>& safe) {
    if (!password.empty())
        for (auto at = message.find(password); at != std::string::npos; at = message.find(password, at))
            message.replace(at, password.size(), "***");
    std::string out;
    std::size_t at = 0;
    while (at < message.size()) {
        const auto open = message.find('"', at);
        const auto close = open == std::string::npos ? std::string::npos : message.find('"', open + 1);
        if (close == std::string::npos) {
            out.append(message, at, std::string::npos);
            break;
        }
        const std::string quoted = message.substr(open + 1, close - open - 1);
        const bool safe_word = std::find(safe.begin(), safe.end(), quoted) != safe.end();
        out.append(message, at, open - at).append("\"").append(safe_word ? quoted : "...").append("\"");
        at = close + 1;
    }
    for (char& c : out)
        if (c == '\n' || c == '\t') c = ' ';
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

std::string where(PGconn* connection) {
    auto part = [](const char* value) { return value && *value ? std::string(value) : std::string("(default)"); };
    return "host " + part(PQhost(connection)) + ", port " + part(PQport(connection)) + ", database " +
           part(PQdb(connection));
}

std::int64_t parse_integer(std::string_view text) {
    std::int64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size())
        throw sql::DatabaseError("acemq: PostgreSQL sent \"" + excerpt(text) + "\" for an integer column", "type");
    return number;
}

double parse_real(std::string_view text) {
    double number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size())
        throw sql::DatabaseError("acemq: PostgreSQL sent \"" + excerpt(text) + "\" for a real column", "type");
    return number;
}

sql::Value column(const PGresult* result, int row, int index) {
    if (PQgetisnull(result, row, index)) return sql::Value();
    const char* text = PQgetvalue(result, row, index);
    const auto length = static_cast<std::size_t>(PQgetlength(result, row, index));
    switch (PQftype(result, index)) {
    case int2_oid:
    case int4_oid:
    case int8_oid: return sql::Value(parse_integer({text, length}));
    case float4_oid:
    case float8_oid: return sql::Value(parse_real({text, length}));
    case bytea_oid: {
        std::size_t size = 0;
        std::unique_ptr<unsigned char, FreeMemory> bytes(
            PQunescapeBytea(reinterpret_cast<const unsigned char*>(text), &size));
        if (!bytes) throw std::bad_alloc();
        const auto* data = reinterpret_cast<const std::byte*>(bytes.get());
        return sql::Value(Bytes(data, data + size));
    }
    default: return sql::Value(std::string(text, length));
    }
}

}  // namespace

void Connection::Finish::operator()(pg_conn* connection) const noexcept { PQfinish(connection); }

void Connection::Clear::operator()(pg_result* result) const noexcept { PQclear(result); }

Connection::Connection(const std::string& conninfo) {
    // The string is expanded as dbname; the entries after it override it: text is UTF-8.
    const char* const keywords[] = {"dbname", "client_encoding", "fallback_application_name", nullptr};
    const char* const values[] = {conninfo.c_str(), "UTF8", "acemq", nullptr};
    connection_.reset(PQconnectdbParams(keywords, values, 1));
    if (!connection_) throw std::bad_alloc();
    if (PQstatus(connection_.get()) != CONNECTION_OK) {
        const char* password = PQpass(connection_.get());
        throw sql::ConnectionError(
            "acemq: could not connect to PostgreSQL (" + where(connection_.get()) +
            "): " + scrub(PQerrorMessage(connection_.get()), password ? password : "", safe_words(connection_.get())) +
            "; check that the server runs and accepts this user, then retry");
    }
    PQsetNoticeProcessor(
        connection_.get(),
        [](void*, const char* message) {
            std::string line = std::string("acemq: PostgreSQL notice: ") + message;
            while (!line.empty() && line.back() == '\n') line.pop_back();
            log(LogLevel::debug, "postgres", line);
        },
        nullptr);
}

Connection::~Connection() = default;  // PQfinish; the server rolls back an open transaction

int Connection::backend_pid() const noexcept { return PQbackendPID(connection_.get()); }

Connection::ResultPtr Connection::run(std::string_view statement, std::span<const sql::Value> parameters) {
    PGconn* connection = connection_.get();
    if (PQstatus(connection) == CONNECTION_BAD)
        throw sql::ConnectionError("acemq: this PostgreSQL connection (" + where(connection) +
                                   ") is broken; drop it and connect again");
    const Rewritten rewritten = rewrite_placeholders(statement);
    if (static_cast<std::size_t>(rewritten.parameters) != parameters.size())
        throw InvalidArgument("acemq: the statement has " + std::to_string(rewritten.parameters) +
                              " placeholders but " + std::to_string(parameters.size()) +
                              " parameters were given: " + excerpt(statement));
    const std::size_t count = parameters.size();
    std::vector<Oid> types(count, 0);
    std::vector<const char*> values(count, nullptr);
    std::vector<int> lengths(count, 0);
    std::vector<int> formats(count, 0);
    std::vector<std::string> numbers(count);  // text forms of numeric parameters, kept alive
    for (std::size_t i = 0; i < count; ++i) {
        std::visit(
            [&](const auto& value) {
                using T = std::decay_t<decltype(value)>;
                if constexpr (std::is_same_v<T, std::int64_t>) {
                    types[i] = int8_oid;
                    numbers[i] = std::to_string(value);
                    values[i] = numbers[i].c_str();
                } else if constexpr (std::is_same_v<T, double>) {
                    types[i] = float8_oid;
                    char buffer[32];
                    const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
                    numbers[i].assign(buffer, end);  // shortest text that reads back exactly
                    values[i] = numbers[i].c_str();
                } else if constexpr (std::is_same_v<T, std::string>) {
                    if (value.find('\0') != std::string::npos)
                        throw InvalidArgument("acemq: PostgreSQL text cannot hold a NUL character; send it as a blob");
                    values[i] = value.c_str();  // untyped: the server infers text, varchar, ...
                } else if constexpr (std::is_same_v<T, Bytes>) {
                    if (value.size() > static_cast<std::size_t>(INT32_MAX))
                        throw InvalidArgument("acemq: a blob parameter larger than 2 GiB");
                    types[i] = bytea_oid;
                    formats[i] = 1;  // binary: the bytes as they are, zeros included
                    values[i] = value.empty() ? "" : reinterpret_cast<const char*>(value.data());
                    lengths[i] = static_cast<int>(value.size());
                }  // NULL: values[i] stays nullptr
            },
            parameters[i].get());
    }
    ResultPtr result(PQexecParams(connection, rewritten.text.c_str(), static_cast<int>(count), types.data(),
                                  values.data(), lengths.data(), formats.data(), 0));
    const ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
    if (PQstatus(connection) == CONNECTION_BAD)
        throw sql::ConnectionError("acemq: the connection to PostgreSQL (" + where(connection) +
                                   ") broke: " + scrub(PQerrorMessage(connection), "", safe_words(connection)) +
                                   "; drop this connection, connect again and retry the transaction");
    if (status == PGRES_EMPTY_QUERY) throw InvalidArgument("acemq: the SQL statement is empty");
    const char* sqlstate = result ? PQresultErrorField(result.get(), PG_DIAG_SQLSTATE) : nullptr;
    const char* message = result ? PQresultErrorField(result.get(), PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    std::string what = "acemq: PostgreSQL said \"";
    what += message ? message : scrub(PQerrorMessage(connection), "", safe_words(connection));
    what += "\" (SQLSTATE ";
    what += sqlstate ? sqlstate : "none";
    what += ") for: " + excerpt(statement);
    if (const char* hint = result ? PQresultErrorField(result.get(), PG_DIAG_MESSAGE_HINT) : nullptr)
        what += std::string("; hint: ") + hint;
    if (status != PGRES_FATAL_ERROR)
        what += "; this driver runs single statements (no COPY), status " + std::string(PQresStatus(status));
    if (sqlstate && std::string_view(sqlstate) == "25P02")
        what += "; an earlier statement of this transaction failed: roll it back";
    throw sql::DatabaseError(what, sqlstate ? sqlstate : "none");
}

std::int64_t Connection::execute(std::string_view statement, std::span<const sql::Value> parameters) {
    const ResultPtr result = run(statement, parameters);
    // The tag of a SELECT counts the rows it returned, which it did not change.
    if (std::strncmp(PQcmdStatus(result.get()), "SELECT ", 7) == 0) return 0;
    const char* changed = PQcmdTuples(result.get());
    return *changed ? parse_integer(changed) : 0;
}

std::vector<sql::Row> Connection::query(std::string_view statement, std::span<const sql::Value> parameters) {
    const ResultPtr result = run(statement, parameters);
    const int count = PQntuples(result.get());
    const int columns = PQnfields(result.get());
    std::vector<sql::Row> rows(static_cast<std::size_t>(count));
    for (int r = 0; r < count; ++r) {
        sql::Row& row = rows[static_cast<std::size_t>(r)];
        row.reserve(static_cast<std::size_t>(columns));
        for (int c = 0; c < columns; ++c) row.push_back(column(result.get(), r, c));
    }
    return rows;
}

bool Connection::in_transaction() const noexcept {
    const PGTransactionStatusType status = PQtransactionStatus(connection_.get());
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
}

void Connection::begin() {
    if (began_ || in_transaction())
        throw UsageError(
            "acemq: a transaction is already open on this PostgreSQL connection; commit or roll it "
            "back before beginning another (transactions do not nest)");
    run("BEGIN", {});
    began_ = true;
}

void Connection::commit() {
    if (!began_) throw UsageError("acemq: commit without a transaction on this PostgreSQL connection; begin one first");
    began_ = false;
    const ResultPtr result = run("COMMIT", {});
    // COMMIT of a transaction in which a statement failed succeeds as a ROLLBACK.
    if (std::strcmp(PQcmdStatus(result.get()), "ROLLBACK") == 0)
        throw sql::DatabaseError(
            "acemq: PostgreSQL rolled the transaction back instead of committing it because "
            "a statement in it failed; nothing was committed",
            "25P02");
}

void Connection::rollback() {
    if (!began_)
        throw UsageError("acemq: rollback without a transaction on this PostgreSQL connection; begin one first");
    began_ = false;
    // A broken connection has nothing to roll back: the server ends the transaction of a
    // connection that went away, and the statement that found it broken already said so.
    if (PQstatus(connection_.get()) == CONNECTION_BAD) return;
    run("ROLLBACK", {});
}

Database::Database(std::string conninfo) : conninfo_(std::move(conninfo)) {
    char* raw_error = nullptr;
    std::unique_ptr<PQconninfoOption, FreeOptions> options(PQconninfoParse(conninfo_.c_str(), &raw_error));
    std::unique_ptr<char, FreeMemory> error(raw_error);
    if (!options)
        throw InvalidArgument("acemq: the PostgreSQL connection string is malformed (" +
                              scrub(error ? error.get() : "out of memory", "", safe_words(nullptr)) +
                              "); it is not repeated here because it may hold a password");
    if (PQisthreadsafe() == 0)
        throw Error("acemq: this libpq was built without thread safety; link a thread-safe libpq");
}

std::unique_ptr<sql::Connection> Database::connect() { return std::make_unique<Connection>(conninfo_); }

}  // namespace acemq::postgres
