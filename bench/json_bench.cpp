// JSON, the family's default body, side by side with a packaged JSON library: the 5-field
// Payment of contract_bench through acemq's JsonCodec and through Boost.JSON's own
// value_from/serialize and parse/value_to in the same run, camelCase keys both ways, so the
// bytes are the same. JsonCodec reads with Boost.JSON's parser (its SAX events build the
// Value) and writes by hand; Boost.JSON's compiled part is the one lib/codec/json_codec.cpp
// compiles (boost/json/src.hpp there), so this file includes only its headers.
// Then the same hostile bodies to both, to show which refuses what: the hand-written codec
// is kept only while it is as fast and as strict (issue 31).
// simdjson (Debian's libsimdjson-dev, when the build found it: a bench-only dependency)
// reads the same body with its On-Demand API into the same struct, the body first copied
// into a reused buffer with the padding simdjson reads past the end (a message's body has
// none); and with its DOM parser, which checks the whole body as JsonCodec and Boost.JSON
// do (its hostile-body column is the DOM parser too).
//
//   build-bench/bench/json_bench
#include <acemq/acemq.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#if ACEMQ_BENCH_SIMDJSON
#include <simdjson.h>
#endif

#include "measure.hpp"

namespace {

struct Payment {
    std::string payment_id;
    std::int64_t amount_cents;
    std::string currency;
    std::vector<std::string> items;
    std::optional<std::string> note;
};

// Boost.JSON's customisation points, found by argument-dependent lookup.
void tag_invoke(boost::json::value_from_tag, boost::json::value& out, const Payment& payment) {
    boost::json::object object;
    object.reserve(5);
    object.emplace("paymentId", payment.payment_id);
    object.emplace("amountCents", payment.amount_cents);
    object.emplace("currency", payment.currency);
    object.emplace("items", boost::json::value_from(payment.items));
    if (payment.note) {
        object.emplace("note", *payment.note);
    } else {
        object.emplace("note", nullptr);
    }
    out = std::move(object);
}

Payment tag_invoke(boost::json::value_to_tag<Payment>, const boost::json::value& in) {
    const boost::json::object& object = in.as_object();
    const boost::json::value& note = object.at("note");
    return Payment{
        boost::json::value_to<std::string>(object.at("paymentId")), object.at("amountCents").to_number<std::int64_t>(),
        boost::json::value_to<std::string>(object.at("currency")),
        boost::json::value_to<std::vector<std::string>>(object.at("items")),
        note.is_null() ? std::nullopt : std::optional<std::string>(boost::json::value_to<std::string>(note))};
}

std::string boost_encode(const Payment& payment) { return boost::json::serialize(boost::json::value_from(payment)); }

Payment boost_decode(std::string_view text) { return boost::json::value_to<Payment>(boost::json::parse(text)); }

#if ACEMQ_BENCH_SIMDJSON
// The body copied into `buffer`, which keeps simdjson's padding after it.
simdjson::padded_string_view padded(std::string_view body, std::vector<char>& buffer) {
    buffer.resize(body.size() + simdjson::SIMDJSON_PADDING);
    std::copy(body.begin(), body.end(), buffer.begin());
    return simdjson::padded_string_view(buffer.data(), body.size(), buffer.size());
}

// Fields looked up by key, as On-Demand reads: it checks the UTF-8 and the structure's
// brackets of the whole body, but a value only when read, and nothing after the last read
// (simdjson 3.0.1's document has no at_end()), so it is the less strict reading here.
Payment simdjson_decode(simdjson::ondemand::parser& parser, std::string_view body, std::vector<char>& buffer) {
    simdjson::ondemand::document document = parser.iterate(padded(body, buffer));
    simdjson::ondemand::object object = document.get_object();
    Payment payment{std::string(std::string_view(object["paymentId"])),
                    std::int64_t(object["amountCents"]),
                    std::string(std::string_view(object["currency"])),
                    {},
                    std::nullopt};
    for (auto item : object["items"].get_array()) payment.items.emplace_back(std::string_view(item));
    simdjson::ondemand::value note = object["note"];
    if (!note.is_null()) payment.note = std::string(std::string_view(note));
    return payment;
}

// The DOM parser checks the whole body first (and picks its SIMD kernel at run time).
Payment simdjson_dom_decode(simdjson::dom::parser& parser, std::string_view body, std::vector<char>& buffer) {
    padded(body, buffer);
    const simdjson::dom::object object = parser.parse(buffer.data(), body.size(), false);
    Payment payment{std::string(std::string_view(object["paymentId"])),
                    std::int64_t(object["amountCents"]),
                    std::string(std::string_view(object["currency"])),
                    {},
                    std::nullopt};
    for (const std::string_view item : object["items"].get_array()) payment.items.emplace_back(item);
    const simdjson::dom::element note = object["note"];
    if (!note.is_null()) payment.note = std::string(std::string_view(note));
    return payment;
}
#endif

std::span<const std::byte> bytes_of(std::string_view text) {
    return std::as_bytes(std::span(text.data(), text.size()));
}

// Whether each refuses `body` as a Payment: what "as strict" means, case by case.
void compare_refusal(const char* what, const std::string& body, const acemq::Codec& codec) {
    bool ours = false;
    bool theirs = false;
    try {
        acemq::decode<acemq::Value>(codec, bytes_of(body), acemq::content_types::json);
    } catch (const acemq::DecodeError&) {
        ours = true;
    }
    try {
        boost::json::parse(body);
    } catch (const std::exception&) {
        theirs = true;
    }
    std::printf("  %-44s acemq %-8s Boost.JSON %-8s", what, ours ? "refuses" : "accepts",
                theirs ? "refuses" : "accepts");
#if ACEMQ_BENCH_SIMDJSON
    simdjson::dom::parser parser;
    const bool simdjson_refuses = parser.parse(body).error() != simdjson::SUCCESS;
    std::printf(" simdjson %s", simdjson_refuses ? "refuses" : "accepts");
#endif
    std::puts("");
}

}  // namespace

