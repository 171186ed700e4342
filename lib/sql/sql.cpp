#include <acemq/sql.hpp>

#include <algorithm>
#include <iterator>

#include <acemq/log.hpp>

namespace acemq::sql {

std::string_view to_string(Dialect dialect) noexcept { return dialect == Dialect::sqlite ? "sqlite" : "postgres"; }

namespace {

std::string_view kind_of(const Value::Variant& value) {
    switch (value.index()) {
    case 0: return "NULL";
    case 1: return "an integer";
    case 2: return "a real number";
    case 3: return "text";
    default: return "a blob";
    }
}

}  // namespace

std::int64_t Value::as_integer() const {
    if (const auto* number = std::get_if<std::int64_t>(&value_)) return *number;
    throw DatabaseError("acemq: expected an integer column, found " + std::string(kind_of(value_)), "type");
}

const std::string& Value::as_text() const {
    if (const auto* text = std::get_if<std::string>(&value_)) return *text;
    throw DatabaseError("acemq: expected a text column, found " + std::string(kind_of(value_)), "type");
}

const Bytes& Value::as_blob() const {
    if (const auto* blob = std::get_if<Bytes>(&value_)) return *blob;
    throw DatabaseError("acemq: expected a blob column, found " + std::string(kind_of(value_)), "type");
}

Transaction::Transaction(Connection& connection) : connection_(&connection) { connection_->begin(); }

Transaction::Transaction(std::unique_ptr<Connection> connection)
    : owned_(std::move(connection)), connection_(owned_.get()) {
    connection_->begin();
}

Transaction::Transaction(Transaction&& other) noexcept
    : owned_(std::move(other.owned_)), connection_(other.connection_), open_(std::exchange(other.open_, false)) {}

Transaction::~Transaction() {
    if (!open_) return;
    try {
        connection_->rollback();
    } catch (const std::exception& error) {
        // A destructor cannot throw; the database rolls an abandoned transaction back when
        // the connection closes, so say what happened and go on.
        log(LogLevel::error, "sql", std::string("could not roll back a transaction: ") + error.what());
    }
}

void Transaction::commit() {
    if (!open_) throw UsageError("acemq: this transaction is already over; begin a new one");
    open_ = false;
    connection_->commit();
}

void Transaction::rollback() {
    if (!open_) throw UsageError("acemq: this transaction is already over; begin a new one");
    open_ = false;
    connection_->rollback();
}

namespace {

// The words neither database takes as an unquoted table name, lower case and sorted:
// PostgreSQL 15's reserved keywords (pg_get_keywords() with catcode R or T) and those of
// SQLite 3.40's keywords (sqlite3_keyword_name) that fail in the statements the stores run
// (CREATE TABLE / INDEX, INSERT, SELECT ... FROM, DROP), both measured on Debian 12.
// Keywords that both accept as names ("key", "name", "data") are allowed.
constexpr std::string_view reserved_words[] = {"add",
                                               "all",
                                               "alter",
                                               "analyse",
                                               "analyze",
                                               "and",
                                               "any",
                                               "array",
                                               "as",
                                               "asc",
                                               "asymmetric",
                                               "authorization",
                                               "autoincrement",
                                               "between",
                                               "binary",
                                               "both",
                                               "case",
                                               "cast",
                                               "check",
                                               "collate",
                                               "collation",
                                               "column",
                                               "commit",
                                               "concurrently",
                                               "constraint",
                                               "create",
                                               "cross",
                                               "current_catalog",
                                               "current_date",
                                               "current_role",
                                               "current_schema",
                                               "current_time",
                                               "current_timestamp",
                                               "current_user",
                                               "default",
                                               "deferrable",
                                               "delete",
                                               "desc",
                                               "distinct",
                                               "do",
                                               "drop",
                                               "else",
                                               "end",
                                               "escape",
                                               "except",
                                               "exists",
                                               "false",
                                               "fetch",
                                               "for",
                                               "foreign",
                                               "freeze",
                                               "from",
                                               "full",
                                               "grant",
                                               "group",
                                               "having",
                                               "if",
                                               "ilike",
                                               "in",
                                               "index",
                                               "initially",
                                               "inner",
                                               "insert",
                                               "intersect",
                                               "into",
                                               "is",
                                               "isnull",
                                               "join",
                                               "lateral",
                                               "leading",
                                               "left",
                                               "like",
                                               "limit",
                                               "localtime",
                                               "localtimestamp",
                                               "natural",
                                               "not",
                                               "nothing",
                                               "notnull",
                                               "null",
                                               "offset",
                                               "on",
                                               "only",
                                               "or",
                                               "order",
                                               "outer",
                                               "overlaps",
                                               "placing",
                                               "primary",
                                               "references",
                                               "returning",
                                               "right",
                                               "select",
                                               "session_user",
                                               "set",
                                               "similar",
                                               "some",
                                               "symmetric",
                                               "table",
                                               "tablesample",
                                               "then",
                                               "to",
                                               "trailing",
                                               "transaction",
                                               "true",
                                               "union",
                                               "unique",
                                               "update",
                                               "user",
                                               "using",
                                               "values",
                                               "variadic",
                                               "verbose",
                                               "when",
                                               "where",
                                               "window",
                                               "with"};
static_assert(std::is_sorted(std::begin(reserved_words), std::end(reserved_words)), "binary_search needs them sorted");

// Both databases compare unquoted names without regard to case.
std::string lower_case(std::string_view name) {
    std::string lower(name);
    for (char& c : lower)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return lower;
}

bool is_reserved_word(std::string_view name) {
    const std::string lower = lower_case(name);
    return std::binary_search(std::begin(reserved_words), std::end(reserved_words), std::string_view(lower));
}

}  // namespace

void check_identifier(std::string_view name) {
    auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
    const bool plain = !name.empty() && letter(name[0]) && std::all_of(name.begin(), name.end(), [&](char c) {
        return letter(c) || (c >= '0' && c <= '9');
    });
    const std::string shown(name.substr(0, 80));
    if (!plain)
        throw InvalidArgument(
            "acemq: a table name must be a plain SQL identifier (letters, digits and _, not "
            "starting with a digit), got \"" +
            shown + "\"");
    if (name.size() > max_identifier_bytes)
        throw InvalidArgument("acemq: the table name \"" + shown + "\" is " + std::to_string(name.size()) +
                              " bytes; PostgreSQL truncates identifiers past 63 bytes, so use at most 63");
    if (is_reserved_word(name))
        throw InvalidArgument("acemq: the table name \"" + shown +
                              "\" is an SQL reserved word (SQLite or PostgreSQL) "
                              "and fails in every statement that names it; choose another name, e.g. \"app_" +
                              shown + "\"");
    if (lower_case(name.substr(0, 7)) == "sqlite_")
        throw InvalidArgument("acemq: the table name \"" + shown +
                              "\" starts with sqlite_, which SQLite keeps for "
                              "its own tables; choose another name");
}

}  // namespace acemq::sql
