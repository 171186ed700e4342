// How the inproc broker's errors show a name: in double quotes, so an empty one is visible.
#pragma once

#include <string>
#include <string_view>

namespace acemq::inproc::detail {

inline std::string in_quotes(std::string_view name) { return "\"" + std::string(name) + "\""; }

}  // namespace acemq::inproc::detail
