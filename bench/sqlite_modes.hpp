// The two SQLite durability settings the SQLite benchmarks show side by side: the driver's
// option and the pragma the raw sqlite3 side runs for the same setting, so that every row
// of figures compares like with like.
#pragma once

#include <acemq/stores/sqlite.hpp>

namespace bench {

struct SyncMode {
    acemq::sqlite::Synchronous driver;
    const char* name;    // as in "synchronous=FULL"
    const char* pragma;  // what the raw side runs
};

// FULL first: it is the driver's default.
inline constexpr SyncMode sync_modes[] = {
    {acemq::sqlite::Synchronous::full, "FULL", "PRAGMA synchronous = FULL"},
    {acemq::sqlite::Synchronous::normal, "NORMAL", "PRAGMA synchronous = NORMAL"},
};

}  // namespace bench
