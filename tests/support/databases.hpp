// What the SQL store tests share about their databases: the PostgreSQL server to use and
// names that parallel runs on one server do not share.
#pragma once

#include <catch2/catch.hpp>

#include <acemq/uuid.hpp>

#include <cstdlib>
#include <string>

namespace testing_support {

// The server named by ACEMQ_TEST_POSTGRES_URL; fails the test when none is: the PostgreSQL
// tests are never skipped.
inline std::string postgres_url() {
    const char* url = std::getenv("ACEMQ_TEST_POSTGRES_URL");
    if (url == nullptr || *url == '\0')
        FAIL(
            "ACEMQ_TEST_POSTGRES_URL is not set: the PostgreSQL tests need a server. Run scripts/test, which starts "
            "a throw-away one and sets it, or set it yourself, e.g. postgresql://postgres@127.0.0.1:5442/postgres");
    return url;
}

// 12 random hex digits for table and file names.
inline std::string unique_suffix() {
    std::string suffix = acemq::new_uuid().substr(0, 13);
    std::erase(suffix, '-');
    return suffix;
}

}  // namespace testing_support
