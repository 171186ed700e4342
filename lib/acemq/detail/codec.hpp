// Internal: what the encode and decode templates of <acemq/codec.hpp> call into the library
// for. Included by it; do not include it yourself, nothing in it is API.
#pragma once

#include <string_view>

namespace acemq {

class Codec;
struct BodyFormat;

namespace detail {

[[noreturn]] void rethrow_as_encode_error(std::string_view type, std::string_view codec);
// Throws EncodeError unless `codec` writes `format`'s content type.
void require_body_format(const Codec& codec, const BodyFormat& format);
[[noreturn]] void rethrow_as_decode_error(std::string_view type, std::string_view content_type, const Codec& codec);
// Case-insensitive, as content types are.
bool starts_with_ci(std::string_view text, std::string_view prefix) noexcept;
bool contains_ci(std::string_view text, std::string_view part) noexcept;

}  // namespace detail

}  // namespace acemq
