// Statements are written with `?` placeholders (acemq/sql.hpp); libpq wants $1, $2, ....
// rewrite_placeholders turns each `?` that is a placeholder into the next $n and leaves
// alone every `?` inside a string literal ('...', E'...', $$...$$, $tag$...$tag$), a quoted
// identifier ("...") or a comment (-- ..., /* ... */, which nest in PostgreSQL).
// Consequence: PostgreSQL's jsonb operators ?, ?| and ?& cannot be written as such; use the
// functions jsonb_exists, jsonb_exists_any and jsonb_exists_all. Pure function; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace acemq::postgres {

struct Rewritten {
    std::string text;
    int parameters = 0;  // how many placeholders were found
};

Rewritten rewrite_placeholders(std::string_view statement);

}  // namespace acemq::postgres
