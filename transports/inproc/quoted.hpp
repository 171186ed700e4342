// How the inproc broker's errors show a name: in double quotes, so an empty one is visible.
#pragma once

#include <string>
#include <string_view>

namespace acemq::inproc::detail {

inline std::string in_quotes(std::string_view name) { return "\"" + std::string(name) + "\""; }

// How the broker's errors name it: `inproc broker "NAME"`. The zmq client names the broker
// at its URL instead in the texts the broker sends it, by finding this.
inline std::string broker_in_errors(std::string_view name) { return "inproc broker " + in_quotes(name); }

}  // namespace acemq::inproc::detail
