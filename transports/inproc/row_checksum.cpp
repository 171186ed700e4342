#include "inproc/row_checksum.hpp"

#include <xxhash.h>

#include <bit>
#include <cstring>

namespace acemq::inproc::detail {

RowChecksum& RowChecksum::add(std::int64_t value) {
    // Little-endian whatever the machine, so a file's checksums hold on another one.
    std::uint64_t bits = static_cast<std::uint64_t>(value);
    if constexpr (std::endian::native == std::endian::big) bits = __builtin_bswap64(bits);
    unsigned char bytes[sizeof bits];
    std::memcpy(bytes, &bits, sizeof bits);
    hash_ = XXH3_64bits_withSeed(bytes, sizeof bytes, hash_);
    return *this;
}

RowChecksum& RowChecksum::add(std::optional<std::int64_t> value) {
    add(std::int64_t{value.has_value()});
    return value ? add(*value) : *this;
}

RowChecksum& RowChecksum::add(std::string_view text) {
    hash_ = XXH3_64bits_withSeed(text.data(), text.size(), hash_);
    return *this;
}

RowChecksum& RowChecksum::add(std::span<const std::byte> bytes) {
    hash_ = XXH3_64bits_withSeed(bytes.data(), bytes.size(), hash_);
    return *this;
}

}  // namespace acemq::inproc::detail
