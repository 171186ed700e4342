// Bodies written byte by byte and the DecodeError a decoder answers them with, for the
// codec tests (contract) and the hostile-body tests (reliability).
#pragma once

#include <catch2/catch.hpp>

#include <acemq/error.hpp>
#include <acemq/value.hpp>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

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

// Runs `decode`, which must throw DecodeError, and returns its message.
template <class F>
std::string decode_error_of(F&& decode) {
    try {
        decode();
    } catch (const acemq::DecodeError& e) {
        return e.what();
    }
    FAIL("expected acemq::DecodeError, nothing was thrown");
    return {};
}

}  // namespace testing_support
