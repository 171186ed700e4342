// The transports compiled into this library, by URL scheme: the table connect() starts from
// (transports/builtin_transports.cpp fills it, for the parts this build holds). A table,
// not static registrations, so a static or shared libacemq finds them however it is linked.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <acemq/management.hpp>
#include <acemq/transport.hpp>

namespace acemq::detail {

std::vector<std::pair<std::string, TransportFactory>> builtin_transports();
// The same for open_management.
std::vector<std::pair<std::string, ManagementFactory>> builtin_management();

}  // namespace acemq::detail
