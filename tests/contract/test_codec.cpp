// Codecs: round trips of generated values through msgpack and JSON, the content-type
// rules of the composite, and hostile input that must end in DecodeError, never a crash.
#include <catch2/catch.hpp>

#include <acemq/codec.hpp>
#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/msgpack_codec.hpp>
#include <acemq/reflect.hpp>
#include <acemq/value.hpp>
#include <acemq/value_writer.hpp>

#include <boost/json.hpp>
#include <msgpack.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../support/codec_bodies.hpp"
#include "rfc3339.hpp"

namespace {

using acemq::Value;
using Bytes = std::vector<std::byte>;

// ---- types under test ---------------------------------------------------------------

struct Payment {
    std::string payment_id;
    std::int64_t amount_cents;
    bool operator==(const Payment&) const = default;
};

enum class Colour : std::uint8_t { red, green, blue };

struct Line {
    std::string sku;
    std::uint32_t quantity;
    std::optional<double> discount;
    std::vector<std::string> labels;
    bool operator==(const Line&) const = default;
};

struct Extremes {
    std::int64_t i64;
    std::uint64_t u64;
    std::int8_t i8;
    std::uint16_t u16;
    std::int32_t i32;
    float f;
    bool operator==(const Extremes&) const = default;
};

struct Order {
    std::string order_id;
    std::int64_t total_cents;
    bool paid;
    double ratio;
    std::vector<Line> items;
    std::optional<std::string> note;
    std::optional<Line> gift;
    std::map<std::string, std::int32_t> tags;
    std::map<std::int64_t, std::string> by_number;
    Bytes blob;
    Extremes extremes;
    std::array<std::int16_t, 3> triple;
    Colour colour;
    std::vector<std::vector<std::uint64_t>> matrix;
    std::vector<std::optional<std::int32_t>> sparse;
    bool operator==(const Order&) const = default;
};

struct Item {
    std::string sku;
    int qty;
};
struct Cart {
    std::string id;
    std::vector<Item> items;
};
struct Reading {
    std::uint8_t level;
};
struct Maybe {
    std::string id;
    std::optional<std::int32_t> count;
};
struct Scaled {
    double factor;
};

// ---- helpers -------------------------------------------------------------------------

using testing_support::bytes_of;
using testing_support::decode_error_of;
using testing_support::encode_error_of;

std::string text_of(const Bytes& bytes) { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }

// ---- generators ----------------------------------------------------------------------

class Generator {
public:
    explicit Generator(std::uint32_t seed) : rng_(seed) {}

    std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
    bool coin() { return below(2) == 0; }

    template <class I>
    I integer() {
        using L = std::numeric_limits<I>;
        switch (below(5)) {
        case 0: return L::min();
        case 1: return L::max();
        case 2: return I{0};
        default: return static_cast<I>((std::uint64_t{rng_()} << 32) | rng_());
        }
    }

    double finite_double() {
        static constexpr std::array<double, 9> special = {0.0,
                                                          -0.0,
                                                          0.1,
                                                          -1.5,
                                                          1e300,
                                                          std::numeric_limits<double>::max(),
                                                          std::numeric_limits<double>::lowest(),
                                                          std::numeric_limits<double>::min(),
                                                          std::numeric_limits<double>::denorm_min()};
        if (coin()) return special[below(special.size())];
        for (;;) {  // random bit patterns, skipping NaN and infinities
            const std::uint64_t bits = (std::uint64_t{rng_()} << 32) | rng_();
            double d;
            std::memcpy(&d, &bits, sizeof d);
            if (std::isfinite(d)) return d;
        }
    }

    float finite_float() {
        for (;;) {
            const std::uint32_t bits = rng_();
            float f;
            std::memcpy(&f, &bits, sizeof f);
            if (std::isfinite(f)) return f;
        }
    }

    // Code points from every UTF-8 length, NUL, quotes and backslashes included.
    std::string text(std::size_t max_length = 12) {
        std::string out;
        const std::size_t length = below(max_length + 1);
        for (std::size_t i = 0; i < length; ++i) {
            std::uint32_t cp;
            switch (below(5)) {
            case 0: cp = static_cast<std::uint32_t>(below(0x80)); break;
            case 1: cp = "\"\\/\b\n\x01"[below(6)]; break;
            case 2: cp = 0x80 + static_cast<std::uint32_t>(below(0x800 - 0x80)); break;
            case 3:
                do cp = 0x800 + static_cast<std::uint32_t>(below(0x10000 - 0x800));
                while (cp >= 0xD800 && cp <= 0xDFFF);
                break;
            default: cp = 0x10000 + static_cast<std::uint32_t>(below(0x110000 - 0x10000));
            }
            append_utf8(out, cp);
        }
        return out;
    }

    Bytes blob() {
        Bytes out(below(20));
        for (auto& b : out) b = static_cast<std::byte>(rng_());
        return out;
    }

    Line line() {
        Line l{text(), integer<std::uint32_t>(), std::nullopt, {}};
        if (coin()) l.discount = finite_double();
        for (std::size_t i = below(4); i > 0; --i) l.labels.push_back(text(5));
        return l;
    }

    Order order() {
        Order o{};
        o.order_id = text();
        o.total_cents = integer<std::int64_t>();
        o.paid = coin();
        o.ratio = finite_double();
        for (std::size_t i = below(5); i > 0; --i) o.items.push_back(line());
        if (coin()) o.note = text();
        if (coin()) o.gift = line();
        for (std::size_t i = below(4); i > 0; --i) o.tags[text(6)] = integer<std::int32_t>();
        for (std::size_t i = below(4); i > 0; --i) o.by_number[integer<std::int64_t>()] = text(4);
        o.blob = blob();
        o.extremes = {integer<std::int64_t>(),  integer<std::uint64_t>(), integer<std::int8_t>(),
                      integer<std::uint16_t>(), integer<std::int32_t>(),  finite_float()};
        o.triple = {integer<std::int16_t>(), integer<std::int16_t>(), integer<std::int16_t>()};
        o.colour = static_cast<Colour>(below(3));
        for (std::size_t i = below(3); i > 0; --i) {
            o.matrix.emplace_back();
            for (std::size_t j = below(4); j > 0; --j) o.matrix.back().push_back(integer<std::uint64_t>());
        }
        for (std::size_t i = below(4); i > 0; --i)
            o.sparse.push_back(coin() ? std::optional<std::int32_t>(integer<std::int32_t>()) : std::nullopt);
        return o;
    }

    // A dynamic value of any kind a format can carry back unchanged.
    Value value(bool json, std::size_t depth = 0) {
        const std::size_t kinds = depth > 3 ? 6 : 8;
        switch (below(kinds)) {
        case 0: return Value();
        case 1: return Value(coin());
        case 2: return Value(integer<std::int64_t>());
        case 3: return Value(integer<std::uint64_t>());
        case 4: return Value(finite_double());
        case 5: return json ? Value(text()) : (coin() ? Value(text()) : Value(blob()));
        case 6: {
            Value::Array a;
            for (std::size_t i = below(5); i > 0; --i) a.push_back(value(json, depth + 1));
            return Value(std::move(a));
        }
        default: {
            Value::Map m;
            for (std::size_t i = below(5); i > 0; --i) {
                Value key = json || coin() ? Value(text(6)) : value(json, depth + 1);
                const bool duplicate = std::any_of(m.begin(), m.end(), [&](const auto& kv) { return kv.first == key; });
                if (!duplicate) m.emplace_back(std::move(key), value(json, depth + 1));
            }
            return Value(std::move(m));
        }
        }
    }

