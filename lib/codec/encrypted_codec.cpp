#include <acemq/encrypted_codec.hpp>

#include <acemq/error.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <utility>

#include "encryption_framing.hpp"
#include "quoted_text.hpp"

namespace acemq {

namespace {

using detail::encryption_nonce_size;
using detail::encryption_tag_size;

// Magic, version and the id's length: the bytes before the id.
constexpr std::size_t prefix_size = 3;

const EVP_CIPHER* cipher_for(std::size_t key_size) noexcept {
    switch (key_size) {
    case 16: return EVP_aes_128_gcm();
    case 24: return EVP_aes_192_gcm();
    case 32: return EVP_aes_256_gcm();
    default: return nullptr;
    }
}

struct ContextDeleter {
    void operator()(EVP_CIPHER_CTX* context) const noexcept { EVP_CIPHER_CTX_free(context); }
};
using CipherContext = std::unique_ptr<EVP_CIPHER_CTX, ContextDeleter>;

// EVP counts in int: a body larger than INT_MAX goes through in pieces.
constexpr std::size_t max_piece = std::size_t{1} << 30;

const unsigned char* bytes_of(std::span<const std::byte> data) noexcept {
    return reinterpret_cast<const unsigned char*>(data.data());
}
unsigned char* bytes_of(std::byte* data) noexcept { return reinterpret_cast<unsigned char*>(data); }

// A fresh context with the key, the nonce and the associated data set; `encrypting` picks the
// direction. OpenSSL refuses only when it cannot work at all.
CipherContext start(bool encrypting, const EncryptionKey& key, std::span<const std::byte> nonce,
                    std::span<const std::byte> header) {
    CipherContext context(EVP_CIPHER_CTX_new());
    if (!context) throw std::bad_alloc();
    const EVP_CIPHER* cipher = cipher_for(key.secret().size());
    int ignored = 0;
    const bool ok =
        EVP_CipherInit_ex(context.get(), cipher, nullptr, nullptr, nullptr, encrypting ? 1 : 0) == 1 &&
        EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(nonce.size()), nullptr) == 1 &&
        EVP_CipherInit_ex(context.get(), nullptr, nullptr, bytes_of(key.secret()), bytes_of(nonce),
                          encrypting ? 1 : 0) == 1 &&
        EVP_CipherUpdate(context.get(), nullptr, &ignored, bytes_of(header), static_cast<int>(header.size())) == 1;
    if (!ok) throw Error("acemq: OpenSSL could not set up AES-GCM for key " + detail::in_quotes(key.id()));
    return context;
}

// `in` through the cipher into `out` (as long as `in`); false when OpenSSL refuses.
bool update(EVP_CIPHER_CTX* context, std::span<const std::byte> in, std::byte* out) {
    for (std::size_t done = 0; done < in.size();) {
        const std::size_t piece = std::min(max_piece, in.size() - done);
        int written = 0;
        if (EVP_CipherUpdate(context, bytes_of(out + done), &written, bytes_of(in.subspan(done, piece)),
                             static_cast<int>(piece)) != 1)
            return false;
        done += piece;
    }
    return true;
}

std::vector<std::byte> header_of(std::string_view key_id) {
    std::vector<std::byte> header(prefix_size + key_id.size());
    header[0] = detail::encryption_magic;
    header[1] = detail::encryption_version;
    header[2] = static_cast<std::byte>(key_id.size());
    std::memcpy(header.data() + prefix_size, key_id.data(), key_id.size());
    return header;
}

// Plaintext, wiped however the call that holds it ends.
struct WipedBytes {
    std::vector<std::byte> bytes;
    ~WipedBytes() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

std::string listed(const std::vector<std::string>& ids) {
    std::string out;
    for (const std::string& id : ids) out += (out.empty() ? "" : ", ") + detail::in_quotes(id);
    return out;
}

}  // namespace

namespace detail {

std::vector<std::byte> seal_body(const EncryptionKey& key, std::span<const std::byte, encryption_nonce_size> nonce,
                                 std::span<const std::byte> plaintext) {
    std::vector<std::byte> body = header_of(key.id());
    const std::size_t header_size = body.size();
    body.insert(body.end(), nonce.begin(), nonce.end());
    const std::size_t sealed_at = body.size();
    body.resize(sealed_at + plaintext.size() + encryption_tag_size);
    CipherContext context = start(true, key, nonce, std::span(body).first(header_size));
    int ignored = 0;
    if (!update(context.get(), plaintext, body.data() + sealed_at) ||
        EVP_EncryptFinal_ex(context.get(), nullptr, &ignored) != 1 ||
        EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(encryption_tag_size),
                            body.data() + sealed_at + plaintext.size()) != 1)
        throw EncodeError("acemq: OpenSSL could not encrypt with key " + in_quotes(key.id()));
    return body;
}

}  // namespace detail

