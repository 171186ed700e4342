// Seeded fuzz loops over YamlCodec and TomlCodec (ACEMQ_FUZZ_SEED, ACEMQ_FUZZ_SECONDS: 2 s a
// loop): random bytes, the family's samples cut and mutated, and bodies built to nest, alias
// and repeat. Every input ends in a Value or a DecodeError; nothing else escapes, and under
// ASan nothing leaks or overflows.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <acemq/toml_codec.hpp>
#include <acemq/yaml_codec.hpp>

#include "../support/fuzz_loop.hpp"
#include "../yaml-toml/samples.hpp"

namespace {

using testing_support::FuzzBytes;

// Pieces that open, close, nest, anchor and alias, joined at random.
FuzzBytes built(testing_support::Loop& loop, const std::vector<std::string_view>& pieces) {
    std::string text;
    for (std::size_t n = loop.below(400); n > 0; --n) {
        const std::string_view piece = pieces[loop.below(pieces.size())];
        text.append(piece);
        if (loop.below(8) == 0) text.append(loop.below(40), piece.front());  // a long run of one byte
    }
    return samples::bytes(text);
}

void fuzz(const acemq::Codec& codec, std::string_view format, const std::vector<std::string_view>& pieces) {
    testing_support::Loop loop(format);
    std::vector<FuzzBytes> valid;
    for (const auto& sample : samples::of_format(format)) valid.push_back(sample.body);
    valid.push_back(acemq::encode(codec, samples::expected_order()).body);
    // Valid bodies decode: the check has teeth, it is not refusing everything.
    for (const auto& body : valid) REQUIRE_NOTHROW(codec.decode(body, codec.content_type()));
    std::size_t turn = 0;
    loop.run(
        [&] {
            const auto& body = valid[loop.below(valid.size())];
            switch (turn++ % 4) {
            case 0: return loop.random_bytes(64);
            case 1: return FuzzBytes(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(loop.below(body.size())));
            case 2: return built(loop, pieces);
            default: return loop.mutated(body);
            }
        },
        [&](const FuzzBytes& input) {
            try {
                codec.decode(input, codec.content_type());
            } catch (const acemq::DecodeError&) {  // the one refusal allowed; anything else is the finding
            }
        });
}

}  // namespace

TEST_CASE("fuzz: the YAML reader ends every body in a value or a DecodeError") {
    fuzz(acemq::YamlCodec(), "yaml", {"[",           "]",  "{",      "}",   "- ", "\n",  "  ",  "a: ", "? ",    ": ",
                                      "&a ",         "*a", "!!str ", "!x ", "'",  "\"",  "|\n", ">\n", "---\n", "...\n",
                                      "%YAML 1.2\n", ",",  "#",      "\\",  "~",  "1.5", "0x",  "\t",  "<<: "});
}

TEST_CASE("fuzz: the TOML reader ends every body in a value or a DecodeError") {
    fuzz(acemq::TomlCodec(), "toml",
         {"[",   "]",   "[[",   "]]", "{",      "}",   "a",    ".",  "=",   " = ",
          "\n",  ",",   "\"",   "'",  "\"\"\"", "'''", "#",    "\\", "1.5", "1979-05-27T07:32:00Z",
          "inf", "nan", "true", "0x", "_",      "\t",  "a.b.c"});
}
