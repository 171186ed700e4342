// Internal: the family's encryption framing (docs/wire-contract.md §10.2), sealed and opened
// with AES-GCM through OpenSSL, for EncryptedCodec (<acemq/encrypted_codec.hpp>) and for the
// contract test, which seals the family's test vector with its fixed nonce. Thread-safe (each
// call has a cipher context of its own).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <acemq/encrypted_codec.hpp>

namespace acemq::detail {

inline constexpr std::byte encryption_magic{0xAE};
inline constexpr std::byte encryption_version{0x01};
inline constexpr std::size_t encryption_nonce_size = 12;
inline constexpr std::size_t encryption_tag_size = 16;

// The whole body: header (magic, version, id length, id), nonce, ciphertext, tag.
std::vector<std::byte> seal_body(const EncryptionKey& key, std::span<const std::byte, encryption_nonce_size> nonce,
                                 std::span<const std::byte> plaintext);

}  // namespace acemq::detail
