// XmlCodec (issue 31, docs/xml.md): the family's XML bodies read (Java's and Go's, from
// tests/fixtures/codec-interop-fixtures.json, read at test time) and written byte for byte,
// XML's text read by the C++ type, what XML cannot carry refused, hostile bodies refused, and
// the codec beside the default ones on an inproc bus. The seeded fuzz loop is
// tests/reliability/test_xml_fuzz.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <acemq/acemq.hpp>
#include <acemq/claim_check.hpp>
#include <acemq/encrypted_codec.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/testing.hpp>
#include <acemq/xml_codec.hpp>

#include "../support/codec_bodies.hpp"
#include "../support/fixtures.hpp"

using namespace std::chrono_literals;
using acemq::Value;
using Bytes = acemq::Value::Bytes;

namespace {

struct OrderPlaced {
    std::string order_id;
    std::string customer;
    std::int64_t total_cents = 0;
    std::string currency;
    std::vector<std::string> items;
};

struct Line {
    std::string sku;
    std::int32_t quantity = 0;
};

struct Everything {
    bool urgent = false;
    std::uint16_t port = 0;
    std::int8_t offset = 0;
    double ratio = 0;
    std::optional<std::int64_t> missing{};
    std::optional<std::string> note{};
    std::vector<Line> lines{};
    std::vector<std::int32_t> none{};
    std::map<std::string, std::string> labels{};
    Bytes blob{};
    std::string text{};

