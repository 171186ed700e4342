// libFuzzer target for the ZeroMQ frame reader: the input as a frame, parsed and read as the
// command it names says; only a wire::ProtocolError may come out.
// Build and run: tests/fuzz/README.md.
#include "zmq_frames.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::zmq_frame_input(std::as_bytes(std::span(data, size)));
    return 0;
}
