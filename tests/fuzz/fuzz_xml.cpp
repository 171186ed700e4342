// libFuzzer target for XmlCodec: the input as a body, read as a Value and as the shapes of
// inputs.hpp; only a DecodeError may come out. Build and run: tests/fuzz/README.md.
#include "xml_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::xml_input(std::as_bytes(std::span(data, size)));
    return 0;
}
