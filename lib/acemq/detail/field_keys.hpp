// Internal: the camelCase conversion <acemq/field_keys.hpp> and <acemq/reflect.hpp> run at
// compile time. Included by <acemq/field_keys.hpp>; do not include it yourself, nothing in
// it is API.
#pragma once

#include <cstddef>
#include <string_view>

namespace acemq::detail {

// The camel_case key of `name`, one character at a time to `put`; constexpr so the key
// tables of a struct are built by the compiler.
template <class Put>
constexpr void put_camel_case(std::string_view name, Put put) {
    const std::size_t begin = name.find_first_not_of('_');
    if (begin == std::string_view::npos) {
        for (const char c : name) put(c);
        return;
    }
    const std::size_t end = name.find_last_not_of('_') + 1;
    for (std::size_t i = 0; i < begin; ++i) put('_');
    bool capitalise = false;
    for (std::size_t i = begin; i < end; ++i) {
        const char c = name[i];
        if (c == '_') {
            capitalise = true;
            continue;
        }
        put(capitalise && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
        capitalise = false;
    }
}

}  // namespace acemq::detail
