// The broker's side of the management calls (docs/zmq-protocol.md §11): each is carried out
// through inproc::manage of the served broker and answered as the protocol says. Internal;
// runs on the server's I/O thread.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <acemq/management.hpp>

#include "zmq/management_wire.hpp"

namespace acemq::zmq {

// The answer to `request`: a reply with its result; a refusal for a ManagementError, by its
// reason. Any other error is thrown, for the caller to answer as a failure. info() is the
// broker's with the product "acemq-broker" and `server_details` appended to its details; a
// browse answer holds what fits in `max_frame_bytes` (docs/zmq-protocol.md §11.3).
msgpack::sbuffer answer_management(Management& management, const wire::ManageRequest& request,
                                   std::size_t max_frame_bytes,
                                   const std::vector<std::pair<std::string, std::string>>& server_details);

}  // namespace acemq::zmq
