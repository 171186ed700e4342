// A process registering schemas, for the registry's race between processes
// (test_sql_schema_registry.cpp):
//
//   registry_worker <sqlite|postgres> <database file or URL> <table> <schemas>
//
// Waits for a line on standard input (so that every worker is started before any
// registers), then registers <schemas> schemas, one a subject ("race.1", "race.2", ...), on a
// SqlSchemaRegistry of its own and prints each one's id and version, a line each
// ("<id> v<version>"). Exits 0 when done, 1 with a line on stdout when anything failed.
#include <acemq/stores/postgres.hpp>
#include <acemq/stores/sql_schema_registry.hpp>
#include <acemq/stores/sqlite.hpp>

#include <exception>
#include <iostream>
#include <memory>
#include <string>

int main(int argc, char** argv) {
    if (argc != 5) {
        std::cout << "usage: registry_worker <sqlite|postgres> <database file or URL> <table> <schemas>\n";
        return 1;
    }
    try {
        const std::string driver = argv[1];
        std::unique_ptr<acemq::sql::Database> database;
        if (driver == "sqlite")
            database = std::make_unique<acemq::sqlite::Database>(argv[2]);
        else
            database = std::make_unique<acemq::postgres::Database>(argv[2]);
        acemq::SqlSchemaRegistry registry{*database, {.table = argv[3]}};
        const int schemas = std::stoi(argv[4]);
        std::string go;
        std::getline(std::cin, go);
        for (int i = 1; i <= schemas; ++i) {
            const std::string number = std::to_string(i);
            const acemq::SchemaDefinition schema = registry.register_schema(
                "race." + number, "avro", R"({"type":"record","name":"Race)" + number + R"(","fields":[]})");
            std::cout << schema.id << " v" << schema.version << '\n';
        }
        return 0;
    } catch (const std::exception& error) {
        std::cout << "registry_worker failed: " << error.what() << '\n';
        return 1;
    }
}
