#include "zmq/keys.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <zmq.h>

#include <acemq/error.hpp>
#include <acemq/zmq.hpp>

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
    struct stat status {};
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

KeyFiles generate_key_pair(const std::filesystem::path& base) {
    require_curve();
    char public_key[z85_key_length + 1], secret_key[z85_key_length + 1];
    if (zmq_curve_keypair(public_key, secret_key) != 0)
        throw InvalidArgument("acemq: libzmq could not make a CurveZMQ key pair");
    const KeyFiles files{base.string() + ".pub", base.string() + ".key"};
    // Created exclusively (never over an existing key) and, for the secret, 0600 from the start.
    const auto write = [](const std::filesystem::path& file, const char* key, mode_t mode) {
        const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0)
            throw InvalidArgument(
                "acemq: cannot create the key file " + file.string() + ": " + std::strerror(errno) +
                (errno == EEXIST ? " (keys are never overwritten; remove it or choose another name)" : ""));
        const std::string line = std::string(key) + "\n";
        const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
        ::close(fd);
        if (!written) throw InvalidArgument("acemq: cannot write the key file " + file.string());
    };
    if (std::filesystem::exists(files.public_key))
        throw InvalidArgument("acemq: the key file " + files.public_key.string() +
                              " exists already (keys are never overwritten; remove it or choose another name)");
    write(files.secret_key, secret_key, 0600);
    write(files.public_key, public_key, 0644);
    return files;
}

}  // namespace acemq::zmq
