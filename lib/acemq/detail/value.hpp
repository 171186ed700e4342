// Internal: text helpers the codecs and the templates of <acemq/reflect.hpp> share.
// Included by <acemq/value.hpp>; do not include it yourself, nothing in it is API.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace acemq::detail {

// Byte offset of the first byte that is not well-formed UTF-8 (overlongs, surrogates and
// code points past U+10FFFF included), or nullopt when all of `text` is valid.
std::optional<std::size_t> invalid_utf8_at(std::string_view text) noexcept;
// Throws EncodeError naming `what` ("a string", "a map key") and the first bad byte's offset when
// `text` is not UTF-8: how the structured codecs refuse a std::string that holds binary data.
void require_utf8_to_encode(std::string_view text, std::string_view what);

// Standard base64 with padding (RFC 4648 section 4): how bytes travel in JSON.
std::string base64_encode(std::span<const std::byte> bytes);
// nullopt when `text` is not canonical padded base64.
std::optional<std::vector<std::byte>> base64_decode(std::string_view text);

// A readable name for a C++ type, for error messages ("Payment", "uint8_t",
// "std::vector<Line>").
std::string demangle(const char* mangled);

}  // namespace acemq::detail