EncryptionKey::EncryptionKey(std::string id, std::span<const std::byte> secret) : id_(std::move(id)) {
    if (id_.empty())
        throw InvalidArgument("acemq: an encryption key needs an id: it is what a message names its key by");
    if (id_.size() > max_id_bytes)
        throw InvalidArgument("acemq: the key id " + detail::in_quotes(id_) + " is " + std::to_string(id_.size()) +
                              " bytes and at most 255 fit in the framing; it travels in front of every message, "
                              "so make it a short name such as \"2026-01\"");
    if (id_.find('\0') != std::string::npos)
        throw InvalidArgument("acemq: the key id " + detail::in_quotes(id_) +
                              " holds a NUL byte; use a printable name");
    if (cipher_for(secret.size()) == nullptr)
        throw InvalidArgument("acemq: the key " + detail::in_quotes(id_) + " is " + std::to_string(secret.size()) +
                              " bytes and an AES key is 16, 24 or 32; a key made from a passphrase needs a key "
                              "derivation function (PBKDF2, scrypt, Argon2), not padding");
    secret_.assign(secret.begin(), secret.end());
}

EncryptionKey EncryptionKey::generate(std::string id) {
    std::array<std::byte, generated_size> secret{};
    if (RAND_bytes(bytes_of(secret.data()), static_cast<int>(secret.size())) != 1)
        throw Error("acemq: OpenSSL's random source could not give a key; check that the system has entropy");
    EncryptionKey key(std::move(id), secret);
    OPENSSL_cleanse(secret.data(), secret.size());
    return key;
}

EncryptionKey::EncryptionKey(const EncryptionKey& other) = default;
EncryptionKey::EncryptionKey(EncryptionKey&& other) noexcept = default;

EncryptionKey& EncryptionKey::operator=(EncryptionKey other) noexcept {
    std::swap(id_, other.id_);
    std::swap(secret_, other.secret_);
    return *this;
}

EncryptionKey::~EncryptionKey() {
    if (!secret_.empty()) OPENSSL_cleanse(secret_.data(), secret_.size());
}

std::string to_string(const EncryptionKey& key) { return "EncryptionKey(" + detail::shown_text(key.id()) + ")"; }

Keyring::Keyring(std::vector<EncryptionKey> keys) {
    if (keys.empty()) throw InvalidArgument("acemq: a keyring needs at least one key: there is nothing to write with");
    current_ = keys.front().id();
    for (EncryptionKey& key : keys) {
        std::string id = key.id();
        keys_.insert_or_assign(std::move(id), std::move(key));
    }
}

Keyring::Keyring(EncryptionKey key) : Keyring(std::vector<EncryptionKey>{std::move(key)}) {}

void Keyring::add(EncryptionKey key) {
    std::string id = key.id();
    const std::unique_lock lock(mutex_);
    keys_.insert_or_assign(std::move(id), std::move(key));
}

void Keyring::use(std::string_view id) {
    const std::unique_lock lock(mutex_);
    if (!keys_.contains(std::string(id)))
        throw InvalidArgument("acemq: there is no key " + detail::in_quotes(id) +
                              " on this keyring; add() it (to every reader first) before use()");
    current_ = id;
}

EncryptionKey Keyring::current() const {
    const std::shared_lock lock(mutex_);
    return keys_.at(current_);
}

std::optional<EncryptionKey> Keyring::find(std::string_view id) const {
    const std::shared_lock lock(mutex_);
    const auto found = keys_.find(std::string(id));
    if (found == keys_.end()) return std::nullopt;
    return found->second;
}

std::vector<std::string> Keyring::ids() const {
    std::vector<std::string> out;
    {
        const std::shared_lock lock(mutex_);
        for (const auto& entry : keys_) out.push_back(entry.first);
    }
    std::sort(out.begin(), out.end());
    return out;
}

EncryptedCodec::EncryptedCodec(std::shared_ptr<const Codec> delegate, std::shared_ptr<const Keyring> keyring)
    : delegate_(std::move(delegate)), keyring_(std::move(keyring)) {
    if (!delegate_) throw InvalidArgument("acemq: EncryptedCodec needs a codec to encrypt the output of, not null");
    if (!keyring_) throw InvalidArgument("acemq: EncryptedCodec needs a keyring, not null");
}

bool EncryptedCodec::can_decode(std::string_view content_type) const noexcept {
    return detail::starts_with_ci(content_type, content_types::encrypted);
}

