// Endpoints and URLs: which a broker may bind, and the ZeroMQ endpoint a client URL names.
// Internal.
#pragma once

#include <string>
#include <string_view>

namespace acemq::zmq {

// InvalidArgument unless `endpoint` is tcp://HOST:PORT or ipc:///PATH, and (without
// allow_remote) a tcp host is a loopback address.
void check_bind_endpoint(std::string_view endpoint, bool allow_remote);

// What libzmq binds for an endpoint check_bind_endpoint accepted: the same, but
// tcp://localhost:PORT becomes tcp://127.0.0.1:PORT, since libzmq takes a bind's host for
// an address or an interface name and never resolves it.
std::string bind_endpoint(std::string_view endpoint);

// "zmq+tcp://127.0.0.1:5680" → "tcp://127.0.0.1:5680", "zmq+ipc:///run/b.sock" →
// "ipc:///run/b.sock"; InvalidArgument naming what is wrong otherwise.
std::string endpoint_of_url(std::string_view url);

}  // namespace acemq::zmq
