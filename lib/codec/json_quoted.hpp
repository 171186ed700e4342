// Internal: one way of writing a JSON string, shared by the JSON codec and the health
// reports.
#pragma once

#include <string>
#include <string_view>

namespace acemq::detail {

// `text` as a JSON string, quoted and escaped as JsonCodec writes strings (no UTF-8 check).
std::string json_quoted(std::string_view text);

}  // namespace acemq::detail
