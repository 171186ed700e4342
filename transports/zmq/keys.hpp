#pragma once
#include <filesystem>
#include <string>
namespace acemq::zmq {
std::string read_public_key(const std::filesystem::path& file);
std::string read_secret_key(const std::filesystem::path& file);
std::string public_key_of(const std::string& secret_z85);
}  // namespace acemq::zmq
