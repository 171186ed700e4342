// outbox status|retired|release on the SQL outbox store, and schema-ddl: the stores' tables.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <acemq/config.hpp>
#include <acemq/schema.hpp>
#include <acemq/sql.hpp>
#include <acemq/stores/sql_outbox_store.hpp>
#include <acemq/url.hpp>
#if ACEMQ_HAS_SQLITE
#include <acemq/stores/sqlite.hpp>
#endif
#if ACEMQ_HAS_POSTGRES
#include <acemq/stores/postgres.hpp>
#endif
#include "output.hpp"
#include "plan_commands.hpp"

namespace acemq::cli {
namespace {

struct OutboxArguments {
    std::string db;
    SqlOutboxOptions store;
    std::string id;
};

// --db as a database: a PostgreSQL URL, or a SQLite file ("sqlite:PATH" or a plain path),
// which must exist: opening a mistyped path would create an empty database and report an
// empty outbox.
std::unique_ptr<sql::Database> open_database(const std::string& db) {
    if (db.empty()) throw CommandFailed(Exit::usage, "no database given: pass --db PATH or --db postgresql://...");
    if (db.starts_with("postgresql://") || db.starts_with("postgres://")) {
#if ACEMQ_HAS_POSTGRES
        return std::make_unique<postgres::Database>(db);
#else
        throw CommandFailed(Exit::usage, "this acemq was built without PostgreSQL (-Dpostgres=disabled)");
#endif
    }
    std::string path = db.starts_with("sqlite:") ? db.substr(7) : db;
    if (path.starts_with("//")) path.erase(0, 2);  // sqlite:///var/lib/app.db
#if ACEMQ_HAS_SQLITE
    if (!std::filesystem::exists(path))
        throw CommandFailed(Exit::not_found, "there is no SQLite database " + quoted_name(path) + ": check --db");
    return std::make_unique<sqlite::Database>(path);
#else
    throw CommandFailed(Exit::usage, "this acemq was built without SQLite (-Dsqlite=disabled)");
#endif
}

// Runs `work` on the outbox of --db, saying what to do when the database cannot be reached
// or has no such table.
template <class Work>
void with_outbox(const OutboxArguments& arguments, Work&& work) {
    const std::unique_ptr<sql::Database> database = open_database(arguments.db);
    try {
        SqlOutboxStore store(*database, arguments.store);
        work(store);
    } catch (const sql::ConnectionError& failure) {
        throw CommandFailed(Exit::unreachable, "cannot reach the database " + redacted_url(arguments.db) + ": " +
                                                   std::string(without_prefix(failure.what())) + "; check --db");
    } catch (const sql::DatabaseError& failure) {
        const std::string_view what = failure.what();
        if (failure.code() == "42P01" || what.find("no such table") != std::string_view::npos)
            throw CommandFailed(Exit::not_found,
                                "the database " + redacted_url(arguments.db) + " has no outbox table " +
                                    quoted_name(arguments.store.table) +
                                    ": give its name with --table, or create it with the statements of `acemq "
                                    "schema-ddl`");
        throw;
    }
}

void outbox_status(const Context& context, const OutboxArguments& arguments) {
    with_outbox(arguments, [&](SqlOutboxStore& store) {
        const OutboxCounts counts = store.counts();
        std::optional<std::chrono::milliseconds> oldest;
        if (counts.oldest_pending)
            oldest = std::max(std::chrono::milliseconds(0), epoch_millis_now() - *counts.oldest_pending);
        Table table({{"FIELD"}, {"VALUE", Align::left, 200}});
        table.add({"table", store.table()});
        table.add({"pending", count_text(counts.pending)});
        table.add({"failing", count_text(counts.failing)});
        table.add({"retired", count_text(counts.retired)});
        table.add({"oldest pending", age_text(oldest)});
        print_answer(
            context, table,
            Value(Value::Map{{"table", store.table()},
                             {"pending", std::uint64_t{counts.pending}},
                             {"failing", std::uint64_t{counts.failing}},
                             {"retired", std::uint64_t{counts.retired}},
                             {"maxAttempts", std::int64_t{arguments.store.max_attempts}},
                             {"oldestPendingAgeMs",
                              optional_value(oldest ? std::optional<std::int64_t>(oldest->count()) : std::nullopt)}}));
    });
}

void outbox_retired(const Context& context, const OutboxArguments& arguments) {
    with_outbox(arguments, [&](SqlOutboxStore& store) {
        Table table({{"ID"},
                     {"ATTEMPTS", Align::right},
                     {"CREATED"},
                     {"EXCHANGE"},
                     {"ROUTING KEY"},
                     {"LAST ERROR", Align::left, 80}});
        Value::Array document;
        for (const OutboxRecord& record : store.retired()) {
            const std::string created = time_text(std::chrono::system_clock::time_point(record.created_at));
            const std::string error = record.unreadable.empty() ? record.last_error : record.unreadable;
            table.add({record.id, count_text(static_cast<std::uint64_t>(record.attempts)), created, record.exchange,
                       record.routing_key, error});
            document.emplace_back(Value::Map{{"id", record.id},
                                             {"attempts", std::int64_t{record.attempts}},
                                             {"createdAt", created},
                                             {"exchange", record.exchange},
                                             {"routingKey", record.routing_key},
                                             {"lastError", record.last_error},
                                             {"unreadable", record.unreadable}});
        }
        print_answer(context, table, Value(std::move(document)));
    });
}

void outbox_release(const Context& context, const OutboxArguments& arguments) {
    with_outbox(arguments, [&](SqlOutboxStore& store) {
        if (!store.release_retired(arguments.id))
            throw CommandFailed(Exit::not_found, "no retired record " + quoted_name(arguments.id) + " in " +
                                                     quoted_name(store.table()) +
                                                     ": `acemq outbox retired` lists the retired records");
        print_note(context, "released " + printable(arguments.id) +
                                ": pending again with its attempts reset, the relay sends it on its next sweep");
    });
}

void print_schema(const Context& context, const std::string& dialect, const SchemaNames& names) {
    const auto statements = schema_ddl(dialect == "postgres" ? sql::Dialect::postgres : sql::Dialect::sqlite, names);
    if (context.json) {
        Value::Array document;
        for (const std::string& statement : statements) document.emplace_back(statement);
        std::printf("%s\n", pretty_json(Value(std::move(document))).c_str());
    } else {
        for (std::size_t i = 0; i < statements.size(); ++i)
            std::printf("%s%s;\n", i == 0 ? "" : "\n", statements[i].c_str());
    }
    std::fflush(stdout);
}

}  // namespace

void add_store_commands(CLI::App& app, const Context& context) {
    auto arguments = std::make_shared<OutboxArguments>();
    CLI::App* outbox = app.add_subcommand("outbox", "the SQL outbox store's table: counts, retired records, release");
    outbox->require_subcommand(1);
    outbox->fallthrough();
    outbox
        ->add_option("--db", arguments->db,
                     "the database: a SQLite file (PATH or sqlite:PATH) or postgresql://USER@HOST/DB (the password "
                     "is never printed back)")
        ->envname("ACEMQ_OUTBOX_DB");
    outbox->add_option("--table", arguments->store.table, "the outbox table")->capture_default_str();
    outbox
        ->add_option("--max-attempts", arguments->store.max_attempts,
                     "the relay's max_attempts: a record that failed this often is retired")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    outbox->add_subcommand("status", "pending, failing and retired records, and the oldest pending one's age")
        ->callback([&context, arguments] { outbox_status(context, *arguments); });
    outbox->add_subcommand("retired", "the retired records: id, attempts, last error")->callback([&context, arguments] {
        outbox_retired(context, *arguments);
    });
    CLI::App* release = outbox->add_subcommand("release", "put the retired record ID back to pending (attempts 0)");
    release->add_option("ID", arguments->id, "the record's id (the message id)")->required();
    release->callback([&context, arguments] { outbox_release(context, *arguments); });

    auto dialect = std::make_shared<std::string>();
    auto names = std::make_shared<SchemaNames>();
    CLI::App* ddl = app.add_subcommand(
        "schema-ddl",
        "the statements creating the stores' tables (idempotency, outbox, schema registry, and on request claims)");
    ddl->add_option("--dialect", *dialect, "sqlite or postgres")
        ->required()
        ->check(CLI::IsMember({"sqlite", "postgres"}));
    ddl->add_option("--idempotency-table", *names->idempotency, "the idempotency table")->capture_default_str();
    ddl->add_option("--outbox-table", *names->outbox, "the outbox table")->capture_default_str();
    ddl->add_option("--registry-table", *names->registry, "the schema registry's table")->capture_default_str();
    auto claims = std::make_shared<std::string>();
    ddl->add_option("--claims-table", *claims,
                    "the claim-check payloads' table (SqlClaimCheckStore), left out unless named");
    ddl->callback([&context, dialect, names, claims] {
        if (!claims->empty()) names->claims = *claims;
        print_schema(context, *dialect, *names);
    });
}

}  // namespace acemq::cli
