// Message ids: random UUID version 4 in the canonical lowercase 8-4-4-4-12 form, as every
// AceMQ library writes them. Thread-safe; safe across fork() (a child never repeats the
// parent's ids).
#pragma once

#include <string>
#include <string_view>

namespace acemq {

// A fresh id from the operating system's cryptographically secure source (getrandom);
// Error when that source fails.
std::string new_uuid();

// True for the canonical lowercase 8-4-4-4-12 hexadecimal form of any version.
bool is_canonical_uuid(std::string_view text) noexcept;

}  // namespace acemq
