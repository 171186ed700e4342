#include "zmq/keys.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include <zmq.h>

namespace acemq::zmq {

namespace {

constexpr std::size_t z85_key_length = 40;
constexpr std::string_view z85_alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
// A key file is a line; anything much longer is not one, and is not read into memory whole.
constexpr std::size_t max_key_file_bytes = 4096;

std::string quoted(const std::filesystem::path& file) { return "\"" + file.string() + "\""; }

std::string errno_text(int error) { return std::generic_category().message(error); }

// Secret keys are wiped from buffers that go out of scope, so a core dump holds fewer copies.
void wipe(void* data, std::size_t size) noexcept { explicit_bzero(data, size); }

class Fd {
public:
    explicit Fd(int fd) noexcept : fd_(fd) {}
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&&) = delete;
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const noexcept { return fd_; }
    // close(2) can report a write that did not reach the file; the caller must hear of it.
    int close() noexcept {
        int result = ::close(fd_);
        fd_ = -1;
        return result;
    }

private:
    int fd_;
};

bool is_z85_key(std::string_view text) {
    if (text.size() != z85_key_length) return false;
    if (text.find_first_not_of(z85_alphabet) != std::string_view::npos) return false;
    // Some 5-character groups of the alphabet are larger than 32 bits; libzmq refuses those.
    std::array<std::uint8_t, 32> bytes{};
    const std::string terminated(text);
    const bool decoded = zmq_z85_decode(bytes.data(), terminated.c_str()) != nullptr;
    wipe(bytes.data(), bytes.size());
    return decoded;
}

std::string read_key(const std::filesystem::path& file, bool secret) {
    const std::string what = secret ? "the CurveZMQ secret key file " : "the CurveZMQ public key file ";
    Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (fd.get() < 0) {
        const int error = errno;
        if (error == ENOENT)
            throw InvalidArgument("acemq: " + what + quoted(file) +
                                  " does not exist: give the path of a file written by acemq-broker --generate-keys");
        throw InvalidArgument("acemq: cannot read " + what + quoted(file) + ": " + errno_text(error) +
                              "; check the path and its permissions");
    }
    struct stat status {};
    if (::fstat(fd.get(), &status) != 0)
        throw InvalidArgument("acemq: cannot read " + what + quoted(file) + ": " + errno_text(errno));
    if (!S_ISREG(status.st_mode))
        throw InvalidArgument("acemq: " + what + quoted(file) + " is not a regular file: give the path of a key file");
    if (secret && (status.st_mode & (S_IRGRP | S_IROTH)) != 0)
        throw InvalidArgument("acemq: " + what + quoted(file) + " is readable by others; chmod 600 it");

    std::array<char, max_key_file_bytes + 1> buffer{};
    std::size_t size = 0;
    while (size < buffer.size()) {
        const ssize_t got = ::read(fd.get(), buffer.data() + size, buffer.size() - size);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            const int error = errno;
            wipe(buffer.data(), buffer.size());
            throw InvalidArgument("acemq: cannot read " + what + quoted(file) + ": " + errno_text(error));
        }
        if (got == 0) break;
        size += static_cast<std::size_t>(got);
    }
    std::string_view text(buffer.data(), size);
    const auto end = text.find_last_not_of(" \t\r\n");
    text = end == std::string_view::npos ? std::string_view{} : text.substr(0, end + 1);
    const bool valid = is_z85_key(text);
    std::string key = valid ? std::string(text) : std::string{};
    wipe(buffer.data(), buffer.size());
    if (!valid)
        throw InvalidArgument("acemq: " + what + quoted(file) + " does not hold a key: a key file holds the " +
                              std::to_string(z85_key_length) +
                              " characters of a Z85 key, as acemq-broker --generate-keys writes it");
    return key;
}

// Creates `file`, failing if it exists: a key file is never overwritten.
Fd create_exclusive(const std::filesystem::path& file, mode_t mode) {
    Fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, mode));
    if (fd.get() < 0) {
        const int error = errno;
        if (error == EEXIST)
            throw InvalidArgument("acemq: the key file " + quoted(file) +
                                  " exists already and is never overwritten: choose another name or remove it");
        throw InvalidArgument("acemq: cannot create the key file " + quoted(file) + ": " + errno_text(error) +
                              "; check the directory exists and is writable");
    }
    return fd;
}

void write_key(Fd& fd, const std::filesystem::path& file, std::string_view key) {
    std::string line(key);
    line += '\n';
    std::size_t written = 0;
    int error = 0;
    while (written < line.size()) {
        const ssize_t done = ::write(fd.get(), line.data() + written, line.size() - written);
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) {
            error = errno;
            break;
        }
        written += static_cast<std::size_t>(done);
    }
    if (error == 0 && ::fsync(fd.get()) != 0) error = errno;
    if (fd.close() != 0 && error == 0) error = errno;
    wipe(line.data(), line.size());
    if (error != 0)
        throw InvalidArgument("acemq: cannot write the key file " + quoted(file) + ": " + errno_text(error));
}

}  // namespace

void require_curve() {
    if (zmq_has("curve") == 0)
        throw InvalidArgument(
            "acemq: this libzmq was built without CurveZMQ (zmq_has(\"curve\") is false): install a libzmq built "
            "with libsodium (Debian's libzmq5 is), or leave the curve options out");
}

std::string read_public_key(const std::filesystem::path& file) {
    require_curve();
    return read_key(file, false);
}

std::string read_secret_key(const std::filesystem::path& file) {
    require_curve();
    return read_key(file, true);
}

std::string public_key_of(const std::string& secret_z85) {
    require_curve();
    if (!is_z85_key(secret_z85))
        throw InvalidArgument("acemq: a CurveZMQ secret key must be the " + std::to_string(z85_key_length) +
                              " characters of a Z85 key");
    std::array<char, z85_key_length + 1> public_key{};
    if (zmq_curve_public(public_key.data(), secret_z85.c_str()) != 0)
        throw InvalidArgument("acemq: libzmq cannot derive a public key from the CurveZMQ secret key given: " +
                              errno_text(errno));
    return std::string(public_key.data(), z85_key_length);
}

KeyFiles generate_key_pair(const std::filesystem::path& base) {
    require_curve();
    KeyFiles files{std::filesystem::path(base) += ".pub", std::filesystem::path(base) += ".key"};
    // Both are created before either is written, so an existing one leaves nothing behind.
    Fd public_fd = create_exclusive(files.public_key, 0644);
    std::optional<Fd> secret_fd;
    try {
        secret_fd.emplace(create_exclusive(files.secret_key, 0600));
    } catch (const InvalidArgument&) {
        ::unlink(files.public_key.c_str());
        throw;
    }
    std::array<char, z85_key_length + 1> public_key{};
    std::array<char, z85_key_length + 1> secret_key{};
    try {
        if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0)
            throw InvalidArgument("acemq: libzmq could not make a CurveZMQ key pair: " + errno_text(errno));
        write_key(*secret_fd, files.secret_key, std::string_view(secret_key.data(), z85_key_length));
        write_key(public_fd, files.public_key, std::string_view(public_key.data(), z85_key_length));
    } catch (const InvalidArgument&) {
        wipe(secret_key.data(), secret_key.size());
        ::unlink(files.secret_key.c_str());
        ::unlink(files.public_key.c_str());
        throw;
    }
    wipe(secret_key.data(), secret_key.size());
    return files;
}

}  // namespace acemq::zmq
