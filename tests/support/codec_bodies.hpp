// Bodies written byte by byte and the DecodeError (or EncodeError) a codec answers with, for the
// codec tests (contract) and the hostile-body tests (reliability).
#pragma once

#include <catch2/catch.hpp>

#include <acemq/error.hpp>
#include <acemq/value.hpp>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace testing_support {

inline acemq::Value::Bytes bytes_of(std::string_view text) {
    const auto* first = reinterpret_cast<const std::byte*>(text.data());
    return {first, first + text.size()};
}

inline acemq::Value::Bytes bytes_of(std::initializer_list<int> values) {
    acemq::Value::Bytes out;
    for (int v : values) out.push_back(static_cast<std::byte>(v));
    return out;
}

// Runs `code`, which must throw an E, and returns its message.
template <class E, class F>
std::string error_of(F&& code) {
    try {
        code();
    } catch (const E& e) {
        return e.what();
    }
    FAIL("expected the code to throw, nothing was thrown");
    return {};
}

template <class F>
std::string decode_error_of(F&& decode) {
    return error_of<acemq::DecodeError>(std::forward<F>(decode));
}

template <class F>
std::string encode_error_of(F&& encode) {
    return error_of<acemq::EncodeError>(std::forward<F>(encode));
}

}  // namespace testing_support
