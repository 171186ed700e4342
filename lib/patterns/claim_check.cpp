#include <acemq/claim_check.hpp>

#include <acemq/ack.hpp>
#include <acemq/error.hpp>
#include <acemq/uuid.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

#include "quoted_text.hpp"

namespace acemq {

namespace {

constexpr std::byte magic{0xAC};
constexpr std::byte version{0x01};
constexpr std::byte inline_kind{0x00};
constexpr std::byte claimed_kind{0x01};
constexpr std::size_t header_size = 3;

std::optional<std::byte> kind_of(std::span<const std::byte> body) noexcept {
    if (body.size() < header_size || body[0] != magic || body[1] != version) return std::nullopt;
    if (body[2] != inline_kind && body[2] != claimed_kind) return std::nullopt;
    return body[2];
}

std::string errno_text(int error) { return std::generic_category().message(error); }

// The shape a file name may have here, checked before a key reaches the file system.
bool is_store_key(std::string_view key) noexcept {
    const auto word = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (key.empty() || key.size() > 128 || !word(key[0])) return false;
    for (char c : key)
        if (!word(c) && c != '.' && c != '_' && c != '-') return false;
    return true;
}

std::filesystem::path file_of(const std::filesystem::path& directory, std::string_view key) {
    check_claim_key(key);
    return directory / std::string(key);
}

StoreUnavailableError file_failure(const char* doing, const std::filesystem::path& file, int error) {
    return StoreUnavailableError("acemq: cannot " + std::string(doing) + " the claim-check payload " +
                                 detail::in_quotes(file.string()) + ": " + errno_text(error));
}

class Fd {
public:
    explicit Fd(int fd) noexcept : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const noexcept { return fd_; }
    int close() noexcept { return ::close(std::exchange(fd_, -1)); }

private:
    int fd_;
};

}  // namespace

std::string InMemoryClaimCheckStore::put(std::span<const std::byte> payload) {
    std::string key = new_uuid();
    std::vector<std::byte> copy(payload.begin(), payload.end());
    const std::lock_guard lock(mutex_);
    payloads_.emplace(key, std::move(copy));
    return key;
}

std::optional<std::vector<std::byte>> InMemoryClaimCheckStore::get(std::string_view key) const {
    const std::lock_guard lock(mutex_);
    const auto found = payloads_.find(key);
    if (found == payloads_.end()) return std::nullopt;
    return found->second;
}

void InMemoryClaimCheckStore::remove(std::string_view key) {
    const std::lock_guard lock(mutex_);
    if (const auto found = payloads_.find(key); found != payloads_.end()) payloads_.erase(found);
}

std::size_t InMemoryClaimCheckStore::size() const {
    const std::lock_guard lock(mutex_);
    return payloads_.size();
}

void InMemoryClaimCheckStore::clear() {
    const std::lock_guard lock(mutex_);
    payloads_.clear();
}

FilesystemClaimCheckStore::FilesystemClaimCheckStore(std::filesystem::path directory)
    : directory_(std::move(directory)) {
    std::error_code error;
    std::filesystem::create_directories(directory_, error);
    if (error)
        throw InvalidArgument("acemq: cannot create the claim-check directory " +
                              detail::in_quotes(directory_.string()) + ": " + error.message() +
                              "; check its parent exists and is writable");
}

std::string FilesystemClaimCheckStore::put(std::span<const std::byte> payload) {
    std::string key = new_uuid();
    const std::filesystem::path file = directory_ / key;
    const std::filesystem::path partial = directory_ / (key + ".partial");
    Fd fd(::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600));
    int error = fd.get() < 0 ? errno : 0;
    for (std::size_t written = 0; error == 0 && written < payload.size();) {
        const ssize_t done = ::write(fd.get(), payload.data() + written, payload.size() - written);
        if (done < 0 && errno == EINTR) continue;
        if (done < 0)
            error = errno;
        else
            written += static_cast<std::size_t>(done);
    }
    if (error == 0 && ::fsync(fd.get()) != 0) error = errno;
    if (error == 0 && fd.close() != 0) error = errno;
    // The rename is what makes the payload visible: a reader finds it whole or not at all.
    if (error == 0 && ::rename(partial.c_str(), file.c_str()) != 0) error = errno;
    if (error != 0) {
        ::unlink(partial.c_str());
        throw StoreUnavailableError("acemq: cannot keep a claim-check payload in " +
                                    detail::in_quotes(directory_.string()) + ": " + errno_text(error) +
                                    "; check the directory is writable and has room");
    }
    return key;
}

