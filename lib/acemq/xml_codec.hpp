// XML bodies, as the other AceMQ languages write and read them (the optional xml part:
// libacemq-xml, acemq-xml.pc, CMake component `xml`, ACEMQ_HAS_XML; -Dxml=disabled builds
// acemq without it and without pugixml). Give the publisher or consumer an XmlCodec, or read
// XML beside the default formats by content type:
//
//   bus.publisher_to_queue("orders", {.codec = std::make_shared<acemq::XmlCodec>()}).send(order);
//   .codec = acemq::default_codec_reading({std::make_shared<acemq::XmlCodec>()})
//
// Writing (application/xml, no XML declaration, UTF-8): the root element is named after the
// struct's C++ type without its namespaces (acme::OrderPlaced is <OrderPlaced>, as Jackson and
// Go's encoding/xml name it), or Options::root when that is set, and "message" for a value
// that is no struct (an acemq::Value, a std::map), as Python writes a dict. Fields are child
// elements in declaration order, keyed as JsonCodec keys them (camelCase by default,
// field_keys.hpp); a list is its element repeated, once per item, and an empty list writes
// nothing; a null is an empty element; text is escaped (&, <, >, and a carriage return as a
// character reference). So struct OrderPlaced { std::string order_id; ...; std::vector<std::string>
// items; } is <OrderPlaced><orderId>o-1</orderId>...<items>widget</items><items>gasket</items></OrderPlaced>.
// EncodeError for what XML cannot carry: a top level that is not a struct or a map (an XML
// document is one element with named children), a list inside a list, a map key or field
// key that is not an XML name, text that is not UTF-8 or holds a character XML 1.0 forbids.
//
// Reading (application/xml, text/xml, any +xml type, case-insensitively; never an untyped
// message): XML has no types, so everything reads as text, as in every other member. decode()
// gives the root element's children as a map of strings, a child repeated as a list of them,
// and an element with children as a map (the root's own name is not checked: the document is
// the value). decode<T> reads that into T by reflect.hpp's Scalars::text rules: an integer
// from strict decimal text ("4250"), a bool from true/false/1/0, one element as a list of one
// where T has a list, a missing list as an empty one; text that does not read as T's field
// is a DecodeError naming the field. Attributes read as children of the same name (as
// Python's reader and Jackson's do); namespace declarations are skipped and a prefix is
// dropped (<a:total> is total). Comments, processing instructions and an XML declaration
// (encoding UTF-8) are ignored.
//
// Refused with a DecodeError, which parks the message: a document type declaration
// (<!DOCTYPE ...>, whatever it holds, so no entity is ever declared, let alone expanded:
// the billion laughs have nowhere to start), a reference to an entity XML does not predefine,
// a body that is not UTF-8 (or declares another encoding, or holds a character XML 1.0
// forbids), elements nested deeper than max_depth, text beside child elements or attributes
// (mixed content: the family's mapping has no place for it, and dropping it would lose data),
// and anything that is not well-formed XML. What a decode allocates is in proportion to the
// body. Immutable after construction: safe to share between threads.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <acemq/codec.hpp>
#include <acemq/field_keys.hpp>
#include <acemq/value.hpp>

namespace acemq {

namespace content_types {
inline constexpr std::string_view xml = "application/xml";
}  // namespace content_types

class XmlCodec final : public Codec {
public:
    // Elements nested in one body, the root counted, both ways: what this codec writes, it reads.
    static constexpr std::size_t max_depth = 64;
    // The root element of a value that is no struct, as Python's XmlCodec names it.
    static constexpr std::string_view default_root = "message";

    struct Options {
        // The root element's name for every value, struct or not; empty: as described above.
        std::string root{};
        FieldNames names = FieldNames::camel_case;
    };

    // Throws InvalidArgument when `root` is set and is not an XML name.
    XmlCodec();
    explicit XmlCodec(Options options);

    std::string_view name() const noexcept override { return "XmlCodec"; }
    std::string_view content_type() const noexcept override { return content_types::xml; }
    bool can_decode(std::string_view content_type) const noexcept override;
    std::vector<std::byte> encode(ValueSource source) const override;
    std::vector<std::byte> encode(const Value& value) const override { return encode(ValueSource(value)); }
    Value decode(std::span<const std::byte> body, std::string_view content_type) const override;
    FieldNames field_names(std::string_view) const noexcept override { return names_; }
    Scalars scalars(std::string_view) const noexcept override { return Scalars::text; }

private:
    std::string root_;
    FieldNames names_;
};

}  // namespace acemq
