// libFuzzer target: any bytes, decoded as an AMQP field table by rabbitmq-c (as a delivery's
// headers are) and read by the AMQP transport's table_of, must neither crash nor read a
// table nested past max_table_depth, and what is read must encode again in exactly the
// bytes encoded_size predicts. The properties are those of the seeded loop in
// tests/reliability/amqp/test_wire_fuzz.cpp (wire_properties.hpp there); a broken one aborts.
//
// Built with the other targets (tests/fuzz/README.md): `ninja -C build-fuzz tests/fuzz/fuzz_amqp_table`,
// then `./build-fuzz/tests/fuzz/fuzz_amqp_table -max_total_time=60 -max_len=4096 corpus`.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "wire_properties.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string failure = wire_properties::check_encoded(data, size);
    if (!failure.empty()) {
        std::fprintf(stderr, "fuzz_amqp_table: %s\n", failure.c_str());
        std::abort();
    }
    return 0;
}
