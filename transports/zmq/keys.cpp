#include "zmq/keys.hpp"

#include <sys/stat.h>

#include <fstream>

#include <zmq.h>

#include <acemq/error.hpp>

namespace acemq::zmq {

namespace {

constexpr std::size_t z85_key_length = 40;

std::string read_key(const std::filesystem::path& file, std::string_view what) {
    std::ifstream in(file);
    if (!in)
        throw InvalidArgument("acemq: cannot read the CurveZMQ " + std::string(what) + " file " + file.string() +
                              ": it is missing or not readable");
    std::string key;
    std::getline(in, key);
    while (!key.empty() && (key.back() == '\r' || key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::uint8_t binary[32];
    if (key.size() != z85_key_length || zmq_z85_decode(binary, key.c_str()) == nullptr)
        throw InvalidArgument("acemq: the CurveZMQ " + std::string(what) + " file " + file.string() +
                              " does not hold a key (40 Z85 characters on its first line, as acemq-broker "
                              "--generate-keys writes)");
    return key;
}

void require_curve() {
    if (!zmq_has("curve"))
        throw InvalidArgument("acemq: this libzmq was built without CurveZMQ; install one with it (Debian's has it)");
}

}  // namespace

std::string read_public_key(const std::filesystem::path& file) {
    require_curve();
    return read_key(file, "public key");
}

std::string read_secret_key(const std::filesystem::path& file) {
    require_curve();
    struct stat status{};
    if (::stat(file.c_str(), &status) == 0 && (status.st_mode & (S_IRWXG | S_IRWXO)) != 0)
        throw InvalidArgument("acemq: the CurveZMQ secret key file " + file.string() +
                              " can be read by others; chmod 600 it");
    return read_key(file, "secret key");
}

std::string public_key_of(const std::string& secret_z85) {
    char public_key[z85_key_length + 1];
    if (zmq_curve_public(public_key, secret_z85.c_str()) != 0)
        throw InvalidArgument("acemq: the CurveZMQ secret key given is not one");
    return public_key;
}

}  // namespace acemq::zmq
