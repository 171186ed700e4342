// What every example does with its command line and its failures: `--url URL` picks the
// broker (the embedded one by default), and a failure is printed, not left to terminate().
#pragma once

#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>

namespace example {

// The value given after `flag`, if any.
inline std::optional<std::string> option(int argc, char** argv, const char* flag) {
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], flag) == 0) return std::string(argv[i + 1]);
    return std::nullopt;
}

// Runs `body` and turns an exception into a message on stderr and exit status 1.
template <class Body>
int run(const char* name, Body&& body) {
    try {
        return body();
    } catch (const std::exception& error) {
        std::fprintf(stderr, "%s: %s\n", name, error.what());
        return 1;
    }
}

}  // namespace example
