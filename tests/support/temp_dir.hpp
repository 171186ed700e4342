// A directory of the test's own under $TMPDIR, removed with everything in it at the end.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>

namespace testing_support {

class TempDir {
public:
    // `name` starts the directory's name, so a leftover one says which tests made it.
    explicit TempDir(std::string_view name = "test") {
        std::string pattern =
            (std::filesystem::temp_directory_path() / ("acemq-" + std::string(name) + "-XXXXXX")).string();
        if (mkdtemp(pattern.data()) == nullptr) FAIL("cannot make a temporary directory");
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;  // best effort: a leftover temp dir must not fail the test
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// All of `file` (empty when it cannot be read).
inline std::string contents(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace testing_support
