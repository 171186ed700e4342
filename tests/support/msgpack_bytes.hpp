// The bytes a msgpack buffer holds, for the tests of what reads them back (the zmq
// protocol's frames, message_pack).
#pragma once

#include <msgpack.hpp>

#include <cstddef>
#include <vector>

namespace testing_support {

inline std::vector<std::byte> bytes_of(const msgpack::sbuffer& buffer) {
    const auto* data = reinterpret_cast<const std::byte*>(buffer.data());
    return std::vector<std::byte>(data, data + buffer.size());
}

}  // namespace testing_support
