// Payload encryption, the family's framing (docs/wire-contract.md §10.2): EncryptedCodec
// encrypts what another codec wrote, with AES-GCM through OpenSSL, so the broker, its disk and
// its management pages hold ciphertext. Built when the `encryption` part is (ACEMQ_HAS_ENCRYPTION
// in <acemq/config.hpp>).
//
//   auto keys = std::make_shared<acemq::Keyring>(acemq::EncryptionKey::generate("2026-01"));
//   auto codec = std::make_shared<acemq::EncryptedCodec>(std::make_shared<acemq::JsonCodec>(), keys);
//   acemq::Bus bus(url, {.codec = codec});
//
// On the wire: 0xAE, version 0x01, one byte of key-id length, the key id (UTF-8, 1 to 255
// bytes), a 12-byte random nonce, the ciphertext and GCM's 16-byte tag. The bytes before the
// nonce are authenticated as associated data, so a key id altered in flight fails to open. The
// key id is in the clear, which is what makes rotation work: a reader looks up the key a
// message names. Rotate by adding the new key to every reader's keyring first, then use() it
// on the writers; retire the old key once nothing written with it is queued.
//
// What stays in the clear: the headers (the envelope is how messages are routed and retried;
// put nothing secret in a header), the routing key, the size. The delegate's content type is
// not on the wire: the message says application/vnd.acemq.encrypted, and the reader's own
// delegate decides how the plaintext reads.
//
// Failures are DecodeErrors, so the engine parks the message rather than retry it: a body
// that is not this framing ("not this framing", told apart from a failed decryption), a
// truncated one, a key id not on the keyring, and a body that does not open with the key its
// id names, whether that is a different key of the same name or the body was altered: those
// two are one error, word for word. No error, log line or printout ever holds a key or a
// plaintext; a key shows as its id.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <acemq/codec.hpp>

namespace acemq {

namespace content_types {
inline constexpr std::string_view encrypted = "application/vnd.acemq.encrypted";
}  // namespace content_types

// One AES key and the id a message names it by. Printing one shows its id only. Immutable;
// the key bytes are wiped when it is destroyed.
class EncryptionKey {
public:
    // The key lengths AES takes; generate() draws the longest.
    static constexpr std::size_t generated_size = 32;
    static constexpr std::size_t max_id_bytes = 255;

    // Throws InvalidArgument for an empty id, one longer than max_id_bytes or holding a NUL,
    // and for a key that is not 16, 24 or 32 bytes (the message gives its length, never the
    // bytes: a passphrase needs a key derivation function, not padding).
    EncryptionKey(std::string id, std::span<const std::byte> secret);
    // A fresh 32-byte key from OpenSSL's random source. Throws Error when it has none.
    static EncryptionKey generate(std::string id);

    EncryptionKey(const EncryptionKey& other);
    EncryptionKey(EncryptionKey&& other) noexcept;
    EncryptionKey& operator=(EncryptionKey other) noexcept;
    ~EncryptionKey();

    const std::string& id() const noexcept { return id_; }
    std::span<const std::byte> secret() const noexcept { return secret_; }

private:
    std::string id_;
    std::vector<std::byte> secret_;
};

// "EncryptionKey(2026-01)": the id, never the key.
std::string to_string(const EncryptionKey& key);

// The keys a process reads with and the one it writes with. Thread-safe: add() and use() may
// be called while codecs encrypt and decrypt with it on other threads.
class Keyring {
public:
    // The first key is the one written with. Throws InvalidArgument for none.
    explicit Keyring(std::vector<EncryptionKey> keys);
    explicit Keyring(EncryptionKey key);

    // Puts a key on the ring for reading, without writing with it; a key of the same id is
    // replaced.
    void add(EncryptionKey key);
    // Makes a key on the ring the one new messages are written with. Throws InvalidArgument
    // when the ring does not hold it.
    void use(std::string_view id);
    // The key written with.
    EncryptionKey current() const;
    // The key of that id, or nothing.
    std::optional<EncryptionKey> find(std::string_view id) const;
    // The ids on the ring, sorted: for a health page or a start-up line.
    std::vector<std::string> ids() const;

private:
    mutable std::shared_mutex mutex_;
    std::unordered_map<std::string, EncryptionKey> keys_;
    std::string current_;
};

class EncryptedCodec final : public Codec {
public:
    // Throws InvalidArgument for a null delegate or keyring.
    EncryptedCodec(std::shared_ptr<const Codec> delegate, std::shared_ptr<const Keyring> keyring);

    std::string_view name() const noexcept override { return "EncryptedCodec"; }
    std::string_view content_type() const noexcept override { return content_types::encrypted; }
    // application/vnd.acemq.encrypted (parameters allowed), case-insensitively; never an
    // untyped message.
    bool can_decode(std::string_view content_type) const noexcept override;
    // The delegate's bytes, sealed with the keyring's current key and a fresh nonce.
    std::vector<std::byte> encode(ValueSource source) const override;
    std::vector<std::byte> encode(const Value& value) const override;
    // Opens the body and hands the plaintext to the delegate, as of the delegate's content
    // type. Throws DecodeError as the header says.
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
    FieldNames field_names(std::string_view content_type) const noexcept override;
    Scalars scalars(std::string_view content_type) const noexcept override;

    const std::shared_ptr<const Codec>& delegate() const noexcept { return delegate_; }

private:
    std::vector<std::byte> seal(std::vector<std::byte> plaintext) const;

    std::shared_ptr<const Codec> delegate_;
    std::shared_ptr<const Keyring> keyring_;
};

// Which key a body was encrypted with, read without a key (for an operator looking at parked
// messages nobody can open), or nothing when the body is not this framing. Thread-safe.
std::optional<std::string> encryption_key_id_of(std::span<const std::byte> body);

}  // namespace acemq
