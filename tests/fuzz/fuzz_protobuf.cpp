// libFuzzer target for ProtobufCodec: the input as an application/x-protobuf body read as a
// generated OrderPlaced (tests/protobuf/order_placed.proto); only a DecodeError may come out.
// Build and run: tests/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <span>

#include "../protobuf/protobuf_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::protobuf_input(std::as_bytes(std::span(data, size)));
    return 0;
}
