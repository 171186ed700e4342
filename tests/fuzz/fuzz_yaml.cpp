// libFuzzer target for YamlCodec: the input as an application/yaml body; only a DecodeError may
// come out, and nothing may allocate far past the input (run with -rss_limit_mb).
// Build and run: tests/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <span>

#include <acemq/yaml_codec.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const acemq::YamlCodec codec;
    try {
        codec.decode(std::as_bytes(std::span(data, size)), codec.content_type());
    } catch (const acemq::DecodeError&) {  // the one refusal allowed; anything else is a finding
    }
    return 0;
}
