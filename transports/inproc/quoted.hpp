// How the inproc broker's errors show a name: the library's way (lib/codec/quoted_text.hpp), in
// double quotes so an empty one is visible, escaped and bounded as a client may send anything.
#pragma once

#include "quoted_text.hpp"

namespace acemq::inproc::detail {

using acemq::detail::in_quotes;

// How the broker's errors name it: `inproc broker "NAME"`. The zmq client names the broker
// at its URL instead in the texts the broker sends it, by finding this.
inline std::string broker_in_errors(std::string_view name) { return "inproc broker " + in_quotes(name); }

}  // namespace acemq::inproc::detail
