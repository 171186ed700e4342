// How many rounds a drill runs: its full count, unless an environment variable names another
// (the sanitizer builds run fewer, tests/meson.build says why).
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace testing_support {

// `full`, or the positive count in the variable `variable`. Anything else there is refused
// by name: a drill never runs a different count than the one asked for.
inline int rounds_from(const char* variable, int full) {
    const char* given = std::getenv(variable);
    if (given == nullptr || *given == '\0') return full;
    char* end = nullptr;
    const long count = std::strtol(given, &end, 10);
    if (*end != '\0' || count < 1 || count > 1'000'000)
        throw std::invalid_argument(std::string(variable) + "=\"" + given +
                                    "\" is not a count of rounds: give a whole number from 1 to 1000000");
    return static_cast<int>(count);
}

}  // namespace testing_support