int main() {
    const Payment payment{"p-1", 4250, "EUR", {"widget", "gasket"}, std::nullopt};
    const acemq::JsonCodec codec;

    const acemq::Encoded ours_body = acemq::encode(codec, payment);
    const std::string boost_body = boost_encode(payment);
    const std::string_view ours_text(reinterpret_cast<const char*>(ours_body.body.data()), ours_body.body.size());
    std::printf("JSON, one Payment (5 fields, 2 items), %zu bytes:\n  acemq:      %.*s\n  Boost.JSON: %s\n",
                ours_body.body.size(), static_cast<int>(ours_text.size()), ours_text.data(), boost_body.c_str());
    if (ours_text != boost_body) {
        std::fputs("json_bench: acemq and Boost.JSON wrote different bodies; the comparison would be unfair\n", stderr);
        return 1;
    }
    if (boost_decode(ours_text).items != payment.items ||
        acemq::decode<Payment>(codec, bytes_of(boost_body), ours_body.content_type).items != payment.items) {
        std::fputs("json_bench: a body did not read back as the Payment written\n", stderr);
        return 1;
    }

    const double ours_encode = bench::ns_per_op([&] { bench::keep(acemq::encode(codec, payment)); });
    const double boost_encode_ns = bench::ns_per_op([&] { bench::keep(boost_encode(payment)); });
    const double ours_decode =
        bench::ns_per_op([&] { bench::keep(acemq::decode<Payment>(codec, ours_body.body, ours_body.content_type)); });
    const double boost_decode_ns = bench::ns_per_op([&] { bench::keep(boost_decode(boost_body)); });
    // What a consumer on defaults runs: the composite picks JsonCodec by content type.
    const auto consumer_codec = acemq::default_codec();
    const double default_decode = bench::ns_per_op(
        [&] { bench::keep(acemq::decode<Payment>(*consumer_codec, ours_body.body, ours_body.content_type)); });

    bench::report_ratio("encode: acemq JsonCodec / Boost.JSON value_from + serialize", ours_encode, boost_encode_ns);
    bench::report_ratio("decode: acemq JsonCodec / Boost.JSON parse + value_to", ours_decode, boost_decode_ns);
    bench::report_ratio("decode via default_codec() / Boost.JSON", default_decode, boost_decode_ns);
#if ACEMQ_BENCH_SIMDJSON
    simdjson::ondemand::parser simdjson_parser;
    std::vector<char> simdjson_buffer;
    simdjson::dom::parser simdjson_dom;
    if (simdjson_decode(simdjson_parser, ours_text, simdjson_buffer).items != payment.items ||
        simdjson_dom_decode(simdjson_dom, ours_text, simdjson_buffer).items != payment.items) {
        std::fputs("json_bench: simdjson did not read the body back as the Payment written\n", stderr);
        return 1;
    }
    const double simdjson_decode_ns =
        bench::ns_per_op([&] { bench::keep(simdjson_decode(simdjson_parser, ours_text, simdjson_buffer)); });
    const double simdjson_dom_ns =
        bench::ns_per_op([&] { bench::keep(simdjson_dom_decode(simdjson_dom, ours_text, simdjson_buffer)); });
    bench::report_ratio("decode: acemq JsonCodec / simdjson On-Demand", ours_decode, simdjson_decode_ns);
    bench::report_ratio("decode: Boost.JSON / simdjson On-Demand", boost_decode_ns, simdjson_decode_ns);
    bench::report_ratio("decode: acemq JsonCodec / simdjson DOM", ours_decode, simdjson_dom_ns);
    std::printf("  ns per decode: acemq %.0f, Boost.JSON %.0f, simdjson On-Demand %.0f, DOM %.0f\n", ours_decode,
                boost_decode_ns, simdjson_decode_ns, simdjson_dom_ns);
#else
    std::puts(
        "  simdjson: not measured (the build found no simdjson; install Debian's libsimdjson-dev and "
        "reconfigure)");
#endif
    bench::record({.name = "JSON encode of a 5-field struct",
                   .ours = ours_encode,
                   .against = "Boost.JSON value_from + serialize",
                   .underneath = boost_encode_ns,
                   .unit = "ns/op"});
    bench::record({.name = "JSON decode of a 5-field struct",
                   .ours = ours_decode,
                   .against = "Boost.JSON parse + value_to",
                   .underneath = boost_decode_ns,
                   .unit = "ns/op"});
    bench::record({.name = "JSON decode of a 5-field struct via default_codec()",
                   .ours = default_decode,
                   .against = "Boost.JSON parse + value_to",
                   .underneath = boost_decode_ns,
                   .unit = "ns/op"});

#if ACEMQ_BENCH_SIMDJSON
    bench::record({.name = "JSON decode of a 5-field struct, against simdjson",
                   .ours = ours_decode,
                   .against = "simdjson On-Demand (padded copy)",
                   .underneath = simdjson_decode_ns,
                   .unit = "ns/op"});
    bench::record({.name = "JSON decode of a 5-field struct, against simdjson's DOM",
                   .ours = ours_decode,
                   .against = "simdjson DOM parse + lookups (padded copy)",
                   .underneath = simdjson_dom_ns,
                   .unit = "ns/op"});
#endif

    std::puts("hostile bodies, each read as a JSON value:");
    compare_refusal("invalid UTF-8 in a string", "{\"note\":\"\xC3\x28\"}", codec);
    compare_refusal("a lone surrogate escape", R"({"note":"\ud800"})", codec);
    compare_refusal("trailing bytes after the value", R"({"note":"x"} x)", codec);
    compare_refusal("a leading zero (0123)", R"({"amountCents":0123})", codec);
    compare_refusal("NaN", R"({"amountCents":NaN})", codec);
    compare_refusal("a trailing comma", R"({"items":["a",]})", codec);
    compare_refusal("a comment", "{/* no */\"note\":\"x\"}", codec);
    compare_refusal("an unescaped control character", "{\"note\":\"a\x01\"}", codec);
    compare_refusal("nesting 100 deep", std::string(100, '[') + std::string(100, ']'), codec);
    compare_refusal("an empty body", "", codec);
}
