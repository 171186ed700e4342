// Bodies written byte by byte and the DecodeError (or EncodeError) a codec answers with, for the
// codec tests (contract) and the hostile-body tests (reliability).
#pragma once

#include "thrown.hpp"

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

template <class F>
std::string decode_error_of(F&& decode) {
    return what_of<acemq::DecodeError>(std::forward<F>(decode));
}

template <class F>
std::string encode_error_of(F&& encode) {
    return what_of<acemq::EncodeError>(std::forward<F>(encode));
}

}  // namespace testing_support
