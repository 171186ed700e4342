// CurveZMQ key files, as <acemq/zmq.hpp> describes them: NAME.pub and NAME.key, each the 40
// characters of a Z85 key. The server and the client transport read them here, so both
// refuse the same files with the same words. Internal; generate_key_pair is public.
#pragma once

#include <filesystem>
#include <string>

#include <acemq/zmq.hpp>

namespace acemq::zmq {

// Throws InvalidArgument when this libzmq was built without CurveZMQ.
void require_curve();

// The Z85 text of the key in `file` (trailing whitespace dropped). InvalidArgument, naming
// the file and never what it holds, when it is missing, unreadable or not a Z85 key; a
// secret key file that its group or others can read is refused too.
std::string read_public_key(const std::filesystem::path& file);
std::string read_secret_key(const std::filesystem::path& file);

// The public key (Z85) that belongs to a secret key (Z85). InvalidArgument when it is not one.
std::string public_key_of(const std::string& secret_z85);

}  // namespace acemq::zmq
