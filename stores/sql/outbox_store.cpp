#include <acemq/stores/sql_outbox_store.hpp>

#include <algorithm>

#include <acemq/json_codec.hpp>
#include <acemq/schema.hpp>
#include <acemq/uuid.hpp>

#include "field_json.hpp"
#include "quoted_text.hpp"

namespace acemq {

namespace {

constexpr std::size_t max_error_bytes = 1000;

std::int64_t epoch_ms(EpochMillis time) { return time.time_since_epoch().count(); }

std::string headers_to_json(const Headers& headers) {
    Value::Map entries;
    for (const auto& [name, value] : headers)
        entries.emplace_back(
            Value(name.str()),
            detail::field_to_json(value, "header", name, "the SQL outbox cannot store (it keeps headers as JSON)"));
    const std::vector<std::byte> text = JsonCodec{}.encode(Value(std::move(entries)));
    return std::string(reinterpret_cast<const char*>(text.data()), text.size());
}

bool is_int32_header(std::string_view name) {
    return name == header::version || name == header::attempt || name == header::route_position;
}

Headers headers_from_json(const std::string& text) {
    const Value parsed = JsonCodec{}.decode(std::as_bytes(std::span(text.data(), text.size())), content_types::json);
    Headers headers;
    for (const auto& [key, item] : parsed.as_map()) {
        const std::string& name = key.as_string();
        headers.insert_or_assign(name, detail::field_from_json(item, is_int32_header(name)));
    }
    return headers;
}

// A row as a record. A row that cannot be read whole is still handed out, with what was
// wrong in `unreadable`, so that the relay records its failure and it retires in the end;
// thrown here, it would stop every sweep before anything was recorded, and block every
// row behind it for good. The id is read strictly: it is the primary key, VARCHAR NOT NULL
// in every table this store is meant for, and without it no failure could be recorded.
OutboxRecord record_from(const sql::Row& row) {
    OutboxRecord record;
    record.id = row.at(0).as_text();
    std::string problem;
    const auto read = [&](std::string_view column, auto&& step) {
        try {
            step();
        } catch (const Error& error) {     // DatabaseError (a column of another kind) or DecodeError (the headers)
            if (!problem.empty()) return;  // the first says enough; the row needs fixing either way
            problem = std::string(column) + ": " + std::string(without_prefix(error.what()));
        }
    };
    read("exchange_name", [&] { record.exchange = row.at(1).as_text(); });
    read("routing_key", [&] { record.routing_key = row.at(2).as_text(); });
    read("body", [&] { record.body = row.at(3).as_blob(); });
    read("content_type", [&] { record.content_type = row.at(4).as_text(); });
    read("headers (not the JSON object the outbox writes)",
         [&] { record.headers = headers_from_json(row.at(5).as_text()); });
    read("created_at", [&] { record.created_at = EpochMillis(std::chrono::milliseconds(row.at(6).as_integer())); });
    read("attempts", [&] { record.attempts = row.at(7).is_null() ? 0 : static_cast<int>(row.at(7).as_integer()); });
    read("last_error", [&] { record.last_error = row.at(8).is_null() ? std::string() : row.at(8).as_text(); });
    if (!problem.empty())
        record.unreadable = "acemq: outbox record " + record.id + " cannot be read back (" + problem +
                            "); fix or delete the row. Until then the relay counts it as a failed publish, and "
                            "retires it at max_attempts";
    return record;
}

// At most max_error_bytes, cut at a character boundary so PostgreSQL accepts it as UTF-8.
std::string truncated(std::string_view error) {
    if (error.size() <= max_error_bytes) return std::string(error);
    return std::string(error.substr(0, detail::character_boundary(error, max_error_bytes)));
}

}  // namespace

SqlOutboxStore::SqlOutboxStore(sql::Database& relay_connections, SqlOutboxOptions options)
    : database_(relay_connections), options_(std::move(options)),
      columns_("id, exchange_name, routing_key, body, content_type, headers, created_at, attempts, last_error") {
    check_table_name(SchemaTable::outbox, options_.table);
    const std::string& t = options_.table;
    insert_ = "INSERT INTO " + t +
              " (id, exchange_name, routing_key, body, content_type, headers, created_at)"
              " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING";
    delete_ = "DELETE FROM " + t + " WHERE id = ?";
    fail_ = "UPDATE " + t +
            " SET attempts = attempts + 1, last_error = ?, claimed_by = NULL, claim_expires_at = NULL"
            " WHERE id = ?";
    retired_ = "SELECT " + columns_ + " FROM " + t + " WHERE attempts >= ? ORDER BY created_at, id";
    count_ = "SELECT COUNT(*) FROM " + t;
    counts_ =
        "SELECT COALESCE(SUM(CASE WHEN attempts < ? THEN 1 ELSE 0 END), 0),"
        " COALESCE(SUM(CASE WHEN attempts < ? AND attempts > 0 THEN 1 ELSE 0 END), 0),"
        " COALESCE(SUM(CASE WHEN attempts >= ? THEN 1 ELSE 0 END), 0),"
        " MIN(CASE WHEN attempts < ? THEN created_at END) FROM " +
        t;
    release_retired_ =
        "UPDATE " + t + " SET attempts = 0, claimed_by = NULL, claim_expires_at = NULL WHERE id = ? AND attempts >= ?";
    if (options_.max_attempts < 1)
        throw InvalidArgument("acemq: max_attempts must be at least 1, got " + std::to_string(options_.max_attempts));
    if (options_.lease <= std::chrono::milliseconds::zero())
        throw InvalidArgument("acemq: an outbox lease must be positive, got " + std::to_string(options_.lease.count()) +
                              " ms");
}

template <class Work>
auto SqlOutboxStore::with_connection(Work&& work) {
    std::lock_guard guard(lock_);
    if (!connection_) connection_ = database_.connect();
    try {
        return work(*connection_);
    } catch (const sql::ConnectionError&) {
        connection_.reset();  // broken: the next call opens a new one
        throw;
    }
}

void SqlOutboxStore::add(const OutboxRecord& record, sql::Connection& caller_transaction) {
    check_outbox_id(record.id);
    if (!caller_transaction.in_transaction())
        throw UsageError(
            "acemq: the outbox has no transactional connection to write into: this connection is not "
            "in a transaction. Begin one (db.begin() or sql::Transaction) and add the record inside it; "
            "written outside your transaction, the message would go out even when your business rows "
            "roll back");
    caller_transaction.execute(insert_,
                               {record.id, record.exchange, record.routing_key, record.body, record.content_type,
                                headers_to_json(record.headers), epoch_ms(record.created_at)});
}

std::vector<OutboxRecord> SqlOutboxStore::pending(std::size_t limit) {
    return with_connection([&](sql::Connection& connection) {
        const std::string claim = new_uuid();
        const std::int64_t now = epoch_ms(epoch_millis_now());
        const std::string free = "attempts < ? AND (claimed_by IS NULL OR claim_expires_at <= ?)";
        // The inner select picks the oldest free rows; the outer condition is checked again
        // on each row as it is updated, so a row another relay claimed in the meantime is
        // left alone (PostgreSQL re-reads a row it waited for; SQLite has one writer).
        std::string choose = "SELECT id FROM " + options_.table + " WHERE " + free + " ORDER BY created_at, id";
        std::vector<sql::Value> parameters{claim, now + options_.lease.count(), options_.max_attempts, now};
        if (limit > 0) {
            choose += " LIMIT ?";
            parameters.emplace_back(static_cast<std::int64_t>(limit));
        }
        if (connection.dialect() == sql::Dialect::postgres) choose += " FOR UPDATE SKIP LOCKED";
        parameters.emplace_back(options_.max_attempts);
        parameters.emplace_back(now);
        std::vector<OutboxRecord> claimed;
        for (const sql::Row& row :
             connection.query("UPDATE " + options_.table + " SET claimed_by = ?, claim_expires_at = ? WHERE id IN (" +
                                  choose + ") AND " + free + " RETURNING " + columns_,
                              parameters))
            claimed.push_back(record_from(row));
        // RETURNING gives no order; ties of created_at go by id, byte-wise.
        std::sort(claimed.begin(), claimed.end(), [](const OutboxRecord& a, const OutboxRecord& b) {
            return a.created_at != b.created_at ? a.created_at < b.created_at : a.id < b.id;
        });
        return claimed;
    });
}

void SqlOutboxStore::mark_published(std::string_view id) {
    with_connection([&](sql::Connection& connection) { connection.execute(delete_, {id}); });
}

void SqlOutboxStore::record_failure(std::string_view id, std::string_view error) {
    with_connection([&](sql::Connection& connection) { connection.execute(fail_, {truncated(error), id}); });
}

void SqlOutboxStore::release(std::span<const std::string> ids) {
    if (ids.empty()) return;
    std::string marks;
    std::vector<sql::Value> parameters;
    for (const std::string& id : ids) {
        marks += marks.empty() ? "?" : ", ?";
        parameters.emplace_back(id);
    }
    with_connection([&](sql::Connection& connection) {
        connection.execute(
            "UPDATE " + options_.table + " SET claimed_by = NULL, claim_expires_at = NULL WHERE id IN (" + marks + ")",
            parameters);
    });
}

std::vector<OutboxRecord> SqlOutboxStore::retired() {
    return with_connection([&](sql::Connection& connection) {
        std::vector<OutboxRecord> kept;
        for (const sql::Row& row : connection.query(retired_, {options_.max_attempts}))
            kept.push_back(record_from(row));
        return kept;
    });
}

std::size_t SqlOutboxStore::count() {
    return with_connection([&](sql::Connection& connection) {
        const std::vector<sql::Row> rows = connection.query(count_);
        return static_cast<std::size_t>(rows.at(0).at(0).as_integer());
    });
}

OutboxCounts SqlOutboxStore::counts() {
    return with_connection([&](sql::Connection& connection) {
        const std::int64_t limit = options_.max_attempts;
        const std::vector<sql::Row> rows = connection.query(counts_, {limit, limit, limit, limit});
        const sql::Row& row = rows.at(0);
        OutboxCounts counts{.pending = static_cast<std::size_t>(row.at(0).as_integer()),
                            .failing = static_cast<std::size_t>(row.at(1).as_integer()),
                            .retired = static_cast<std::size_t>(row.at(2).as_integer())};
        if (!row.at(3).is_null())
            counts.oldest_pending = EpochMillis(std::chrono::milliseconds(row.at(3).as_integer()));
        return counts;
    });
}

bool SqlOutboxStore::release_retired(std::string_view id) {
    return with_connection([&](sql::Connection& connection) {
        return connection.execute(release_retired_, {id, std::int64_t{options_.max_attempts}}) > 0;
    });
}

}  // namespace acemq
