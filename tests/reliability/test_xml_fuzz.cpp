// The seeded fuzz loop over XmlCodec's reader (built into test_xml, tests/xml/meson.build, so
// that test_reliability links no pugixml): random bytes, the family's body and encodings of
// the fuzzed shapes, mutated byte by byte and with XML's own constructs spliced in (DTDs,
// entity references, CDATA, comments, attributes, namespaces, deep nesting), each through
// the check the libFuzzer target makes (tests/fuzz/xml_input.hpp). ACEMQ_FUZZ_SECONDS
// (default 2) from ACEMQ_FUZZ_SEED, as the suite's other loops.
#include <catch2/catch.hpp>

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "../fuzz/xml_input.hpp"
#include "../support/codec_bodies.hpp"
#include "../support/fuzz_loop.hpp"

namespace {

using Bytes = acemq::Value::Bytes;

using testing_support::bytes_of;

constexpr std::array<std::string_view, 24> pieces = {"<",
                                                     ">",
                                                     "</",
                                                     "/>",
                                                     "<a>",
                                                     "</a>",
                                                     "<a b=\"1\">",
                                                     "&",
                                                     "&amp;",
                                                     "&lol;",
                                                     "&#0;",
                                                     "&#x1F600;",
                                                     "&#xD800;",
                                                     "<!DOCTYPE a [<!ENTITY e \"&e;&e;\">]>",
                                                     "<!ENTITY x SYSTEM \"file:///etc/passwd\">",
                                                     "<![CDATA[",
                                                     "]]>",
                                                     "<!--",
                                                     "-->",
                                                     "<?xml version=\"1.0\" encoding=\"latin1\"?>",
                                                     " xmlns:p=\"u\"",
                                                     "p:",
                                                     "\xc3\xb6",
                                                     "\xff"};

}  // namespace

TEST_CASE("fuzz: the XML reader ends every body in a value or a DecodeError") {
    testing_support::Loop loop("xml");
    const auto& codec = fuzz::xml_codec();
    std::vector<Bytes> valid{
        bytes_of("<OrderPlaced><orderId>o-1</orderId><customer>Ana S\xc3\xb6"
                 "derstr\xc3\xb6m</customer><totalCents>4250</totalCents><currency>EUR</currency><items>widget</items>"
                 "<items>gasket</items></OrderPlaced>")};
    for (int i = 0; i < 8; ++i) {
        fuzz::Order order{std::string(loop.below(5), 'i'), {}, std::nullopt, {}, {}, loop.below(2) == 1};
        for (std::size_t n = loop.below(3); n > 0; --n)
            order.lines.push_back({"s&<", static_cast<std::int32_t>(loop.rng()()), 0.5});
        order.tags["t" + std::to_string(i)] = static_cast<std::int64_t>(loop.rng()());
        valid.push_back(acemq::encode(codec, order).body);
    }
    std::string deep;
    for (std::size_t i = 0; i < acemq::XmlCodec::max_depth; ++i) deep = "<d>" + deep + "</d>";
    valid.push_back(bytes_of(deep));
    // Valid bodies decode: the check has teeth, it is not refusing everything.
    for (const Bytes& body : valid) REQUIRE_NOTHROW(codec.decode(body, "application/xml"));

    std::size_t turn = 0;
    loop.run(
        [&] {
            const Bytes& body = valid[loop.below(valid.size())];
            switch (turn++ % 4) {
            case 0: return loop.random_bytes(64);
            case 1: return Bytes(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(loop.below(body.size())));
            case 2: {
                Bytes spliced = body;
                for (std::size_t k = 1 + loop.below(3); k > 0; --k) {
                    const Bytes piece = bytes_of(pieces[loop.below(pieces.size())]);
                    spliced.insert(spliced.begin() + static_cast<std::ptrdiff_t>(loop.below(spliced.size() + 1)),
                                   piece.begin(), piece.end());
                }
                return spliced;
            }
            default: return loop.mutated(body);
            }
        },
        [&](const Bytes& input) { fuzz::xml_input(input); });
}
