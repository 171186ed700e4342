#include "acemq/sql.hpp"

#include "acemq/log.hpp"

namespace acemq::sql {

std::string_view to_string(Dialect dialect) noexcept {
    return dialect == Dialect::sqlite ? "sqlite" : "postgres";
}

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
        log(LogLevel::error, std::string("could not roll back a transaction: ") + error.what());
    }
}

void Transaction::commit() {
    if (!open_) throw Error("acemq: this transaction is already over; begin a new one");
    open_ = false;
    connection_->commit();
}

void Transaction::rollback() {
    if (!open_) throw Error("acemq: this transaction is already over; begin a new one");
    open_ = false;
    connection_->rollback();
}

void check_identifier(std::string_view name) {
    auto plain = [&] {
        if (name.empty() || name.size() > 63) return false;
        auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
        if (!letter(name[0])) return false;
        for (char c : name)
            if (!letter(c) && !(c >= '0' && c <= '9')) return false;
        return true;
    };
    if (!plain())
        throw InvalidArgument("acemq: a table name must be a plain SQL identifier (letters, digits and _, "
                              "not starting with a digit, at most 63), got \"" +
                              std::string(name.substr(0, 80)) + "\"");
}

}  // namespace acemq::sql
