#include <acemq/schema_registry.hpp>

#include <algorithm>

#include <openssl/evp.h>

#include "quoted_text.hpp"
#include "schema_registration.hpp"

namespace acemq {

namespace detail {

namespace {

std::size_t characters(std::string_view text) {
    return static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

void check_registration(std::string_view subject, std::string_view format, std::string_view definition) {
    if (subject.empty() || definition.empty())
        throw InvalidArgument("acemq: a schema needs a subject and a definition");
    if (characters(subject) > max_schema_subject)
        throw InvalidArgument("acemq: the schema subject " + in_quotes(subject) + " is longer than " +
                              std::to_string(max_schema_subject) + " characters; use a shorter name");
    if (characters(format) > max_schema_format)
        throw InvalidArgument("acemq: the schema format " + in_quotes(format) + " is longer than " +
                              std::to_string(max_schema_format) +
                              " characters; a format is a short name "
                              "such as \"avro\"");
}

SchemaNotFoundError no_schema_with_id(std::int64_t id) {
    return SchemaNotFoundError("acemq: no schema has the id " + std::to_string(id) +
                               " in this registry; was the message written against another registry?");
}

SchemaNotFoundError no_schema_under(std::string_view subject) {
    return SchemaNotFoundError("acemq: no schema is registered under the subject " + in_quotes(subject));
}

}  // namespace detail

std::string to_string(const SchemaDefinition& schema) {
    return schema.subject + " v" + std::to_string(schema.version) + " (" + schema.format + ", id " +
           std::to_string(schema.id) + ")";
}

// OpenSSL's libcrypto rather than a SHA-256 of our own: it is linked by every build of
// libacemq (see meson.build), and a hash is not code to maintain beside a vetted one.
std::string fingerprint(std::string_view definition) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    if (EVP_Digest(definition.data(), definition.size(), digest, &size, EVP_sha256(), nullptr) != 1)
        throw Error(
            "acemq: OpenSSL's libcrypto could not compute a SHA-256 fingerprint; check that its default "
            "provider loads (OPENSSL_CONF, OPENSSL_MODULES)");
    constexpr std::string_view hex = "0123456789abcdef";
    std::string text;
    text.reserve(2 * size);
    for (unsigned int i = 0; i < size; ++i) {
        text += hex[digest[i] >> 4];
        text += hex[digest[i] & 0x0f];
    }
    return text;
}

}  // namespace acemq