    std::mt19937& engine() { return rng_; }

private:
    static void append_utf8(std::string& out, std::uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    std::mt19937 rng_;
};

const acemq::MsgpackCodec msgpack_codec;
const acemq::JsonCodec json_codec;
// Keys records by C++ field name, as to_value does, so a typed value and its Value form
// write the same bytes.
const acemq::JsonCodec json_as_is{{.names = acemq::FieldNames::as_is}};
const acemq::TextCodec text_codec;
const acemq::BytesCodec bytes_codec;

// A stand-in that claims what the real codec claims but answers with its own name, so
// a test can see which codec the composite picked.
class Probe final : public acemq::Codec {
public:
    explicit Probe(std::shared_ptr<const acemq::Codec> real) : real_(std::move(real)) {}
    std::string_view name() const noexcept override { return real_->name(); }
    std::string_view content_type() const noexcept override { return real_->content_type(); }
    bool can_decode(std::string_view ct) const noexcept override { return real_->can_decode(ct); }
    std::vector<std::byte> encode(const Value& v) const override { return real_->encode(v); }
    Value decode(std::span<const std::byte>, std::string_view) const override { return Value(std::string(name())); }

private:
    std::shared_ptr<const acemq::Codec> real_;
};

std::vector<std::shared_ptr<const acemq::Codec>> family() {
    return {std::make_shared<acemq::MsgpackCodec>(), std::make_shared<acemq::JsonCodec>(),
            std::make_shared<acemq::TextCodec>(), std::make_shared<acemq::BytesCodec>()};
}

}  // namespace

// ---- Value ---------------------------------------------------------------------------

TEST_CASE("Value equality treats integers by value, NaN as itself, records apart from maps") {
    CHECK(Value(std::int64_t{5}) == Value(std::uint64_t{5}));
    CHECK_FALSE(Value(std::int64_t{-1}) == Value(std::numeric_limits<std::uint64_t>::max()));
    CHECK_FALSE(Value(std::int64_t{5}) == Value(5.0));
    CHECK(Value(std::nan("")) == Value(std::nan("")));
    CHECK_FALSE(Value(1.0) == Value(2.0));
    CHECK(Value("a") == Value(std::string("a")));
    CHECK_FALSE(Value("a") == Value(bytes_of("a")));
    CHECK_FALSE(Value(Value::Record{{"a", Value(1)}}) == Value(Value::Map{{Value("a"), Value(1)}}));
    CHECK(Value(Value::Array{Value(1), Value()}) == Value(Value::Array{Value(1u), Value(nullptr)}));
}

TEST_CASE("Value accessors name the kind they wanted and the kind they found") {
    const auto message = decode_error_of([] { (void)Value(42).as_string(); });
    CHECK(message == "acemq: expected a string, found a value of kind int64");
    CHECK(decode_error_of([] { (void)Value(-1).as_uint64(); }).find("negative") != std::string::npos);
    CHECK(decode_error_of([] {
              (void)Value(std::numeric_limits<std::uint64_t>::max()).as_int64();
          }).find("INT64_MAX") != std::string::npos);
    CHECK(Value(3).as_double() == 3.0);
    CHECK(decode_error_of([] { (void)Value(true).find("x"); }).find("a record or a map") != std::string::npos);
}

TEST_CASE("base64 is standard and padded, and refuses anything else") {
    using acemq::detail::base64_decode;
    using acemq::detail::base64_encode;
    CHECK(base64_encode(bytes_of("")) == "");
    CHECK(base64_encode(bytes_of("f")) == "Zg==");
    CHECK(base64_encode(bytes_of("fo")) == "Zm8=");
    CHECK(base64_encode(bytes_of("foo")) == "Zm9v");
    CHECK(base64_encode(bytes_of("foob")) == "Zm9vYg==");
    CHECK(base64_decode("Zm9vYmE=") == bytes_of("fooba"));
    CHECK(base64_decode("") == Bytes{});
    CHECK_FALSE(base64_decode("Zm9"));
    CHECK_FALSE(base64_decode("Zm=v"));
    CHECK_FALSE(base64_decode("Zg==Zg=="));
    CHECK_FALSE(base64_decode("Zm9*"));
}

TEST_CASE("UTF-8 validation catches every malformation") {
    using acemq::detail::invalid_utf8_at;
    CHECK_FALSE(invalid_utf8_at("plain ascii"));
    CHECK_FALSE(invalid_utf8_at("h\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
    CHECK(invalid_utf8_at("ab\xFF") == 2u);
    CHECK(invalid_utf8_at("\xC3\x28") == 0u);          // bad continuation
    CHECK(invalid_utf8_at("\xC0\xAF") == 0u);          // overlong
    CHECK(invalid_utf8_at("\xE0\x80\xAF") == 0u);      // overlong
    CHECK(invalid_utf8_at("\xED\xA0\x80") == 0u);      // surrogate
    CHECK(invalid_utf8_at("\xF4\x90\x80\x80") == 0u);  // past U+10FFFF
    CHECK(invalid_utf8_at("x\xE2\x82") == 1u);         // truncated
}

// ---- reflection ----------------------------------------------------------------------

TEST_CASE("a struct becomes a record with its field names") {
    const Value v = acemq::to_value(Payment{"p-1", 4250});
    const Value::Record expected{{"payment_id", Value("p-1")}, {"amount_cents", Value(4250)}};
    CHECK(v == Value(expected));

    const auto& order_fields = acemq::detail::field_names<Order>;
    CHECK(std::vector<std::string_view>(order_fields.begin(), order_fields.end()) ==
          std::vector<std::string_view>{"order_id", "total_cents", "paid", "ratio", "items", "note", "gift", "tags",
                                        "by_number", "blob", "extremes", "triple", "colour", "matrix", "sparse"});
}

TEST_CASE("a struct reads from a record, a map by name, or an array by position") {
    const Payment p{"p-1", 4250};
    CHECK(acemq::from_value<Payment>(acemq::to_value(p)) == p);
    CHECK(acemq::from_value<Payment>(Value(Value::Map{{Value("amount_cents"), Value(4250)},
                                                      {Value("extra"), Value(true)},
                                                      {Value("payment_id"), Value("p-1")}})) == p);
    CHECK(acemq::from_value<Payment>(Value(Value::Array{Value("p-1"), Value(4250)})) == p);

    SECTION("an array of the wrong length") {
        const auto message =
            decode_error_of([] { (void)acemq::from_value<Payment>(Value(Value::Array{Value("p-1")})); });
        CHECK(message == "acemq: expected 2 fields for Payment, found an array of 1");
    }
    SECTION("a missing field names the type and the field") {
        const auto message = decode_error_of([] {
            (void)acemq::from_value<Payment>(Value(Value::Map{{Value("payment_id"), Value("p")}}));
        });
        CHECK(message ==
              "acemq: the Payment has no field \"amount_cents\" (send it, or declare "
              "the field std::optional)");
    }
    SECTION("a missing optional field is nullopt") {
        const auto m = acemq::from_value<Maybe>(Value(Value::Map{{Value("id"), Value("x")}}));
        CHECK(m.id == "x");
        CHECK_FALSE(m.count.has_value());
    }
    SECTION("neither record, map nor array") {
        const auto message = decode_error_of([] { (void)acemq::from_value<Payment>(Value("p")); });
        CHECK(message == "acemq: expected a record, map or array (Payment), found a string");
    }
}

TEST_CASE("integers are range-checked against the target type") {
    CHECK(decode_error_of([] {
              (void)acemq::from_value<Reading>(Value(Value::Map{{Value("level"), Value(300)}}));
          }) == "acemq: Reading.level: 300 does not fit in uint8_t (0..255)");
    CHECK(decode_error_of([] { (void)acemq::from_value<std::uint32_t>(Value(-1)); }) ==
          "acemq: -1 does not fit in uint32_t (0..4294967295)");
    CHECK(decode_error_of([] {
              (void)acemq::from_value<std::int64_t>(Value(std::numeric_limits<std::uint64_t>::max()));
          }).find("18446744073709551615 does not fit in int64_t") != std::string::npos);
    CHECK(decode_error_of([] {
              (void)acemq::from_value<std::int16_t>(Value(40000));
          }).find("does not fit in int16_t (-32768..32767)") != std::string::npos);
    CHECK(acemq::from_value<std::int8_t>(Value(-128)) == -128);
    CHECK(acemq::from_value<std::uint64_t>(Value(std::numeric_limits<std::uint64_t>::max())) ==
          std::numeric_limits<std::uint64_t>::max());
    CHECK(decode_error_of([] { (void)acemq::from_value<int>(Value(1.5)); }) ==
          "acemq: expected an integer (int32_t), found a double");
    CHECK(decode_error_of([] { (void)acemq::from_value<float>(Value(1e300)); }).find("does not fit in float") !=
          std::string::npos);
    CHECK(acemq::from_value<double>(Value(7)) == 7.0);
}

TEST_CASE("wrong kinds name the field path") {
    const Value cart(
        Value::Map{{Value("id"), Value("c-1")},
                   {Value("items"), Value(Value::Array{
                                        Value(Value::Map{{Value("sku"), Value("a")}, {Value("qty"), Value(1)}}),
                                        Value(Value::Array{Value("b"), Value(2)}),
                                        Value(Value::Map{{Value("sku"), Value(7)}, {Value("qty"), Value(3)}}),
                                    })}});
    CHECK(decode_error_of([&] { (void)acemq::from_value<Cart>(cart); }) ==
          "acemq: Cart.items[2].sku: expected a string (std::string), found an int64");
    const Value tags(Value::Map{{Value("eur"), Value("ten")}});
    CHECK(decode_error_of([&] {
              (void)acemq::from_value<std::map<std::string, int>>(tags);
          }).find("[\"eur\"]: expected an integer (int32_t), found a string") != std::string::npos);
    const Value keys(Value::Map{{Value("x1"), Value("a")}});
    CHECK(decode_error_of([&] {
              (void)acemq::from_value<std::map<int, std::string>>(keys);
          }).find("the key \"x1\" is not a int32_t") != std::string::npos);
    CHECK(decode_error_of([] { (void)acemq::from_value<Bytes>(Value("not base64!")); }).find("not base64") !=
          std::string::npos);
}

// ---- round trips ---------------------------------------------------------------------

TEST_CASE("generated structs survive msgpack and JSON unchanged") {
    Generator gen(20240611);
    const auto composite = acemq::default_codec();
    for (int i = 0; i < 400; ++i) {
        const Order order = gen.order();
        for (const acemq::Codec* codec : {static_cast<const acemq::Codec*>(&msgpack_codec),
                                          static_cast<const acemq::Codec*>(&json_codec), composite.get()}) {
            INFO("case " << i << " via " << codec->name());
            const acemq::Encoded encoded = acemq::encode(*codec, order);
            CHECK(encoded.content_type == codec->content_type());
            // The composite must route what it (or JSON) wrote back to the right reader.
            REQUIRE(acemq::decode<Order>(*composite, encoded.body, encoded.content_type) == order);
            REQUIRE(acemq::decode<Order>(*codec, encoded.body, encoded.content_type) == order);
        }
        const auto as_json = acemq::encode(json_codec, order);
        REQUIRE(acemq::decode<Order>(*composite, as_json.body, "") == order);  // untyped → JSON
    }
}

TEST_CASE("default_codec_reading writes JSON and reads the codecs it is given by content type, bytes last") {
    struct Tagged final : acemq::Codec {
        std::string_view name() const noexcept override { return "TaggedCodec"; }
        std::string_view content_type() const noexcept override { return "application/x-tagged"; }
        bool can_decode(std::string_view content_type) const noexcept override {
            return content_type == "application/x-tagged";
        }
        std::vector<std::byte> encode(const Value&) const override { return {}; }
        Value decode(std::span<const std::byte>, std::string_view) const override { return Value("tagged"); }
    };
    const auto codec = acemq::default_codec_reading({std::make_shared<Tagged>()});
    CHECK(codec->content_type() == acemq::content_types::json);
    const std::vector<std::byte> body{std::byte{'x'}};
    CHECK(codec->decode(body, "application/x-tagged") == Value("tagged"));
    const auto& composite = dynamic_cast<const acemq::CompositeCodec&>(*codec);
    REQUIRE(composite.codecs().size() == 5);
    // Before TextCodec, which claims every text/* type: text/xml is XML's, not text's.
    CHECK(composite.codecs()[2]->name() == "TaggedCodec");
    CHECK(composite.codecs()[3]->name() == "TextCodec");
    CHECK(composite.claimant("text/plain")->name() == "TextCodec");
    CHECK(composite.claimant("application/x-other")->name() == "BytesCodec");
    CHECK(composite.claimant("application/msgpack")->name() == "MsgpackCodec");
    CHECK_THROWS_AS(acemq::default_codec_reading({nullptr}), acemq::InvalidArgument);
}

TEST_CASE("generated dynamic values survive msgpack and JSON unchanged") {
    Generator gen(7);
    for (int i = 0; i < 1000; ++i) {
        INFO("case " << i);
        const Value m = gen.value(false);
        REQUIRE(msgpack_codec.decode(msgpack_codec.encode(m), "") == m);
        const Value j = gen.value(true);
        REQUIRE(json_codec.decode(json_codec.encode(j), "") == j);
    }
}

// ---- streaming encode ----------------------------------------------------------------

namespace {

// What the codecs wrote before they streamed, kept as references the writers must match
// byte for byte: msgpack-c's packer (but doubles always as float 64) and Boost.JSON's
// serializer over a json::value.
void reference_msgpack(msgpack::sbuffer& buffer, const Value& v) {
    msgpack::packer<msgpack::sbuffer> out(buffer);
    switch (v.kind()) {
    case Value::Kind::null: out.pack_nil(); return;
    case Value::Kind::boolean: v.as_bool() ? out.pack_true() : out.pack_false(); return;
    case Value::Kind::int64: out.pack_int64(v.as_int64()); return;
    case Value::Kind::uint64: out.pack_uint64(v.as_uint64()); return;
    case Value::Kind::float64: {
        // msgpack-c packs an integral double as an integer: write float 64 by hand.
        const auto bits = std::bit_cast<std::uint64_t>(v.as_double());
        char packed[9] = {static_cast<char>(0xcb)};
        for (int k = 0; k < 8; ++k) packed[1 + k] = static_cast<char>(bits >> (56 - 8 * k));
        buffer.write(packed, sizeof packed);
        return;
    }
    case Value::Kind::string: {
        const auto size = static_cast<std::uint32_t>(v.as_string().size());
        out.pack_str(size);
        out.pack_str_body(v.as_string().data(), size);
        return;
    }
    case Value::Kind::bytes: {
        const auto size = static_cast<std::uint32_t>(v.as_bytes().size());
        out.pack_bin(size);
        out.pack_bin_body(reinterpret_cast<const char*>(v.as_bytes().data()), size);
        return;
    }
    case Value::Kind::array:
        out.pack_array(static_cast<std::uint32_t>(v.as_array().size()));
        for (const auto& element : v.as_array()) reference_msgpack(buffer, element);
        return;
    case Value::Kind::map:
        out.pack_map(static_cast<std::uint32_t>(v.as_map().size()));
        for (const auto& [key, element] : v.as_map()) {
            reference_msgpack(buffer, key);
            reference_msgpack(buffer, element);
        }
        return;
    case Value::Kind::record:
        out.pack_array(static_cast<std::uint32_t>(v.as_record().size()));
        for (const auto& field : v.as_record()) reference_msgpack(buffer, field.second);
        return;
    }
}

Bytes reference_msgpack(const Value& v) {
    msgpack::sbuffer buffer;
    reference_msgpack(buffer, v);
    return bytes_of(std::string_view(buffer.data(), buffer.size()));
}

boost::json::value reference_json(const Value& v) {
    namespace json = boost::json;
    switch (v.kind()) {
    case Value::Kind::null: return nullptr;
    case Value::Kind::boolean: return v.as_bool();
    case Value::Kind::int64: return v.as_int64();
    case Value::Kind::uint64: return v.as_uint64();
    case Value::Kind::float64: return v.as_double();
    case Value::Kind::string: return json::string(v.as_string());
    case Value::Kind::bytes: return json::string(acemq::detail::base64_encode(v.as_bytes()));
    case Value::Kind::array: {
        json::array out;
        for (const auto& element : v.as_array()) out.push_back(reference_json(element));
        return out;
    }
    case Value::Kind::map: {
        json::object out;
        for (const auto& [key, element] : v.as_map()) {
            const std::string name = key.kind() == Value::Kind::string  ? key.as_string()
                                     : key.kind() == Value::Kind::int64 ? std::to_string(key.as_int64())
                                                                        : std::to_string(key.as_uint64());
            out.emplace(name, reference_json(element));
        }
        return out;
    }
    case Value::Kind::record: {
        json::object out;
        for (const auto& [name, element] : v.as_record()) out.emplace(name, reference_json(element));
        return out;
    }
    }
    return nullptr;
}

// A codec of an application's own, written against Values only.
class ValueOnlyCodec final : public acemq::Codec {
public:
    std::string_view name() const noexcept override { return "ValueOnlyCodec"; }
    std::string_view content_type() const noexcept override { return "application/x-kind"; }
    bool can_decode(std::string_view) const noexcept override { return false; }
    std::vector<std::byte> encode(const Value& v) const override { return bytes_of(acemq::kind_name(v.kind())); }
    Value decode(std::span<const std::byte>, std::string_view) const override { return {}; }
};

}  // namespace

TEST_CASE("typed values stream the bytes their Value form encodes to, as before streaming") {
    Generator gen(5150);
    for (int i = 0; i < 2000; ++i) {
        INFO("case " << i);
        const Order order = gen.order();
        const Value tree = acemq::to_value(order);
        const auto msgpack_body = acemq::encode(msgpack_codec, order).body;
        REQUIRE(msgpack_body == msgpack_codec.encode(tree));
        REQUIRE(msgpack_body == reference_msgpack(tree));
        const auto json_body = acemq::encode(json_as_is, order).body;
        REQUIRE(json_body == json_as_is.encode(tree));
        REQUIRE(text_of(json_body) == boost::json::serialize(reference_json(tree)));
    }
    for (int i = 0; i < 2000; ++i) {
        INFO("dynamic case " << i);
        const Value m = gen.value(false);
        REQUIRE(msgpack_codec.encode(m) == reference_msgpack(m));
        REQUIRE(acemq::encode(msgpack_codec, m).body == reference_msgpack(m));
        const Value j = gen.value(true);
        REQUIRE(text_of(json_codec.encode(j)) == boost::json::serialize(reference_json(j)));
    }
    // Every length form: fix, 8, 16 and 32 bits.
    for (std::size_t n : {0u, 15u, 16u, 31u, 32u, 255u, 256u, 65535u, 65536u}) {
        INFO("length " << n);
        Value::Map entries;
        for (std::size_t k = 0; k < n; ++k) entries.emplace_back(Value(k), Value());
        for (const Value& v : {Value(std::string(n, 'x')), Value(Bytes(n, std::byte{7})),
                               Value(Value::Array(n, Value(1))), Value(std::move(entries))})
            REQUIRE(msgpack_codec.encode(v) == reference_msgpack(v));
    }
    const std::string escapes = "q\"b\\s/\x01\x1f\x7f\b\f\n\r\t\xC3\xA9";
    const Value tricky(Value::Record{{escapes, Value(escapes)}});
    CHECK(text_of(json_codec.encode(tricky)) == boost::json::serialize(reference_json(tricky)));
}

TEST_CASE("to_value is write_value collected, and a Value writes itself back unchanged") {
    Generator gen(8);
    for (int i = 0; i < 200; ++i) {
        const Value v = gen.value(false);
        acemq::ValueBuilder builder;
        acemq::write_value(v, builder);
        REQUIRE(builder.take() == v);
        REQUIRE(acemq::to_value(v) == v);
    }
    const Value order = acemq::to_value(gen.order());
    CHECK(acemq::to_value(order) == order);
}

TEST_CASE("a codec written against Values alone still encodes typed values") {
    const ValueOnlyCodec codec;
    CHECK(text_of(acemq::encode(codec, Payment{"p", 1}).body) == "record");
    const acemq::CompositeCodec composite({std::make_shared<ValueOnlyCodec>()});
    CHECK(text_of(acemq::encode(composite, std::vector<int>{1}).body) == "array");
    CHECK(text_of(composite.encode(Value(2.5))) == "double");
}

TEST_CASE("JSON keys are unique per object, however large, and may repeat across objects") {
    Value::Map big;
    for (int k = 0; k < 5000; ++k) big.emplace_back(Value(std::to_string(k)), Value(k));
    const Value nested(Value::Map{{Value("a"), Value(Value::Map{{Value("a"), Value(1)}})}, {Value("b"), Value(big)}});
    CHECK(json_codec.decode(json_codec.encode(nested), "") == nested);
    big.emplace_back(Value(4321), Value(true));
    CHECK(encode_error_of([&] { (void)json_codec.encode(Value(big)); }) ==
          "acemq: two map keys both become the JSON key \"4321\"");
    CHECK(encode_error_of([&] {
              (void)json_codec.encode(Value(Value::Record{{"x", Value(1)}, {"x", Value(2)}}));
          }) == "acemq: two map keys both become the JSON key \"x\"");
}

TEST_CASE("a record travels positionally in msgpack and by name in JSON") {
    const Payment p{"p-1", 4250};
    CHECK(acemq::encode(msgpack_codec, p).body == bytes_of({0x92, 0xa3, 'p', '-', '1', 0xcd, 0x10, 0x9a}));
    CHECK(text_of(acemq::encode(json_codec, p).body) == R"({"paymentId":"p-1","amountCents":4250})");
    CHECK(text_of(acemq::encode(json_as_is, p).body) == R"({"payment_id":"p-1","amount_cents":4250})");
    CHECK(msgpack_codec.decode(acemq::encode(msgpack_codec, p).body, "") ==
          Value(Value::Array{Value("p-1"), Value(4250)}));
    // A double stays a double, even when integral or negative zero.
    CHECK(msgpack_codec.encode(Value(2.0)) == bytes_of({0xcb, 0x40, 0, 0, 0, 0, 0, 0, 0}));
    const Value zero = msgpack_codec.decode(msgpack_codec.encode(Value(-0.0)), "");
    CHECK(zero.kind() == Value::Kind::float64);
    CHECK(std::signbit(zero.as_double()));
    // Field order on the wire is the sender's business in JSON.
    CHECK(acemq::decode<Payment>(json_codec, bytes_of(R"({"amountCents":4250,"paymentId":"p-1"})"),
                                 "application/json") == p);
}

TEST_CASE("JSON mapping details") {
    SECTION("bytes are base64 and integers are exact at both ends of their range") {
        const Value v(Value::Array{Value(bytes_of("foo")), Value(std::numeric_limits<std::int64_t>::min()),
                                   Value(std::numeric_limits<std::uint64_t>::max())});
        CHECK(text_of(json_codec.encode(v)) == R"(["Zm9v",-9223372036854775808,18446744073709551615])");
    }
    SECTION("integer map keys are decimal text") {
        const std::map<std::int64_t, std::string> m{{-3, "a"}, {10, "b"}};
        const auto encoded = acemq::encode(json_codec, m);
        CHECK(text_of(encoded.body) == R"({"-3":"a","10":"b"})");
        CHECK((acemq::decode<std::map<std::int64_t, std::string>>(json_codec, encoded.body, "") == m));
    }
    SECTION("non-finite doubles are refused when encoding, naming the type") {
        for (double d : {std::numeric_limits<double>::infinity(), std::nan("")}) {
            const auto message = encode_error_of([&] { (void)acemq::encode(json_codec, Scaled{d}); });
            CHECK(message.starts_with("acemq: cannot encode a Scaled with JsonCodec: JSON has no form for "));
        }
        CHECK_NOTHROW(acemq::encode(msgpack_codec, Scaled{std::nan("")}));
    }
    SECTION("keys JSON cannot hold are refused") {
        const Value v(Value::Map{{Value(true), Value(1)}});
        CHECK(encode_error_of([&] { (void)json_codec.encode(v); }).find("a map key of kind bool") != std::string::npos);
        const Value clash(Value::Map{{Value("1"), Value(1)}, {Value(1), Value(2)}});
        CHECK(encode_error_of([&] { (void)json_codec.encode(clash); }).find("\"1\"") != std::string::npos);
    }
    SECTION("strings that are not UTF-8 are refused by every text format") {
        const Value bad(std::string("ab\xFF"));
        CHECK(encode_error_of([&] { (void)json_codec.encode(bad); }).find("not valid UTF-8") != std::string::npos);
        CHECK(encode_error_of([&] { (void)msgpack_codec.encode(bad); }).find("not valid UTF-8") != std::string::npos);
        CHECK(encode_error_of([&] { (void)text_codec.encode(bad); }).find("not valid UTF-8") != std::string::npos);
    }
    SECTION("floats read as double, integers as int64 or uint64") {
        const Value v = json_codec.decode(bytes_of(R"([1.0, 2, -3, 18446744073709551615, 1e2])"), "");
        CHECK(v.as_array()[0].kind() == Value::Kind::float64);
        CHECK(v.as_array()[1].kind() == Value::Kind::int64);
        CHECK(v.as_array()[2].as_int64() == -3);
        CHECK(v.as_array()[3].kind() == Value::Kind::uint64);
        CHECK(v.as_array()[4].as_double() == 100.0);
        CHECK(json_codec.decode(bytes_of("1e-400"), "") == Value(0.0));
        CHECK(decode_error_of([] {
                  (void)json_codec.decode(bytes_of("1e400"), "");
              }).starts_with("acemq: the body is not valid JSON: "));
    }
}

TEST_CASE("text and bytes codecs carry only their own kind") {
    const auto encoded = acemq::encode(text_codec, std::string("h\xC3\xA9llo"));
    CHECK(encoded.content_type == "text/plain; charset=utf-8");
    CHECK(acemq::decode<std::string>(text_codec, encoded.body, encoded.content_type) == "h\xC3\xA9llo");
    CHECK(encode_error_of([] {
              (void)acemq::encode(text_codec, Payment{"p", 1});
          }) ==
          "acemq: cannot encode a Payment with TextCodec: TextCodec writes only strings, not record "
          "values; use JsonCodec or MsgpackCodec for structured data");

    const Bytes raw = bytes_of({0, 0xFF, 0x80});
    const auto b = acemq::encode(bytes_codec, raw);
    CHECK(b.content_type == "application/octet-stream");
    CHECK(b.body == raw);
    CHECK(acemq::decode<Bytes>(bytes_codec, b.body, "image/png") == raw);
    CHECK(encode_error_of([] {
              (void)acemq::encode(bytes_codec, std::string("x"));
          }).find("BytesCodec writes only bytes") != std::string::npos);
}

// ---- content types and the composite -------------------------------------------------

TEST_CASE("each codec claims the content types of the wire contract") {
    struct Row {
        std::string_view content_type;
        bool msgpack, json, text, bytes;
    };
    const std::vector<Row> table = {
        {"", false, true, false, false},
        {"application/json", false, true, false, true},
        {"application/json; charset=utf-8", false, true, false, true},
        {"APPLICATION/JSON", false, true, false, true},
        {"text/json", false, true, true, true},
        {"application/vnd.acemq.order+json", false, true, false, true},
        {"application/problem+JSON", false, true, false, true},
        {"application/msgpack", true, false, false, true},
        {"application/x-msgpack", true, false, false, true},
        {"application/vnd.acemq.order+msgpack", true, false, false, true},
        {"Application/MsgPack", true, false, false, true},
        {"text/plain", false, false, true, true},
        {"text/plain; charset=utf-8", false, false, true, true},
        {"TEXT/csv", false, false, true, true},
        {"application/octet-stream", false, false, false, true},
        {"application/xml", false, false, false, true},
        {"image/png", false, false, false, true},
    };
    for (const auto& row : table) {
        INFO("content type \"" << row.content_type << "\"");
        CHECK(msgpack_codec.can_decode(row.content_type) == row.msgpack);
        CHECK(json_codec.can_decode(row.content_type) == row.json);
        CHECK(text_codec.can_decode(row.content_type) == row.text);
        CHECK(bytes_codec.can_decode(row.content_type) == row.bytes);
    }
}

TEST_CASE("the composite writes with the first codec and reads with the first claimant") {
    std::vector<std::shared_ptr<const acemq::Codec>> probes;
    for (const auto& codec : family()) probes.push_back(std::make_shared<Probe>(codec));
    const acemq::CompositeCodec composite(probes);
    CHECK(composite.content_type() == "application/msgpack");
    CHECK(composite.encode(Value(Value::Array{})) == bytes_of({0x90}));

    const std::vector<std::pair<std::string_view, std::string_view>> table = {
        {"", "JsonCodec"},
        {"application/json", "JsonCodec"},
        {"Application/JSON; charset=utf-8", "JsonCodec"},
        {"text/json", "JsonCodec"},  // JSON is listed before text, so it wins
        {"application/cloudevents+json", "JsonCodec"},
        {"application/msgpack", "MsgpackCodec"},
        {"application/x-msgpack", "MsgpackCodec"},
        {"application/vnd.acemq+msgpack", "MsgpackCodec"},
        {"text/plain; charset=utf-8", "TextCodec"},
        {"text/csv", "TextCodec"},
        {"application/octet-stream", "BytesCodec"},
        {"image/png", "BytesCodec"},
    };
    for (const auto& [content_type, expected] : table) {
        INFO("content type \"" << content_type << "\"");
        CHECK(composite.decode(bytes_of("x"), content_type) == Value(std::string(expected)));
    }
}

TEST_CASE("the composite says what it tried when nothing can read a message") {
    const auto composite = acemq::default_codec();

    SECTION("the first claimant fails: its reason is final") {
        const auto message = decode_error_of([&] { (void)composite->decode(bytes_of("{oops"), "application/json"); });
        CHECK(
            message.starts_with("acemq: no codec could read this message. Tried JsonCodec: the body is not valid "
                                "JSON: "));
        CHECK(message.find("BytesCodec") == std::string::npos);
    }
    SECTION("an untyped body is JSON's alone") {
        const auto body = acemq::encode(msgpack_codec, Payment{"p-1", 1}).body;
        const auto message = decode_error_of([&] { (void)composite->decode(body, ""); });
        CHECK(message.starts_with("acemq: no codec could read this message. Tried JsonCodec: "));
    }
    SECTION("no claimant at all") {
        const acemq::CompositeCodec no_json({std::make_shared<acemq::MsgpackCodec>(),
                                             std::make_shared<acemq::TextCodec>(),
                                             std::make_shared<acemq::BytesCodec>()});
        CHECK(decode_error_of([&] { (void)no_json.decode(bytes_of("{}"), ""); }) ==
              "acemq: no codec could read this message. Tried MsgpackCodec: does not read an "
              "untyped message; TextCodec: does not read an untyped message; BytesCodec: does "
              "not read an untyped message");
    }
    SECTION("the typed helper names the type and the content type") {
        const auto message = decode_error_of([&] {
            (void)acemq::decode<Payment>(*composite, bytes_of({0x92, 0xa3, 'p', '-', '1', 0xa1, 'x'}),
                                         "application/msgpack");
        });
        CHECK(message ==
              "acemq: cannot decode a Payment from application/msgpack: "
              "Payment.amount_cents: expected an integer (int64_t), found a string");
    }
    SECTION("a bad list is refused up front") {
        CHECK_THROWS_AS(acemq::CompositeCodec({}), acemq::InvalidArgument);
        CHECK_THROWS_AS(acemq::CompositeCodec({nullptr}), acemq::InvalidArgument);
    }
}

// ---- hostile input -------------------------------------------------------------------

TEST_CASE("wrong kinds in real bodies name the field, in both formats") {
    const auto json_message = decode_error_of([] {
        (void)acemq::decode<Cart>(
            json_codec, bytes_of(R"({"id":"c","items":[{"sku":"a","qty":1},{"sku":"b","qty":2},{"sku":7,"qty":3}]})"),
            "application/json");
    });
    CHECK(json_message ==
          "acemq: cannot decode a Cart from application/json: Cart.items[2].sku: "
          "expected a string (std::string), found an int64");
    const Value positional(Value::Array{
        Value("c"),
        Value(Value::Array{Value(Value::Array{Value("a"), Value(1)}), Value(Value::Array{Value("b"), Value("two")})})});
    const auto msgpack_message = decode_error_of(
        [&] { (void)acemq::decode<Cart>(msgpack_codec, msgpack_codec.encode(positional), "application/msgpack"); });
    CHECK(msgpack_message.ends_with("Cart.items[1].qty: expected an integer (int32_t), found a string"));

    CHECK(decode_error_of([] { (void)acemq::decode<Reading>(json_codec, bytes_of(R"({"level":300})"), ""); }) ==
          "acemq: cannot decode a Reading from an untyped message: Reading.level: 300 does not fit "
          "in uint8_t (0..255)");
    CHECK(decode_error_of([] {
              (void)acemq::decode<Reading>(msgpack_codec, bytes_of({0x91, 0xcd, 0x01, 0x2c}), "application/msgpack");
          }).ends_with("Reading.level: 300 does not fit in uint8_t (0..255)"));
}

TEST_CASE("invalid UTF-8 is refused by text, JSON and msgpack readers") {
    for (std::string_view bad : {"\xFF", "ok\xC3\x28", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82"}) {
        INFO("bytes " << Catch::Detail::stringify(std::string(bad)));
        CHECK(decode_error_of([&] {
                  (void)text_codec.decode(bytes_of(bad), "text/plain");
              }).find("the text body is not valid UTF-8") != std::string::npos);
        const std::string json = "\"" + std::string(bad) + "\"";
        CHECK(decode_error_of([&] {
                  (void)json_codec.decode(bytes_of(json), "");
              }).find("the JSON body is not valid UTF-8") != std::string::npos);
        Bytes msgpack = bytes_of({0xa0 | static_cast<int>(bad.size())});
        const auto tail = bytes_of(bad);
        msgpack.insert(msgpack.end(), tail.begin(), tail.end());
        CHECK(decode_error_of([&] {
                  (void)msgpack_codec.decode(msgpack, "");
              }).find("a msgpack str is not valid UTF-8") != std::string::npos);
    }
    // A lone surrogate escape is valid UTF-8 text but not a valid JSON string.
    CHECK(decode_error_of([] {
              (void)json_codec.decode(bytes_of(R"("\ud800")"), "");
          }).starts_with("acemq: the body is not valid JSON: "));
}

TEST_CASE("declared lengths larger than the body fail fast without allocating") {
    const std::vector<Bytes> lies = {
        bytes_of({0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5}),  // array32 of 4 billion
        bytes_of({0xdf, 0xff, 0xff, 0xff, 0xff, 1, 2}),           // map32 of 4 billion
        bytes_of({0xdc, 0xff, 0xff, 0xc0}),                       // array16 of 65535
        bytes_of({0x9f, 0xc0}),                                   // fixarray of 15
        bytes_of({0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}),            // str32 of 4 GB
        bytes_of({0xc6, 0xff, 0xff, 0xff, 0xff}),                 // bin32 of 4 GB
        bytes_of({0xc9, 0xff, 0xff, 0xff, 0xff, 1}),              // ext32 of 4 GB
    };
    for (const auto& body : lies) {
        INFO("body " << text_of(body).size() << " bytes starting " << std::to_integer<int>(body[0]));
        const auto message = decode_error_of([&] { (void)msgpack_codec.decode(body, ""); });
        const bool named = message.find("longer than the whole body") != std::string::npos ||
                           message.find("truncated") != std::string::npos;
        CHECK(named);
    }
    CHECK(decode_error_of([] {
              (void)msgpack_codec.decode(bytes_of({0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5}), "");
          }) ==
          "acemq: the msgpack body declares an array, map, string or bin longer than the whole "
          "body (10 bytes): it is truncated or not msgpack");
}

TEST_CASE("nesting is limited to 64 levels, the same for writing and reading") {
    const auto nested = [](std::size_t depth) {
        Value v;
        for (std::size_t i = 0; i < depth; ++i) v = Value(Value::Array{v});
        return v;
    };
    for (const acemq::Codec* codec :
         {static_cast<const acemq::Codec*>(&msgpack_codec), static_cast<const acemq::Codec*>(&json_codec)}) {
        INFO(codec->name());
        CHECK(codec->decode(codec->encode(nested(64)), "") == nested(64));
        CHECK(encode_error_of([&] { (void)codec->encode(nested(65)); }).find("deeper than 64 levels") !=
              std::string::npos);
    }
    Bytes deep_msgpack(65, std::byte{0x91});
    deep_msgpack.push_back(std::byte{0xc0});
    CHECK(decode_error_of([&] { (void)msgpack_codec.decode(deep_msgpack, ""); }) ==
          "acemq: the msgpack body nests arrays and maps deeper than 64 levels");
    Bytes very_deep(100000, std::byte{0x91});  // would overflow a naive recursive reader
    CHECK(decode_error_of([&] { (void)msgpack_codec.decode(very_deep, ""); }).find("deeper than 64") !=
          std::string::npos);
    const std::string deep_json = std::string(100000, '[') + std::string(100000, ']');
    CHECK(decode_error_of([&] { (void)json_codec.decode(bytes_of(deep_json), ""); }) ==
          "acemq: the JSON body nests arrays and objects deeper than 64 levels");
}

TEST_CASE("trailing bytes and empty bodies are refused") {
    CHECK(decode_error_of([] {
              (void)msgpack_codec.decode(bytes_of({0xc0, 0xc0, 0x01}), "");
          }) == "acemq: 2 bytes left over after the msgpack value; a body holds one value");
    CHECK(decode_error_of([] { (void)json_codec.decode(bytes_of("{} x"), ""); }) ==
          "acemq: 1 bytes left over after the JSON value; a body holds one value");
    CHECK(decode_error_of([] { (void)json_codec.decode(bytes_of("[1] [2]"), ""); }).find("bytes left over") !=
          std::string::npos);
    CHECK_NOTHROW(json_codec.decode(bytes_of(" {} \n"), ""));
    CHECK(decode_error_of([] { (void)msgpack_codec.decode({}, ""); }) == "acemq: the msgpack body is empty");
    CHECK(decode_error_of([] { (void)json_codec.decode({}, ""); }) == "acemq: the JSON body is empty");
    CHECK(decode_error_of([] {
              (void)msgpack_codec.decode(bytes_of({0xc1}), "");
          }).starts_with("acemq: the body is not msgpack"));
    CHECK(decode_error_of([] {
              (void)msgpack_codec.decode(bytes_of({0xd4, 0x01, 0x00}), "");
          }).find("ext value (type 1)") != std::string::npos);
}

TEST_CASE("every strict prefix of a valid body is refused") {
    Generator gen(99);
    for (int i = 0; i < 20; ++i) {
        const Order order = gen.order();
        for (const acemq::Codec* codec :
             {static_cast<const acemq::Codec*>(&msgpack_codec), static_cast<const acemq::Codec*>(&json_codec)}) {
            const auto body = acemq::encode(*codec, order).body;
            for (std::size_t n = 0; n < body.size(); ++n) {
                INFO(codec->name() << " case " << i << ", prefix of " << n << " of " << body.size() << " bytes");
                const std::span<const std::byte> prefix(body.data(), n);
                const auto message = decode_error_of([&] { (void)codec->decode(prefix, codec->content_type()); });
                const bool explained = message.find("truncated") != std::string::npos ||
                                       message.find("empty") != std::string::npos ||
                                       message.find("longer than the whole body") != std::string::npos ||
                                       message.find("not valid JSON") != std::string::npos ||
                                       message.find("not valid UTF-8") != std::string::npos;
                REQUIRE(explained);
                CHECK_THROWS_AS(acemq::decode<Order>(*codec, prefix, codec->content_type()), acemq::DecodeError);
            }
        }
    }
    // Text is only refused where the cut splits a character.
    const std::string text = "a\xC3\xA9\xE2\x82\xAC";  // a é €
    const auto body = bytes_of(text);
    for (std::size_t n = 0; n <= body.size(); ++n) {
        INFO("text prefix of " << n);
        const std::span<const std::byte> prefix(body.data(), n);
        if (n == 2 || n == 4 || n == 5)
            CHECK_THROWS_AS(text_codec.decode(prefix, "text/plain"), acemq::DecodeError);
        else
            CHECK(text_codec.decode(prefix, "text/plain") == Value(text.substr(0, n)));
    }
}

TEST_CASE("random and mutated bodies end in a value or a DecodeError, never anything else") {
    Generator gen(31337);
    auto& rng = gen.engine();
    const auto composite = acemq::default_codec();
    const std::vector<const acemq::Codec*> codecs = {&msgpack_codec, &json_codec, &text_codec, composite.get()};
    std::vector<Bytes> valid;
    for (int i = 0; i < 10; ++i) {
        valid.push_back(acemq::encode(msgpack_codec, gen.order()).body);
        valid.push_back(acemq::encode(json_codec, gen.order()).body);
    }
    std::size_t refused = 0;
    for (int i = 0; i < 4000; ++i) {
        Bytes body;
        if (i % 2 == 0) {  // pure garbage, biased towards JSON punctuation half the time
            body.resize(gen.below(48));
            const std::string_view json_chars = "{}[]\":,0123456789.eE-+tfnul \\u";
            for (auto& b : body)
                b = gen.coin() ? static_cast<std::byte>(rng())
                               : static_cast<std::byte>(json_chars[gen.below(json_chars.size())]);
        } else {  // a valid body with a few bytes changed, dropped or added
            body = valid[gen.below(valid.size())];
            for (std::size_t k = 1 + gen.below(4); k > 0; --k) {
                const std::size_t at = gen.below(body.size());
                switch (gen.below(3)) {
                case 0: body[at] = static_cast<std::byte>(rng()); break;
                case 1: body.erase(body.begin() + static_cast<std::ptrdiff_t>(at)); break;
                default: body.insert(body.begin() + static_cast<std::ptrdiff_t>(at), static_cast<std::byte>(rng()));
                }
                if (body.empty()) break;
            }
        }
        for (const acemq::Codec* codec : codecs) {
            const std::string_view content_type = i % 3 == 0 ? std::string_view{} : codec->content_type();
            try {
                (void)codec->decode(body, content_type);
            } catch (const acemq::DecodeError& e) {
                ++refused;
                REQUIRE(std::string_view(e.what()).starts_with("acemq: "));
            }
            try {
                (void)acemq::decode<Order>(*codec, body, content_type);
            } catch (const acemq::DecodeError& e) {
                REQUIRE(std::string_view(e.what()).starts_with("acemq: cannot decode an Order from "));
            }
        }
    }
    CHECK(refused > 4000);  // the fuzzing must actually reach the error paths
}

// ---- decode<T> straight from msgpack ---------------------------------------------------

namespace {

// `v` with one of its parts, or itself, replaced by a random value; records become
// arrays, as msgpack carries them.
Value mutated(const Value& v, Generator& gen) {
    if (gen.below(4) == 0) return gen.value(false);
    switch (v.kind()) {
    case Value::Kind::array:
    case Value::Kind::record: {
        Value::Array parts;
        if (v.kind() == Value::Kind::array)
            parts = v.as_array();
        else
            for (const auto& field : v.as_record()) parts.push_back(field.second);
        if (parts.empty()) return gen.value(false);
        Value& part = parts[gen.below(parts.size())];
        part = mutated(part, gen);
        return Value(std::move(parts));
    }
    case Value::Kind::map: {
        Value::Map entries = v.as_map();
        if (entries.empty()) return gen.value(false);
        auto& entry = entries[gen.below(entries.size())].second;
        entry = mutated(entry, gen);
        return Value(std::move(entries));
    }
    default: return gen.value(false);
    }
}

// What reading `body` as a T gives, the value or the error, by one of the two paths.
template <class T>
std::string outcome(const std::function<T()>& read) {
    try {
        return "value " + text_of(msgpack_codec.encode(acemq::to_value(read())));
    } catch (const acemq::DecodeError& e) {
        return std::string("error ") + e.what();
    }
}

template <class T>
void agrees(std::span<const std::byte> body) {
    const std::string through_tree =
        outcome<T>([&] { return acemq::from_value<T>(msgpack_codec.decode(body, ""), acemq::FieldNames::as_is); });
    const std::string straight = outcome<T>([&] {
        const auto in = msgpack_codec.reader(body, "");
        return acemq::read_value<T>(*in);
    });
    REQUIRE(straight == through_tree);
}

}  // namespace

TEST_CASE("decode<T> reads msgpack straight into the struct as reading its Value does, errors and all") {
    Generator gen(4242);
    std::size_t errors = 0;
    for (int i = 0; i < 1500; ++i) {
        INFO("case " << i);
        const Bytes body = msgpack_codec.encode(mutated(acemq::to_value(gen.order()), gen));
        agrees<Order>(body);
        agrees<Cart>(body);
        agrees<Maybe>(body);
        agrees<std::vector<std::optional<std::int64_t>>>(body);
        agrees<std::array<std::optional<Bytes>, 2>>(body);
        agrees<std::map<std::int32_t, std::vector<std::string>>>(body);
        try {
            (void)acemq::decode<Order>(msgpack_codec, body, "application/msgpack");
        } catch (const acemq::DecodeError&) {
            ++errors;
        }
        Bytes cut = body;
        cut.resize(gen.below(body.size()));
        agrees<Order>(cut);
    }
    CHECK(errors > 1000);  // the mutations must reach the field errors
}

TEST_CASE("a struct sent as a msgpack map is read by key: any order, unknown keys, missing optional fields") {
    const auto packed = [](auto pack) {
        msgpack::sbuffer buffer;
        msgpack::packer<msgpack::sbuffer> out(buffer);
        pack(out);
        return Bytes(reinterpret_cast<const std::byte*>(buffer.data()),
                     reinterpret_cast<const std::byte*>(buffer.data()) + buffer.size());
    };
    const Bytes reordered = packed([](auto& out) {
        out.pack_map(3);
        out.pack(std::string("count")), out.pack(3);
        out.pack(std::string("extra")), out.pack(std::vector<int>{1, 2});
        out.pack(std::string("id")), out.pack(std::string("m-1"));
    });
    CHECK(acemq::decode<Maybe>(msgpack_codec, reordered, "application/msgpack").count == 3);
    CHECK(acemq::decode<Maybe>(msgpack_codec, reordered, "application/msgpack").id == "m-1");
    const Bytes no_count = packed([](auto& out) {
        out.pack_map(1);
        out.pack(std::string("id")), out.pack(std::string("m-2"));
    });
    CHECK(acemq::decode<Maybe>(msgpack_codec, no_count, "application/msgpack").count == std::nullopt);
    const Bytes no_id = packed([](auto& out) {
        out.pack_map(1);
        out.pack(std::string("count")), out.pack(1);
    });
    CHECK(decode_error_of([&] { (void)acemq::decode<Maybe>(msgpack_codec, no_id, "application/msgpack"); }) ==
          "acemq: cannot decode a Maybe from application/msgpack: the Maybe has no field \"id\" (send it, or "
          "declare the field std::optional)");
    // Inside a positional struct, an element sent as a map.
    const Bytes nested = packed([](auto& out) {
        out.pack_array(2);
        out.pack(std::string("c"));
        out.pack_array(1);
        out.pack_map(2);
        out.pack(std::string("qty")), out.pack(std::string("two"));
        out.pack(std::string("sku")), out.pack(std::string("a"));
    });
    CHECK(decode_error_of([&] { (void)acemq::decode<Cart>(*acemq::default_codec(), nested, "application/msgpack"); }) ==
          "acemq: cannot decode a Cart from application/msgpack: Cart.items[0].qty: expected an integer (int32_t), "
          "found a string");
}

TEST_CASE("decode<T> from msgpack takes every integer and float form other packers write") {
    // int8 and int64 forms for small and positive numbers (msgpack-c packs the shortest).
    CHECK(acemq::decode<Payment>(msgpack_codec, bytes_of({0x92, 0xa1, 'p', 0xd0, 0x05}), "application/msgpack") ==
          Payment{"p", 5});
    CHECK(acemq::decode<Payment>(msgpack_codec, bytes_of({0x92, 0xa1, 'p', 0xd3, 0, 0, 0, 0, 0, 0, 0x01, 0x00}),
                                 "application/msgpack") == Payment{"p", 256});
    CHECK(acemq::decode<Payment>(msgpack_codec, bytes_of({0x92, 0xa1, 'p', 0xff}), "application/msgpack") ==
          Payment{"p", -1});
    CHECK(decode_error_of([] {
              (void)acemq::decode<Payment>(
                  msgpack_codec, bytes_of({0x92, 0xa1, 'p', 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
                  "application/msgpack");
          })
              .ends_with("Payment.amount_cents: 18446744073709551615 does not fit in int64_t "
                         "(-9223372036854775808..9223372036854775807)"));
    CHECK(
        acemq::decode<Scaled>(msgpack_codec, bytes_of({0x91, 0xca, 0x3f, 0xc0, 0, 0}), "application/msgpack").factor ==
        1.5);
    CHECK(acemq::decode<Scaled>(msgpack_codec, bytes_of({0x91, 0x07}), "application/msgpack").factor == 7.0);
}

TEST_CASE("a body msgpack refuses fails decode<T> as it fails decode(), through the composite too") {
    const auto composite = acemq::default_codec();
    const Bytes truncated = bytes_of({0x92, 0xa3, 'p', '-'});
    CHECK(decode_error_of([&] { (void)acemq::decode<Payment>(*composite, truncated, "application/msgpack"); }) ==
          "acemq: cannot decode a Payment from application/msgpack: no codec could read this message. Tried "
          "JsonCodec: does not read application/msgpack; MsgpackCodec: the msgpack body is truncated: its 4 bytes "
          "end in the middle of a value");
    // The whole body is checked before any field is read: the trailing byte is what is wrong.
    CHECK(decode_error_of([] {
              (void)acemq::decode<Payment>(msgpack_codec, bytes_of({0x92, 0x01, 0x02, 0xc0}), "application/msgpack");
          }) ==
          "acemq: cannot decode a Payment from application/msgpack: 1 bytes left over after the msgpack value; "
          "a body holds one value");
}

TEST_CASE("a msgpack ValueReader takes each value by its kind and refuses another") {
    const Bytes body = bytes_of({0x92, 0xa1, 'x', 0xc4, 0x01, 0x07});
    const auto in = msgpack_codec.reader(body, "");
    REQUIRE(in != nullptr);
    CHECK(in->next() == Value::Kind::array);
    CHECK(in->array() == 2);
    CHECK(in->next() == Value::Kind::string);
    CHECK_THROWS_AS(in->int64(), acemq::UsageError);
    CHECK(in->string() == "x");
    CHECK(in->value() == Value(Bytes{std::byte{7}}));
}

TEST_CASE("a JSON ValueReader walks the checked body: counts up front, strings escaped or not, whole values") {
    const Bytes body = bytes_of(R"({"a\n":[1,18446744073709551615,-2.5,true,null],"b":{"c":"\u00e9"},"d":[]})");
    const auto in = json_codec.reader(body, "");
    REQUIRE(in != nullptr);
    CHECK(in->field_names() == acemq::FieldNames::camel_case);
    CHECK(in->map() == 3);
    CHECK(in->string() == "a\n");
    CHECK(in->array() == 5);
    CHECK(in->int64() == 1);
    CHECK(in->next() == Value::Kind::uint64);
    CHECK_THROWS_AS(in->int64(), acemq::UsageError);
    CHECK(in->uint64() == 18446744073709551615u);
    CHECK(in->float64() == -2.5);
    CHECK(in->boolean());
    in->null();
    CHECK(in->string() == "b");
    CHECK(in->value() == Value(Value::Map{{Value("c"), Value("\u00e9")}}));
    CHECK(in->string() == "d");
    CHECK(in->value() == Value(Value::Array{}));
    // The body is checked whole before a reader is handed out, as decode() checks it.
    CHECK(decode_error_of([] { (void)json_codec.reader(bytes_of(R"({"a":1} x)"), ""); }) ==
          decode_error_of([] { (void)json_codec.decode(bytes_of(R"({"a":1} x)"), ""); }));
}

namespace {

// JsonCodec read only through decode(), so decode<T> over it takes the Value tree's path.
class TreeOnlyJson final : public acemq::Codec {
public:
    std::string_view name() const noexcept override { return json_codec.name(); }
    std::string_view content_type() const noexcept override { return json_codec.content_type(); }
    bool can_decode(std::string_view type) const noexcept override { return json_codec.can_decode(type); }
    std::vector<std::byte> encode(const Value& value) const override { return json_codec.encode(value); }
    Value decode(std::span<const std::byte> body, std::string_view type) const override {
        return json_codec.decode(body, type);
    }
    acemq::FieldNames field_names(std::string_view type) const noexcept override {
        return json_codec.field_names(type);
    }
};
const TreeOnlyJson json_tree_only;

std::string snake_case(std::string_view camel) {
    std::string out;
    for (const char c : camel) {
        if (c >= 'A' && c <= 'Z') {
            out += '_';
            out += static_cast<char>(c - 'A' + 'a');
        } else {
            out += c;
        }
    }
    return out;
}

// A body JsonCodec wrote for an Order, its members then changed, dropped, renamed to their
// C++ names or shuffled, and perhaps a duplicate of a key (or an unknown one) put first, as
// other writers' bodies come.
std::string shaken_order(Generator& gen) {
    Value::Map members = json_codec.decode(json_codec.encode(acemq::to_value(gen.order())), "").as_map();
    for (std::size_t edits = gen.below(4); edits > 0 && !members.empty(); --edits) {
        auto& member = members[gen.below(members.size())];
        switch (gen.below(4)) {
        case 0: member.second = mutated(member.second, gen); break;
        case 1:
            member = members.back();
            members.pop_back();
            break;
        case 2: member.first = Value(snake_case(member.first.as_string())); break;
        default: std::shuffle(members.begin(), members.end(), gen.engine());
        }
    }
    std::string body = text_of(json_codec.encode(Value(members)));
    if (gen.coin() && !members.empty()) {
        const std::string key = gen.coin() ? members[gen.below(members.size())].first.as_string() : "zz";
        body.insert(1, acemq::json_quoted(key) + ":" + text_of(json_codec.encode(gen.value(true))) +
                           (members.empty() ? "" : ","));
    }
    return body;
}

template <class T>
void json_agrees(std::string_view text) {
    const Bytes body = bytes_of(text);
    const std::string through_tree =
        outcome<T>([&] { return acemq::decode<T>(json_tree_only, body, "application/json"); });
    // What decode<T> gives is the tree's, errors and all.
    REQUIRE(outcome<T>([&] { return acemq::decode<T>(json_codec, body, "application/json"); }) == through_tree);
    // The reader alone never reads a value the tree does not (it may meet another of a
    // body's faults first, which decode<T> then re-reads for).
    const std::string straight = outcome<T>([&] {
        const auto in = json_codec.reader(body, "");
        return acemq::read_value<T>(*in);
    });
    if (straight.starts_with("value")) REQUIRE(straight == through_tree);
}

}  // namespace

TEST_CASE("decode<T> reads JSON straight into the struct as reading its Value does, errors and all") {
    Generator gen(3131);
    std::size_t errors = 0;
    for (int i = 0; i < 1500; ++i) {
        INFO("case " << i);
        std::string body;
        try {
            body = shaken_order(gen);
        } catch (const acemq::EncodeError&) {
            continue;  // a rename met the key it renames to: JSON keys are unique
        }
        INFO(body);
        json_agrees<Order>(body);
        json_agrees<Maybe>(body);
        json_agrees<std::map<std::string, Value>>(body);
        try {
            (void)acemq::decode<Order>(json_codec, bytes_of(body), "application/json");
        } catch (const acemq::DecodeError&) {
            ++errors;
        }
    }
    CHECK(errors > 500);  // the changes must reach the field errors
}

TEST_CASE("a struct read from a JSON object: first duplicate wins, its key over its C++ name, faults in field order") {
    const auto read = [](std::string_view body) {
        return acemq::decode<Payment>(json_codec, bytes_of(body), "application/json");
    };
    CHECK(read(R"({"paymentId":"a","amountCents":1,"paymentId":"b"})") == Payment{"a", 1});
    CHECK(read(R"({"payment_id":"a","amountCents":1,"payment_id":"b"})") == Payment{"a", 1});
    // The C++ name's value is not read when the key comes, however wrong it is.
    CHECK(read(R"({"amount_cents":"x","paymentId":"a","amountCents":1})") == Payment{"a", 1});
    CHECK(read(R"({"amount_cents":2,"paymentId":"a","amountCents":1})") == Payment{"a", 1});
    CHECK(read(R"({"paymentId":"a","amount_cents":2})") == Payment{"a", 2});
    const std::string first_fault =
        "acemq: cannot decode a Payment from application/json: Payment.payment_id: expected a string "
        "(std::string), found an int64";
    CHECK(decode_error_of([&] { (void)read(R"({"paymentId":1,"amountCents":"x"})"); }) == first_fault);
    CHECK(decode_error_of([&] { (void)read(R"({"amountCents":"x","paymentId":1})"); }) == first_fault);
    CHECK(decode_error_of([&] { (void)read(R"({"amountCents":"x"})"); }) ==
          "acemq: cannot decode a Payment from application/json: the Payment has no field \"paymentId\" "
          "(payment_id in C++; send it, or declare the field std::optional)");
}

TEST_CASE("msgpack headers that together declare more elements than the body has bytes are refused on the header") {
    // Each header alone declares fewer elements than the 9 bytes, the three together 11: one
    // bound for the whole body (message_pack::Bounds, shared with the zmq frames and the
    // broker's records), not one per header.
    const Bytes body = bytes_of({0x93, 0xdc, 0x00, 0x04, 0xdc, 0x00, 0x04, 0xc0, 0xc0});
    CHECK(decode_error_of([&] { (void)acemq::MsgpackCodec().decode(body, ""); }) ==
          "acemq: the msgpack body declares an array, map, string or bin longer than the whole body (9 bytes): it "
          "is truncated or not msgpack");
}

TEST_CASE("json_quoted writes a string as JsonCodec does") {
    CHECK(acemq::json_quoted("orders.new") == "\"orders.new\"");
    CHECK(acemq::json_quoted("a\"b\\c\nd\x01") == "\"a\\\"b\\\\c\\nd\\u0001\"");
    const auto body = acemq::JsonCodec().encode(Value("caf\xC3\xA9 \"x\"\t"));
    CHECK(acemq::json_quoted("caf\xC3\xA9 \"x\"\t") == text_of(body));
}

TEST_CASE("a time is written in RFC 3339, UTC, to the second, the millisecond or the microsecond") {
    using namespace std::chrono;
    using acemq::detail::rfc3339;
    using acemq::detail::SecondFraction;
    const sys_time<microseconds> when = sys_days{2026y / 11 / 30} + 12h + 4min + 5s + 789012us;
    CHECK(rfc3339(when, SecondFraction::none) == "2026-11-30T12:04:05Z");
    CHECK(rfc3339(when, SecondFraction::millis) == "2026-11-30T12:04:05.789Z");
    CHECK(rfc3339(when, SecondFraction::micros) == "2026-11-30T12:04:05.789012Z");
    // The next second on the same thread: the text kept of the last one is not reused.
    CHECK(rfc3339(when + 1s, SecondFraction::millis) == "2026-11-30T12:04:06.789Z");
    // Before 1970 the fraction still counts up from the second before.
    CHECK(rfc3339(sys_days{1969y / 12 / 31} + 23h + 59min + 59s + 250ms, SecondFraction::millis) ==
          "1969-12-31T23:59:59.250Z");
    std::string line = "at ";
    acemq::detail::append_rfc3339(line, sys_days{2000y / 1 / 1} + 1us, SecondFraction::micros);
    CHECK(line == "at 2000-01-01T00:00:00.000001Z");
}