std::optional<std::vector<std::byte>> FilesystemClaimCheckStore::get(std::string_view key) const {
    const std::filesystem::path file = file_of(directory_, key);
    const Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() < 0) {
        const int error = errno;
        if (error == ENOENT) return std::nullopt;
        throw file_failure("read", file, error);
    }
    std::vector<std::byte> payload;
    std::byte buffer[65536];
    for (;;) {
        const ssize_t done = ::read(fd.get(), buffer, sizeof buffer);
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) throw file_failure("read", file, errno);
        if (done == 0) return payload;
        payload.insert(payload.end(), buffer, buffer + done);
    }
}

void FilesystemClaimCheckStore::remove(std::string_view key) {
    const std::filesystem::path file = file_of(directory_, key);
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) throw file_failure("remove", file, errno);
}

ClaimCheckCodec::ClaimCheckCodec(std::shared_ptr<const Codec> delegate, std::shared_ptr<ClaimCheckStore> store,
                                 std::size_t threshold)
    : delegate_(std::move(delegate)), store_(std::move(store)), threshold_(threshold) {
    if (!delegate_) throw InvalidArgument("acemq: ClaimCheckCodec needs a codec to write the payload with, not null");
    if (!store_) throw InvalidArgument("acemq: ClaimCheckCodec needs a store for large payloads, not null");
}

std::vector<std::byte> ClaimCheckCodec::frame(std::vector<std::byte> payload) const {
    const bool claimed = payload.size() >= threshold_;
    const std::string key = claimed ? store_->put(payload) : std::string();
    const std::span<const std::byte> rest =
        claimed ? std::as_bytes(std::span(key.data(), key.size())) : std::span<const std::byte>(payload);
    std::vector<std::byte> body(header_size + rest.size());
    body[0] = magic;
    body[1] = version;
    body[2] = claimed ? claimed_kind : inline_kind;
    if (!rest.empty()) std::memcpy(body.data() + header_size, rest.data(), rest.size());
    return body;
}

std::vector<std::byte> ClaimCheckCodec::encode(ValueSource source) const { return frame(delegate_->encode(source)); }

std::vector<std::byte> ClaimCheckCodec::encode(const Value& value) const { return frame(delegate_->encode(value)); }

Value ClaimCheckCodec::decode(std::span<const std::byte> body, std::string_view content_type) const {
    const std::optional<std::byte> kind = kind_of(body);
    if (!kind) return delegate_->decode(body, content_type);
    if (*kind == inline_kind) return delegate_->decode(body.subspan(header_size), content_type);
    const std::string key(reinterpret_cast<const char*>(body.data()) + header_size, body.size() - header_size);
    std::optional<std::vector<std::byte>> payload;
    try {
        payload = store_->get(key);
    } catch (const InvalidArgument& e) {
        throw DecodeError(std::string("acemq: the claim check's key cannot be looked up: ") +
                          std::string(without_prefix(e.what())));
    } catch (const StoreUnavailableError&) {
        throw;
    } catch (const DecodeError&) {
        throw;
    } catch (const std::exception& e) {
        // A store of the application's, written without StoreUnavailableError: whatever else it
        // throws is the store failing, not the body, and is worth another attempt.
        throw StoreUnavailableError("acemq: the claim-check store failed to read the payload " +
                                    detail::in_quotes(key) + ": " + describe(e));
    }
    if (!payload)
        throw DecodeError("acemq: the claimed payload " + detail::in_quotes(key) +
                          " is not in the store: it was removed or outlived the store's retention, or this consumer "
                          "reads another store than the publisher wrote to");
    return delegate_->decode(*payload, content_type);
}

void check_claim_key(std::string_view key) {
    if (!is_store_key(key))
        throw InvalidArgument(
            "acemq: " + detail::in_quotes(key) +
            " is not a key this claim-check store issued (keys are [A-Za-z0-9][A-Za-z0-9._-]{0,127}); "
            "the message carrying it was not written through this store");
}

std::optional<std::string> claim_key_of(std::span<const std::byte> body) {
    if (kind_of(body) != claimed_kind) return std::nullopt;
    return std::string(reinterpret_cast<const char*>(body.data()) + header_size, body.size() - header_size);
}

bool is_claim_check(std::span<const std::byte> body) noexcept { return kind_of(body).has_value(); }

}  // namespace acemq