std::vector<std::byte> EncryptedCodec::seal(std::vector<std::byte> delegate_bytes) const {
    const WipedBytes plaintext{std::move(delegate_bytes)};
    std::array<std::byte, encryption_nonce_size> nonce{};
    // A fresh random nonce a message: under GCM a nonce used twice with one key gives away both
    // plaintexts' difference and the means to forge, and a counter restarts with the process.
    if (RAND_bytes(bytes_of(nonce.data()), static_cast<int>(nonce.size())) != 1)
        throw EncodeError("acemq: OpenSSL's random source could not give a nonce; nothing was encrypted");
    return detail::seal_body(keyring_->current(), nonce, plaintext.bytes);
}

std::vector<std::byte> EncryptedCodec::encode(ValueSource source) const { return seal(delegate_->encode(source)); }

std::vector<std::byte> EncryptedCodec::encode(const Value& value) const { return seal(delegate_->encode(value)); }

Value EncryptedCodec::decode(std::span<const std::byte> body, std::string_view) const {
    if (body.empty() || body[0] != detail::encryption_magic)
        throw DecodeError(
            "acemq: this body is not the encryption framing (application/vnd.acemq.encrypted starts with the byte "
            "0xAE): it was never encrypted, so a consumer that decrypts was handed another codec's message; read "
            "it with the codec it was written with");
    if (body.size() < prefix_size)
        throw DecodeError("acemq: this encrypted body is truncated: " + std::to_string(body.size()) +
                          " bytes, too few for the framing's header");
    if (body[1] != detail::encryption_version)
        throw DecodeError("acemq: this body is encryption framing version " +
                          std::to_string(std::to_integer<unsigned>(body[1])) + " and this library reads version 1");
    const std::size_t id_size = std::to_integer<std::size_t>(body[2]);
    if (id_size == 0)
        throw DecodeError("acemq: this encrypted body names no key (its key id is empty), so no key can open it");
    const std::size_t header_size = prefix_size + id_size;
    if (body.size() < header_size + encryption_nonce_size + encryption_tag_size)
        throw DecodeError("acemq: this encrypted body is truncated: " + std::to_string(body.size()) +
                          " bytes, too few for its key id, a 12-byte nonce and a 16-byte tag");
    const std::string_view key_id(reinterpret_cast<const char*>(body.data()) + prefix_size, id_size);
    const std::optional<EncryptionKey> key = keyring_->find(key_id);
    if (!key)
        throw DecodeError("acemq: this message was encrypted with key " + detail::in_quotes(key_id) +
                          ", which is not on this keyring (it holds " + listed(keyring_->ids()) +
                          "); add that key to the keyring: retrying without it cannot help");

    const std::span<const std::byte> nonce = body.subspan(header_size, encryption_nonce_size);
    const std::span<const std::byte> sealed = body.subspan(header_size + encryption_nonce_size);
    const std::span<const std::byte> ciphertext = sealed.first(sealed.size() - encryption_tag_size);
    std::vector<std::byte> tag(sealed.end() - encryption_tag_size, sealed.end());
    WipedBytes plaintext{std::vector<std::byte>(ciphertext.size())};
    CipherContext context = start(false, *key, nonce, body.first(header_size));
    int ignored = 0;
    // One answer for a wrong key and for altered bytes: GCM cannot tell them apart, and an
    // error that guessed would tell an attacker which of their edits got further.
    if (!update(context.get(), ciphertext, plaintext.bytes.data()) ||
        EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(encryption_tag_size), tag.data()) !=
            1 ||
        EVP_DecryptFinal_ex(context.get(), nullptr, &ignored) != 1)
        throw DecodeError("acemq: this message did not decrypt with key " + detail::in_quotes(key_id) +
                          ": either that is not the key it was written with, or the body was altered after it was "
                          "written");
    return delegate_->decode(plaintext.bytes, delegate_->content_type());
}

FieldNames EncryptedCodec::field_names(std::string_view) const noexcept {
    return delegate_->field_names(delegate_->content_type());
}

Scalars EncryptedCodec::scalars(std::string_view) const noexcept {
    return delegate_->scalars(delegate_->content_type());
}

std::optional<std::string> encryption_key_id_of(std::span<const std::byte> body) {
    if (body.size() < prefix_size || body[0] != detail::encryption_magic || body[1] != detail::encryption_version)
        return std::nullopt;
    const std::size_t id_size = std::to_integer<std::size_t>(body[2]);
    if (id_size == 0 || body.size() < prefix_size + id_size) return std::nullopt;
    return std::string(reinterpret_cast<const char*>(body.data()) + prefix_size, id_size);
}

}  // namespace acemq
