// libFuzzer target for AvroCodec and RegisteredAvroCodec: the input as an Avro body of a
// schema of every type, plain and registered with resolution (avro_inputs.hpp); only a
// DecodeError may come out. Build and run: tests/fuzz/README.md.
#include "avro_inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::avro_input(std::as_bytes(std::span(data, size)));
    return 0;
}
