// The checksum each row of a durable broker's data file carries: XXH3-64 over the row's
// fields in a fixed order, each field's hash seeded with the hash so far, so that the same
// bytes split differently between fields give another checksum. It catches what SQLite's
// own checks do not: a byte of a row's content changed on the disk (bit rot, a stray write)
// while the file's structure stays sound. Not a defence against someone who rewrites a row
// and its checksum on purpose.
//
// Internal to the inproc broker. RowChecksum is a value type (one per row); the functions
// below it say what each table's checksum covers, for the broker and for salvage alike.
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

// What each row's checksum covers: every column but a message's redelivered flag, which the
// clean close rewrites (and which, flipped, only marks a message redelivered).
inline std::int64_t exchange_checksum(std::string_view name, std::string_view kind, std::int64_t auto_delete,
                                      std::span<const std::byte> arguments) {
    return RowChecksum{}.add(name).add(kind).add(auto_delete).add(arguments).value();
}
inline std::int64_t queue_checksum(std::int64_t id, std::string_view name, std::string_view type,
                                   std::int64_t auto_delete, std::span<const std::byte> arguments) {
    return RowChecksum{}.add(id).add(name).add(type).add(auto_delete).add(arguments).value();
}
inline std::int64_t binding_checksum(std::string_view exchange, std::int64_t queue, std::string_view routing_key,
                                     std::span<const std::byte> arguments) {
    return RowChecksum{}.add(exchange).add(queue).add(routing_key).add(arguments).value();
}
inline std::int64_t message_checksum(std::int64_t id, std::int64_t queue, std::optional<std::int64_t> enqueued_ms,
                                     std::span<const std::byte> properties, std::span<const std::byte> body) {
    return RowChecksum{}.add(id).add(queue).add(enqueued_ms).add(properties).add(body).value();
}

inline std::int64_t stream_start_checksum(std::int64_t queue, std::int64_t first_offset) {
    return RowChecksum{}.add(queue).add(first_offset).value();
}

}  // namespace acemq::inproc::detail
