// Seeded fuzz loops over the envelope reader, both codecs and the encryption and claim-check
// framings around JSON: random inputs, mutated valid ones (fixture header tables; encodings of
// the shapes in tests/fuzz/inputs.hpp) and their truncations, each through the same check the
// libFuzzer targets make (for the framings, also sealed or stored as the JSON behind them, and
// XORed over a sealed body that must then not open). Each loop runs for ACEMQ_FUZZ_SECONDS
// (default 2) from ACEMQ_FUZZ_SEED (default fixed, so CI repeats itself); the seed and the
// count are printed, and a finding prints its input in hex.
#include <catch2/catch.hpp>

#include "../fuzz/inputs.hpp"
#include "../support/fixtures.hpp"
#include "../support/fuzz_loop.hpp"

#include <string>
#include <vector>

namespace {

using Bytes = acemq::Value::Bytes;
using testing_support::Loop;

// Random values of the fuzzed shapes, so mutations start from real encodings.
struct Shapes {
    Loop& loop;

    std::string text() {
        static constexpr std::string_view letters = "abcxyz-_ 09\"\\/\xc3\xa9";
        std::string out;
        for (std::size_t n = loop.below(8); n > 0; --n) out.push_back(letters[loop.below(letters.size() - 2)]);
        if (loop.below(4) == 0) out += "\xc3\xa9";
        return out;
    }
    fuzz::Order order() {
        fuzz::Order o{text(), {}, std::nullopt, {}, {}, loop.below(2) == 1};
        for (std::size_t n = loop.below(4); n > 0; --n)
            o.lines.push_back(
                {text(), static_cast<std::int32_t>(loop.rng()()),
                 loop.below(2) == 1 ? std::optional<double>(static_cast<double>(loop.below(1000)) / 8) : std::nullopt});
        if (loop.below(2) == 1) o.note = text();
        for (std::size_t n = loop.below(3); n > 0; --n) o.tags[text()] = static_cast<std::int64_t>(loop.rng()());
        for (std::size_t n = loop.below(3); n > 0; --n)
            o.grid.push_back(std::vector<std::uint8_t>(loop.below(4), static_cast<std::uint8_t>(loop.below(256))));
        return o;
    }
    fuzz::Deep deep() {
        fuzz::Deep d;
        for (std::size_t n = loop.below(3); n > 0; --n) {
            if (loop.below(3) == 0) {
                d.nest.emplace_back();
                continue;
            }
            std::vector<std::map<std::int32_t, std::string>> maps(loop.below(3));
            for (auto& m : maps) m[static_cast<std::int32_t>(loop.rng()())] = text();
            d.nest.emplace_back(std::move(maps));
        }
        d.extra = acemq::Value(
            acemq::Value::Array{acemq::Value(text()), acemq::Value(static_cast<std::int64_t>(loop.rng()()))});
        d.blob = loop.random_bytes(6);
        d.pair = {static_cast<std::uint16_t>(loop.below(65536)), 7};
        return d;
    }
    std::vector<Bytes> encodings(const acemq::Codec& codec) {
        return {acemq::encode(codec, order()).body, acemq::encode(codec, deep()).body,
                acemq::encode(codec, std::vector<std::optional<std::int64_t>>{1, std::nullopt, -5}).body};
    }
};

void fuzz_codec(std::string_view what, const acemq::Codec& codec, void (*one)(std::span<const std::byte>)) {
    Loop loop(what);
    Shapes shapes{loop};
    std::vector<Bytes> valid;
    for (int i = 0; i < 8; ++i)
        for (auto& body : shapes.encodings(codec)) valid.push_back(std::move(body));
    // Valid bodies decode to themselves: the check has teeth, it is not refusing everything.
    for (const Bytes& body : valid) REQUIRE_NOTHROW(codec.decode(body, codec.content_type()));
    std::size_t turn = 0;
    loop.run(
        [&] {
            switch (turn++ % 3) {
            case 0: return loop.random_bytes(64);
            case 1: {
                const Bytes& body = valid[loop.below(valid.size())];
                return Bytes(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(loop.below(body.size())));
            }
            default: return loop.mutated(valid[loop.below(valid.size())]);
            }
        },
        [&](const Bytes& input) { one(input); });
}

}  // namespace

TEST_CASE("fuzz: the encryption framing ends every body in a value or a DecodeError") {
    fuzz_codec("encrypted", fuzz::encrypted_codec(), [](std::span<const std::byte> input) {
        fuzz::encrypted_input(input);
        fuzz::sealed_input(input);
        fuzz::tampered_input(input);
    });
}

TEST_CASE("fuzz: the claim-check framing ends every body in a value or a DecodeError") {
    fuzz_codec("claim-check", fuzz::claim_check_codec(), [](std::span<const std::byte> input) {
        fuzz::claim_check_input(input);
        fuzz::claimed_input(input);
    });
}

TEST_CASE("fuzz: the msgpack reader ends every body in a value or a DecodeError") {
    fuzz_codec("msgpack", fuzz::msgpack_codec(), fuzz::msgpack_input);
}

TEST_CASE("fuzz: the JSON reader ends every body in a value or a DecodeError") {
    fuzz_codec("json", fuzz::json_codec(), fuzz::json_input);
}

TEST_CASE("fuzz: the envelope reader reads any header table without throwing, and it renders back the same") {
    const auto document = fixtures::load("envelope-fixtures.json");
    std::vector<acemq::FieldTable> tables;
    for (const auto& fixture_case : document.at("cases").as_array())
        tables.push_back(fixtures::table(fixture_case.at("headers").as_object()));
    REQUIRE(!tables.empty());

    Loop loop("envelope");
    std::size_t turn = 0;
    loop.run([&] { return loop.random_bytes(96); },
             [&](const Bytes& input) {
                 if (turn++ % 2 == 0) {
                     fuzz::envelope_input(input);
                     return;
                 }
                 // A fixture table, mutated as the input says.
                 fuzz::Choices in(input);
                 acemq::FieldTable headers = tables[in.below(tables.size())];
                 fuzz::mutate(headers, in);
                 fuzz::read_headers(headers, in);
             });
}
