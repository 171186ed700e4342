// Claim check, the family's framing (docs/wire-contract.md §8.2): ClaimCheckCodec keeps a large
// body out of the broker. It encodes with its delegate; a result of `threshold` bytes or more
// goes to a ClaimCheckStore and the message carries only the key, anything smaller travels
// inline.
//
//   auto store = std::make_shared<acemq::FilesystemClaimCheckStore>("/var/lib/app/claims");
//   auto codec = std::make_shared<acemq::ClaimCheckCodec>(std::make_shared<acemq::JsonCodec>(), store);
//
// On the wire: 0xAC 0x01 0x00 and the delegate's bytes (inline), or 0xAC 0x01 0x01 and the
// store's key as bare UTF-8 (claimed). The content type stays the delegate's. A body without
// that header is handed to the delegate untouched, so the codec can be turned on while a
// queue still holds messages written without it. The codec never deletes from the store: a
// claimed payload lives until the application removes it or its retention does.
//
// Reading a key the store does not have (expired, deleted, or never this store's), or one it
// refuses as no key it could have issued (`../../etc/passwd`), is a DecodeError: the message is
// parked, never retried. A store that fails while it is read (a disk error, a database that is
// down) is a StoreUnavailableError: the message is retried as the consumer's retry policy says,
// as if its handler had thrown (docs/wire-contract.md §8.2).
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/codec.hpp>

namespace acemq {

// Where claimed payloads are kept. Implementations are thread-safe. A store of your own throws
// StoreUnavailableError when it cannot do what it is asked (ClaimCheckCodec reads any other
// exception from get, but InvalidArgument and DecodeError, as that too).
class ClaimCheckStore {
public:
    virtual ~ClaimCheckStore() = default;
    // Keeps a copy of `payload` and returns the key it is found by.
    virtual std::string put(std::span<const std::byte> payload) = 0;
    // The payload kept under `key`, or nothing when there is none. Throws InvalidArgument for a
    // key this store could not have issued (see check_claim_key).
    virtual std::optional<std::vector<std::byte>> get(std::string_view key) const = 0;
    // Forgets `key`; a key already gone is no error.
    virtual void remove(std::string_view key) = 0;

protected:
    ClaimCheckStore() = default;
};

// In this process's memory, keyed by fresh UUIDs: for tests and for one process.
class InMemoryClaimCheckStore final : public ClaimCheckStore {
public:
    std::string put(std::span<const std::byte> payload) override;
    std::optional<std::vector<std::byte>> get(std::string_view key) const override;
    void remove(std::string_view key) override;
    std::size_t size() const;
    void clear();

private:
    mutable std::mutex mutex_;
    std::map<std::string, std::vector<std::byte>, std::less<>> payloads_;
};

// One file a payload in a directory, named by a fresh UUID. A file appears whole or not at
// all: it is written as <key>.partial, synced, then renamed. Keys are checked before they are
// used as a file name (check_claim_key), whatever a message says. A file that cannot be
// written, read or removed is a StoreUnavailableError naming it and the system's reason.
class FilesystemClaimCheckStore final : public ClaimCheckStore {
public:
    // Creates `directory` when it is missing. Throws InvalidArgument when it cannot.
    explicit FilesystemClaimCheckStore(std::filesystem::path directory);

    std::string put(std::span<const std::byte> payload) override;
    std::optional<std::vector<std::byte>> get(std::string_view key) const override;
    void remove(std::string_view key) override;
    const std::filesystem::path& directory() const noexcept { return directory_; }

private:
    std::filesystem::path directory_;
};

class ClaimCheckCodec final : public Codec {
public:
    // The family's default: 64 KiB. A payload of exactly the threshold is claimed.
    static constexpr std::size_t default_threshold = 65536;

    // `threshold` 0 claims every payload. Throws InvalidArgument for a null delegate or store.
    ClaimCheckCodec(std::shared_ptr<const Codec> delegate, std::shared_ptr<ClaimCheckStore> store,
                    std::size_t threshold = default_threshold);

    std::string_view name() const noexcept override { return "ClaimCheckCodec"; }
    std::string_view content_type() const noexcept override { return delegate_->content_type(); }
    bool can_decode(std::string_view content_type) const noexcept override {
        return delegate_->can_decode(content_type);
    }
    std::vector<std::byte> encode(ValueSource source) const override;
    std::vector<std::byte> encode(const Value& value) const override;
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
    FieldNames field_names(std::string_view content_type) const noexcept override {
        return delegate_->field_names(content_type);
    }
    Scalars scalars(std::string_view content_type) const noexcept override { return delegate_->scalars(content_type); }

    std::size_t threshold() const noexcept { return threshold_; }

private:
    std::vector<std::byte> frame(std::vector<std::byte> payload) const;

    std::shared_ptr<const Codec> delegate_;
    std::shared_ptr<ClaimCheckStore> store_;
    std::size_t threshold_;
};

// Throws InvalidArgument unless `key` has the shape of the keys the stores here issue,
// [A-Za-z0-9][A-Za-z0-9._-]{0,127}: no '/', no "..", nothing a file system or a query reads
// as more than a name. A store of your own that makes names of keys calls it first.
void check_claim_key(std::string_view key);

// The key a claimed body carries, or nothing for an inline or unframed one. Thread-safe.
std::optional<std::string> claim_key_of(std::span<const std::byte> body);
// Whether `body` carries the claim-check header, inline or claimed.
bool is_claim_check(std::span<const std::byte> body) noexcept;

}  // namespace acemq
