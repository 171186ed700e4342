// libFuzzer target for ClaimCheckCodec around JSON (docs/wire-contract.md §8.2), on an
// in-memory store only: a fuzzer's keys never reach a file system. The first byte of the input
// chooses what the rest is: a body read as it is (inline, claimed with a made-up key, or not
// framed at all), or a payload kept in the store and read through a claimed body, so the JSON
// behind a key is reached. Only a DecodeError may come out.
// Build and run: tests/fuzz/README.md.
#include "inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> input = std::as_bytes(std::span(data, size));
    if (input.empty()) return 0;
    const std::span<const std::byte> rest = input.subspan(1);
    if (std::to_integer<unsigned>(input[0]) % 2 == 0)
        fuzz::claim_check_input(rest);
    else
        fuzz::claimed_input(rest);
    return 0;
}