    bool operator==(const Everything&) const = default;
};

struct Grid {
    std::vector<std::vector<int>> rows;
};

bool operator==(const Line& a, const Line& b) { return a.sku == b.sku && a.quantity == b.quantity; }

const acemq::XmlCodec codec;

using testing_support::bytes_of;

std::string text_of(std::span<const std::byte> body) {
    return std::string(reinterpret_cast<const char*>(body.data()), body.size());
}

Value value_of(const boost::json::value& json) {
    if (json.is_string()) return Value(fixtures::text(json));
    if (json.is_array()) {
        Value::Array items;
        for (const auto& item : json.as_array()) items.push_back(value_of(item));
        return Value(std::move(items));
    }
    Value::Map map;
    for (const auto& [key, item] : json.as_object()) map.emplace_back(Value(std::string(key)), value_of(item));
    return Value(std::move(map));
}

struct Sample {
    std::string producer;
    std::string content_type;
    Bytes body;
    Value expected;
};

std::vector<Sample> xml_samples() {
    std::vector<Sample> samples;
    const boost::json::value document = fixtures::load("codec-interop-fixtures.json");
    for (const auto& sample : document.at("samples").as_array()) {
        if (sample.at("format") != "xml") continue;
        auto body = acemq::detail::base64_decode(fixtures::text(sample.at("body_base64")));
        REQUIRE(body.has_value());
        samples.push_back({fixtures::text(sample.at("producer")), fixtures::text(sample.at("content_type")),
                           std::move(*body), value_of(sample.at("expected"))});
    }
    return samples;
}

std::string decode_error(std::string_view body) {
    try {
        codec.decode(bytes_of(body), acemq::content_types::xml);
    } catch (const acemq::DecodeError& e) {
        return e.what();
    }
    return "no error";
}

template <class T>
std::string decode_error_as(std::string_view body) {
    try {
        (void)acemq::decode<T>(codec, bytes_of(body), acemq::content_types::xml);
    } catch (const acemq::DecodeError& e) {
        return e.what();
    }
    return "no error";
}

template <class T>
std::string encode_error(const T& value, const acemq::XmlCodec& with = codec) {
    try {
        (void)acemq::encode(with, value);
    } catch (const acemq::EncodeError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("the family's XML samples (Java and Go) decode to their expected values, totalCents a string") {
    const std::vector<Sample> samples = xml_samples();
    REQUIRE(samples.size() == 2);
    for (const Sample& sample : samples) {
        INFO(sample.producer);
        REQUIRE(codec.can_decode(sample.content_type));
        const Value value = codec.decode(sample.body, sample.content_type);
        CHECK(value == sample.expected);
        CHECK(value.find("totalCents")->as_string() == "4250");

        const auto order = acemq::decode<OrderPlaced>(codec, sample.body, sample.content_type);
        CHECK(order.order_id == "o-1");
        CHECK(order.customer == "Ana Söderström");
        CHECK(order.total_cents == 4250);
        CHECK(order.currency == "EUR");
        CHECK(order.items == std::vector<std::string>{"widget", "gasket"});
    }
}

TEST_CASE("a struct encodes to the family's XML body byte for byte, as application/xml, its root named after it") {
    const OrderPlaced order{"o-1", "Ana Söderström", 4250, "EUR", {"widget", "gasket"}};
    const acemq::Encoded encoded = acemq::encode(codec, order);
    CHECK(encoded.content_type == "application/xml");
    for (const Sample& sample : xml_samples()) CHECK(text_of(encoded.body) == text_of(sample.body));

    // A value that is no struct is a `message`, as Python names a dict's; the option names any.
    const Value dynamic(Value::Map{{Value("orderId"), Value("o-1")}});
    CHECK(text_of(codec.encode(dynamic)) == "<message><orderId>o-1</orderId></message>");
    const acemq::XmlCodec named({.root = "order"});
    CHECK(text_of(acemq::encode(named, order).body).starts_with("<order><orderId>o-1</orderId>"));
    CHECK(text_of(acemq::encode(named, dynamic).body) == "<order><orderId>o-1</orderId></order>");
    const acemq::XmlCodec as_is({.names = acemq::FieldNames::as_is});
    CHECK(text_of(acemq::encode(as_is, order).body).starts_with("<OrderPlaced><order_id>o-1</order_id>"));
    CHECK_THROWS_AS(acemq::XmlCodec({.root = "1st"}), acemq::InvalidArgument);
}

TEST_CASE("XmlCodec reads application/xml, text/xml and any +xml type, never an untyped message") {
    for (const std::string_view type : {"application/xml", "Application/XML; charset=utf-8", "text/xml",
                                        "application/atom+xml", "application/vnd.acme.order+XML"})
        CHECK(codec.can_decode(type));
    for (const std::string_view type : {"", "application/json", "text/plain", "application/x-protobuf"})
        CHECK_FALSE(codec.can_decode(type));
}

TEST_CASE("decode<T> reads XML's text as T asks: numbers, bools, a list of one, a missing list, empty optionals") {
    const auto one = acemq::decode<OrderPlaced>(
        codec,
        bytes_of("<OrderPlaced><orderId>o-2</orderId><customer/><totalCents>-7</totalCents><currency>EUR</currency>"
                 "<items>only</items></OrderPlaced>"),
        "text/xml");
    CHECK(one.total_cents == -7);
    CHECK(one.customer.empty());
    CHECK(one.items == std::vector<std::string>{"only"});
    const auto none = acemq::decode<OrderPlaced>(
        codec,
        bytes_of("<x><orderId>o-3</orderId><customer>c</customer><totalCents>0</totalCents><currency>EUR"
                 "</currency></x>"),
        "application/xml");
    CHECK(none.items.empty());
    // The same text read as a Value stays text, one element stays one string.
    const Value value = codec.decode(bytes_of("<x><items>only</items><n>5</n></x>"), "application/xml");
    CHECK(value == Value(Value::Map{{Value("items"), Value("only")}, {Value("n"), Value("5")}}));

    const auto flags = acemq::decode<Everything>(
        codec,
        bytes_of("<e><urgent>1</urgent><port>65535</port><offset>-128</offset><ratio>INF</ratio><missing/>"
                 "<note></note><labels/><blob></blob><text>t</text></e>"),
        "application/xml");
    CHECK(flags.urgent);
    CHECK(flags.port == 65535);
    CHECK(flags.offset == -128);
    CHECK(flags.ratio == std::numeric_limits<double>::infinity());
    CHECK_FALSE(flags.missing.has_value());
    CHECK_FALSE(flags.note.has_value());
    CHECK(flags.labels.empty());
}

TEST_CASE("text that does not read as T's field is a DecodeError naming the field and the text") {
    const auto order_with_total = [](std::string_view total) {
        return "<OrderPlaced><orderId>o</orderId><customer>c</customer><totalCents>" + std::string(total) +
               "</totalCents><currency>EUR</currency></OrderPlaced>";
    };
    for (const std::string_view bad :
         {"42x", " 4250", "4250 ", "+4250", "4250.0", "", "0x10", "99999999999999999999"}) {
        INFO(bad);
        const std::string error = decode_error_as<OrderPlaced>(order_with_total(bad));
        CHECK_THAT(error, Catch::Contains("OrderPlaced.total_cents: expected decimal text of an integer that fits in "
                                          "int64_t, found the text \"" +
                                          std::string(bad) + "\""));
        CHECK_THAT(error, Catch::StartsWith("acemq: cannot decode a"));
    }
    CHECK_THAT(decode_error_as<Line>("<Line><sku>s</sku><quantity>2147483648</quantity></Line>"),
               Catch::Contains("Line.quantity: 2147483648 does not fit in int32_t"));
    CHECK_THAT(decode_error_as<Everything>("<e><urgent>yes</urgent></e>"),
               Catch::Contains("Everything.urgent: expected a bool (true, false, 1 or 0), found the text \"yes\""));
    CHECK_THAT(decode_error_as<Everything>("<e><urgent>1</urgent><port>-1</port></e>"),
               Catch::Contains("Everything.port: expected decimal text of a non-negative integer"));
    // A repeated element where T has one value.
    CHECK_THAT(decode_error_as<Line>("<Line><sku>a</sku><sku>b</sku><quantity>1</quantity></Line>"),
               Catch::Contains("Line.sku: expected a string (std::string), found an array"));
    // Only XML's reading is lenient: JSON's text is still not a number.
    const acemq::JsonCodec json;
    CHECK_THROWS_AS(acemq::decode<Line>(json, bytes_of(R"({"sku":"s","quantity":"2"})"), "application/json"),
                    acemq::DecodeError);
}

TEST_CASE("structs round-trip through XML: nested, optional, maps, bytes, floats and escaped text") {
    const Everything everything{.urgent = true,
                                .port = 5772,
                                .offset = -3,
                                .ratio = 0.1,
                                .missing = std::nullopt,
                                .note = "a <b> & \"c\" 'd' \r\n\t ]]> Söder ☃ 𝄞",
                                .lines = {{"a&b", 1}, {"", -2}},
                                .none = {},
                                .labels = {{"zone", "eu"}, {"tier", ""}},
                                .blob = bytes_of(std::string("\0\xff\x01", 3)),
                                .text = "  spaced  "};
    const acemq::Encoded encoded = acemq::encode(codec, everything);
    const std::string xml = text_of(encoded.body);
    CHECK_THAT(xml,
               Catch::StartsWith("<Everything><urgent>true</urgent><port>5772</port><offset>-3</offset>"
                                 "<ratio>0.1</ratio><missing/><note>a &lt;b&gt; &amp; \"c\" 'd' &#xD;\n\t ]]&gt;"));
    CHECK_THAT(xml, Catch::Contains("<lines><sku>a&amp;b</sku><quantity>1</quantity></lines><lines><sku></sku>"));
    CHECK_THAT(xml, Catch::Contains("<labels><tier></tier><zone>eu</zone></labels><blob>AP8B</blob>"));
    CHECK(acemq::decode<Everything>(codec, encoded.body, encoded.content_type) == everything);

    for (const double d : {-0.0, 1e300, -2.5e-308, 123456.789}) {
        const Everything numbers{.ratio = d};
        CHECK(acemq::decode<Everything>(codec, acemq::encode(codec, numbers).body, "application/xml").ratio == d);
    }
    const Everything nan{.ratio = std::numeric_limits<double>::quiet_NaN()};
    CHECK(std::isnan(acemq::decode<Everything>(codec, acemq::encode(codec, nan).body, "application/xml").ratio));
}

TEST_CASE("wrapped in encryption or a claim check, XML still reads as T asks") {
    const auto xml = std::make_shared<acemq::XmlCodec>();
    const acemq::EncryptedCodec encrypted(
        xml, std::make_shared<acemq::Keyring>(acemq::EncryptionKey("k", Bytes(32, std::byte{7}))));
    const acemq::ClaimCheckCodec claimed(xml, std::make_shared<acemq::InMemoryClaimCheckStore>(), 16);
    const OrderPlaced order{"o-1", "Ana Söderström", 4250, "EUR", {"widget"}};
    for (const acemq::Codec* wrapper :
         {static_cast<const acemq::Codec*>(&encrypted), static_cast<const acemq::Codec*>(&claimed)}) {
        INFO(wrapper->name());
        const acemq::Encoded encoded = acemq::encode(*wrapper, order);
        const auto back = acemq::decode<OrderPlaced>(*wrapper, encoded.body, encoded.content_type);
        CHECK(back.total_cents == 4250);
        CHECK(back.items == order.items);
    }
}

TEST_CASE("what XML cannot carry is an EncodeError saying what to do") {
    CHECK_THAT(encode_error(std::vector<int>{1, 2}), Catch::Contains("XML writes a struct or a map, not array values"));
    CHECK_THAT(encode_error(std::string("plain")), Catch::Contains("not string values"));
    CHECK_THAT(encode_error(Grid{{{1}}}), Catch::Contains("a list inside a list (\"rows\") has no form"));
    CHECK_THAT(encode_error(std::map<std::string, int>{{"two words", 1}}),
               Catch::Contains("the map key \"two words\" is not an XML element name"));
    CHECK_THAT(encode_error(std::map<int, int>{{1, 1}}), Catch::Contains("an element name cannot be a number"));
    CHECK_THAT(encode_error(Line{"\xff", 1}), Catch::Contains("not valid UTF-8"));
    CHECK_THAT(encode_error(Line{std::string("a\x01", 2), 1}), Catch::Contains("a character XML 1.0 cannot carry"));
    // Deeper than the reader takes: refused on the way out too.
    Value deep(Value::Map{});
    for (std::size_t i = 0; i < acemq::XmlCodec::max_depth; ++i) deep = Value(Value::Map{{Value("d"), deep}});
    CHECK_THAT(encode_error(deep), Catch::Contains("deeper than XmlCodec::max_depth (64"));
}

TEST_CASE("a document type declaration is refused, whatever it declares: entity bombs and external entities") {
    const std::string laughs =
        "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
        "<!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">"
        "<!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">"
        "<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">]>"
        "<lolz>&lol3;</lolz>";
    for (const std::string& body : {laughs, std::string("<!DOCTYPE x SYSTEM \"file:///etc/passwd\"><x>1</x>"),
                                    std::string("<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/hostname\">]><x>&e;</x>"),
                                    std::string("<!DOCTYPE x><x/>"), std::string("<x><!DOCTYPE y><y/></x>")}) {
        INFO(body);
        CHECK_THAT(decode_error(body), Catch::Contains("carries a document type declaration (<!DOCTYPE ...>)"));
    }
    // Without a DTD an entity reference is no less refused: pugixml alone would keep "&lol3;" as text.
    CHECK_THAT(decode_error("<x>&lol3;</x>"),
               Catch::Contains("refers to the entity &lol3; which XML does not predefine"));
    CHECK_THAT(decode_error("<x a=\"&e;\"/>"), Catch::Contains("refers to the entity &e;"));
    CHECK_THAT(decode_error("<x>a & b</x>"), Catch::Contains("an '&' that starts no reference"));
    CHECK_THAT(decode_error("<x>&#0;</x>"), Catch::Contains("character reference &#0; which names no character"));
    CHECK_THAT(decode_error("<x>&#xD800;</x>"), Catch::Contains("names no character"));
    CHECK(codec.decode(bytes_of("<x><a>&lt;&gt;&amp;&quot;&apos;&#65;&#x263A;</a></x>"), "application/xml") ==
          Value(Value::Map{{Value("a"), Value("<>&\"'A\xe2\x98\xba")}}));
}

TEST_CASE("a body that is not UTF-8, or says it is another encoding, or holds forbidden characters, is refused") {
    CHECK_THAT(decode_error("<x>S\xf6"
                            "derstr\xf6"
                            "m</x>"),
               Catch::Contains("is not valid UTF-8 (bad byte at offset 4); XmlCodec reads UTF-8 only"));
    CHECK_THAT(decode_error("\xff\xfe<\0x\0/\0>\0"), Catch::Contains("is not valid UTF-8"));
    CHECK_THAT(decode_error("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><x/>"),
               Catch::Contains("declares the encoding \"ISO-8859-1\""));
    CHECK_THAT(decode_error(std::string("<x>\x01</x>", 8)), Catch::Contains("a character XML 1.0 forbids (byte 1"));
    CHECK(codec.decode(bytes_of("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<x><a>1</a></x>"), "application/xml") ==
          Value(Value::Map{{Value("a"), Value("1")}}));
}

TEST_CASE("nesting is bounded, malformed XML is refused, and mixed content is refused rather than dropped") {
    const auto nested = [](std::size_t depth) {
        std::string body;
        for (std::size_t i = 0; i < depth; ++i) body += "<a>";
        for (std::size_t i = 0; i < depth; ++i) body += "</a>";
        return body;
    };
    CHECK(decode_error(nested(acemq::XmlCodec::max_depth)) == "no error");
    CHECK_THAT(decode_error(nested(acemq::XmlCodec::max_depth + 1)),
               Catch::Contains("nests elements deeper than XmlCodec::max_depth (64)"));
    CHECK_THAT(decode_error(nested(100000)), Catch::Contains("deeper than XmlCodec::max_depth"));
    // Many repeats of one element gather in linear time (a quadratic list took minutes here).
    std::string repeated = "<x>";
    for (int i = 0; i < 200000; ++i) repeated += "<i/>";
    const Value many = codec.decode(bytes_of(repeated + "</x>"), "application/xml");
    CHECK(many.find("i")->as_array().size() == 200000);
    CHECK_THAT(decode_error("<x><a>1</x>"), Catch::Contains("is not well-formed XML"));
    CHECK_THAT(decode_error(""), Catch::Contains("has no root element"));
    CHECK_THAT(decode_error("<a/><b/>"), Catch::Contains("more than one root element"));
    CHECK_THAT(decode_error("<x>1</x>tail"), Catch::Contains("text outside its root element"));
    CHECK_THAT(decode_error("<x>text<a>1</a></x>"),
               Catch::Contains("holds text beside child elements in <x> (mixed content)"));
    CHECK_THAT(decode_error("<x><price currency=\"EUR\">42</price></x>"),
               Catch::Contains("holds text beside attributes in <price> (mixed content)"));
}

TEST_CASE("attributes read as children, namespaces are dropped, comments and CDATA read as XML says") {
    const Value value = codec.decode(
        bytes_of("<p:order xmlns:p=\"urn:acme\" xmlns=\"urn:x\" id=\"7\" p:tenant=\"acme\"><!-- note -->\n"
                 "  <p:items>a</p:items>\n  <items><![CDATA[<b>&]]></items><?pi x?><empty>  </empty></p:order>"),
        "application/xml");
    CHECK(value == Value(Value::Map{{Value("id"), Value("7")},
                                    {Value("tenant"), Value("acme")},
                                    {Value("items"), Value(Value::Array{Value("a"), Value("<b>&")})},
                                    {Value("empty"), Value("  ")}}));
}

TEST_CASE("a consumer on default_codec_reading({xml}) reads XML and JSON by content type and parks a DTD") {
    acemq::Bus bus = acemq::connect("inproc://xml-" + acemq::new_uuid());
    const acemq::testing::Harness harness{bus};
    bus.declare(acemq::Topology{}.queue("orders.placed", {.dead_letter = true}));
    std::mutex lock;
    std::vector<std::pair<std::string, OrderPlaced>> seen;
    auto consumer =
        bus.consume<OrderPlaced>("orders.placed",
                                 [&](const acemq::Message<OrderPlaced>& message) {
                                     const std::lock_guard guard(lock);
                                     seen.emplace_back(message.content_type, message.payload);
                                     return acemq::accept();
                                 },
                                 {.codec = acemq::default_codec_reading({std::make_shared<acemq::XmlCodec>()})});
    const OrderPlaced order{"o-1", "Ana Söderström", 4250, "EUR", {"widget", "gasket"}};
    bus.publisher_to_queue("orders.placed", {.codec = std::make_shared<acemq::XmlCodec>()}).send(order);
    const acemq::Publisher json = bus.publisher_to_queue("orders.placed");
    json.send(order);
    json.send_raw(acemq::Encoded{xml_samples().front().body, "text/xml"});
    json.send_raw(
        acemq::Encoded{bytes_of("<!DOCTYPE x [<!ENTITY e \"e\">]><OrderPlaced>&e;</OrderPlaced>"), "application/xml"});
    REQUIRE(harness.wait_parked("orders.placed", 1, 10s));
    REQUIRE(harness.wait_consumed("orders.placed", 4, 10s));
    consumer.close();
    {
        const std::lock_guard guard(lock);
        REQUIRE(seen.size() == 3);
        CHECK(seen[0].first == "application/xml");
        CHECK(seen[1].first == "application/json");
        CHECK(seen[2].first == "text/xml");
        for (const auto& [content_type, payload] : seen) {
            CHECK(payload.total_cents == 4250);
            CHECK(payload.items == order.items);
            CHECK(payload.customer == order.customer);
        }
    }
    std::optional<acemq::Delivery> parked;
    for (int i = 0; i < 200 && !parked; ++i) {
        parked = bus.transport().pull(acemq::parked_queue("orders.placed"));
        if (!parked) std::this_thread::sleep_for(10ms);
    }
    REQUIRE(parked.has_value());
    const acemq::InboundMessage& message = parked->message();
    const acemq::Envelope envelope = acemq::read_envelope(message);
    CHECK_THAT(envelope.error, Catch::Contains("carries a document type declaration"));
    CHECK(text_of(message.body()) == "<!DOCTYPE x [<!ENTITY e \"e\">]><OrderPlaced>&e;</OrderPlaced>");
}
