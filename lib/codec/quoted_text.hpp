// Internal: how the library's errors and log lines show text it was handed — a message id, a
// content type, a header value, an idempotency key, a name. A sender controls much of it, so
// it is shown escaped (nothing it holds can move a terminal's cursor, forge a log line or
// break the UTF-8 of an x-acemq-error header) and cut to a bounded length (a 100 KB id is not
// printed whole into every line that names it). Thread-safe (pure).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace acemq::detail {

// How many bytes of a text are shown before it is cut.
inline constexpr std::size_t shown_text_limit = 256;

// `text` in double quotes, so that an empty one is visible: "orders.new". A '"' or '\' in it
// is written \" or \\; control characters (DEL included) and bytes that are not well-formed
// UTF-8 as \xNN; other UTF-8 as it is. Past `limit` bytes (at a character boundary) it is
// cut with "…" and its whole length: "abc…" (100000 bytes).
std::string in_quotes(std::string_view text, std::size_t limit = shown_text_limit);

// The same without the quotes (a '"' stays as it is), for the sentences that show a text bare:
// "message 7f3c… from queue", "cannot decode an Order from application/msgpack".
std::string shown_text(std::string_view text, std::size_t limit = shown_text_limit);

// Where to cut `text` to at most `size` bytes without splitting a UTF-8 character: `size`,
// or up to three bytes before it when a character's continuation bytes start there.
std::size_t character_boundary(std::string_view text, std::size_t size);

}  // namespace acemq::detail
