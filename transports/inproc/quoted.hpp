// How the inproc broker's errors show a name: the library's way (lib/quoted_text.hpp), in
// double quotes so an empty one is visible, escaped and bounded as a client may send anything.
#pragma once

#include "quoted_text.hpp"

namespace acemq::inproc::detail {

using acemq::detail::in_quotes;

}  // namespace acemq::inproc::detail
