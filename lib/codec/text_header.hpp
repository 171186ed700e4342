// A header read as text, the way the family's patterns read their own headers (a reply
// address, the scheduler's target): text or bytes that are UTF-8, else nothing. Internal.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <acemq/field.hpp>

namespace acemq::detail {

// nullopt when `name` is absent or its value is not text.
inline std::optional<std::string> text_header(const Headers& headers, std::string_view name) {
    const auto found = headers.find(name);
    if (found == headers.end()) return std::nullopt;
    return found->second.as_text();
}

}  // namespace acemq::detail
