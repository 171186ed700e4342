// libFuzzer target for EncryptedCodec around JSON (docs/wire-contract.md §8.1). The first byte
// of the input chooses what the rest is: a body read as it is, a plaintext sealed with the
// ring's key and read back (so the JSON behind the tag is reached), or a mask over a sealed
// body, which must then fail to open. Only a DecodeError may come out.
// Build and run: tests/fuzz/README.md.
#include "inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> input = std::as_bytes(std::span(data, size));
    if (input.empty()) return 0;
    const std::span<const std::byte> rest = input.subspan(1);
    switch (std::to_integer<unsigned>(input[0]) % 3) {
    case 0: fuzz::encrypted_input(rest); break;
    case 1: fuzz::sealed_input(rest); break;
    default: fuzz::tampered_input(rest); break;
    }
    return 0;
}
