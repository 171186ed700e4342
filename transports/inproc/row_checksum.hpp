// The checksum each row of a durable broker's data file carries: XXH3-64 over the row's
// fields in a fixed order, each field's hash seeded with the hash so far, so that the same
// bytes split differently between fields give another checksum. It catches what SQLite's
// own checks do not: a byte of a row's content changed on the disk (bit rot, a stray write)
// while the file's structure stays sound. Not a defence against someone who rewrites a row
// and its checksum on purpose.
//
// Internal to the inproc broker. A value type; not thread-safe (one per row).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace acemq::inproc::detail {

class RowChecksum {
public:
    RowChecksum& add(std::int64_t value);
    RowChecksum& add(std::optional<std::int64_t> value);
    RowChecksum& add(std::string_view text);
    RowChecksum& add(std::span<const std::byte> bytes);

    // As SQLite stores it: an INTEGER holds 64 bits, signed.
    std::int64_t value() const noexcept { return static_cast<std::int64_t>(hash_); }

private:
    std::uint64_t hash_ = 0;
};

}  // namespace acemq::inproc::detail
