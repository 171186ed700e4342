// The seeded fuzz loop over the Avro codecs (tests/fuzz/avro_inputs.hpp, the same check as
// the libFuzzer target fuzz_avro): random bodies, encodings of random values of the fuzz
// schema, their truncations and mutations. ACEMQ_FUZZ_SECONDS (default 2), ACEMQ_FUZZ_SEED.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "../fuzz/avro_inputs.hpp"
#include "../support/fuzz_loop.hpp"

namespace {

using testing_support::FuzzBytes;
using testing_support::Loop;

// A random value of the fuzz schema, `depth` records deep at most.
acemq::Value random_fuzz(Loop& loop, int depth) {
    const auto text = [&] { return std::string(loop.below(12), static_cast<char>('a' + loop.below(26))); };
    acemq::Value::Array longs;
    for (std::size_t n = loop.below(4); n > 0; --n) longs.emplace_back(static_cast<std::int64_t>(loop.rng()()));
    acemq::Value::Map map;
    for (std::size_t n = loop.below(3); n > 0; --n)
        map.emplace_back(acemq::Value(text()),
                         depth > 0 && loop.below(3) == 0 ? random_fuzz(loop, depth - 1) : acemq::Value(text()));
    static constexpr const char* colours[] = {"RED", "GREEN", "BLUE"};
    return acemq::Value(acemq::Value::Record{
        {"b", acemq::Value(loop.below(2) == 1)},
        {"i", acemq::Value(static_cast<std::int32_t>(loop.rng()()))},
        {"l", acemq::Value(static_cast<std::int64_t>(loop.rng()()))},
        {"f", acemq::Value(static_cast<double>(loop.below(1000)) / 8)},
        {"d", acemq::Value(static_cast<double>(static_cast<std::int64_t>(loop.rng()())) / 3)},
        {"s", acemq::Value(text())},
        {"by", acemq::Value(loop.random_bytes(6))},
        {"e", acemq::Value(colours[loop.below(3)])},
        {"fx", acemq::Value(FuzzBytes(4, std::byte{7}))},
        {"a", acemq::Value(std::move(longs))},
        {"m", acemq::Value(std::move(map))},
        {"next", depth > 0 && loop.below(2) == 1 ? random_fuzz(loop, depth - 1) : acemq::Value()},
    });
}

}  // namespace

TEST_CASE("fuzz: the Avro readers end every body in a value or a DecodeError") {
    Loop loop("avro");
    const acemq::AvroCodec& codec = fuzz::avro_codecs().fixed;
    std::vector<FuzzBytes> valid;
    for (int i = 0; i < 16; ++i) valid.push_back(codec.encode(random_fuzz(loop, 3)));
    // Valid bodies decode: the check has teeth, it is not refusing everything.
    for (const auto& body : valid) REQUIRE_NOTHROW(codec.decode(body, acemq::content_types::avro));
    std::size_t turn = 0;
    loop.run(
        [&]() -> FuzzBytes {
            const auto& body = valid[loop.below(valid.size())];
            switch (turn++ % 3) {
            case 0: return loop.random_bytes(64);
            case 1: return FuzzBytes(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(loop.below(body.size())));
            default: return loop.mutated(body);
            }
        },
        [](const FuzzBytes& input) { fuzz::avro_input(input); });
}
