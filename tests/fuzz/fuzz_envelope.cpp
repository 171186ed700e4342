// libFuzzer target for the envelope reader: headers built from the input (reserved names
// likely), never a throw.
// Build and run: tests/fuzz/README.md.
#include "inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::envelope_input(std::as_bytes(std::span(data, size)));
    return 0;
}
