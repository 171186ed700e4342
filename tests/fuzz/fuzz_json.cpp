// libFuzzer target for JsonCodec: the input as a body, read as a Value and as the shapes of
// inputs.hpp; only a DecodeError may come out.
// Build and run: tests/fuzz/README.md.
#include "inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::json_input(std::as_bytes(std::span(data, size)));
    return 0;
}
