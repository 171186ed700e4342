#include <acemq/xml_codec.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include <pugixml.hpp>

#include <acemq/error.hpp>
#include <acemq/value_writer.hpp>

#include "quoted_text.hpp"

namespace acemq {

namespace {

bool ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// An XML Name without a colon (a colon would be read back as a namespace prefix and dropped):
// ASCII letters, '_' and anything past ASCII may start it; digits, '-' and '.' may follow.
bool xml_name(std::string_view name) {
    if (name.empty() || detail::invalid_utf8_at(name)) return false;
    const auto start = [](char c) { return ascii_letter(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80; };
    if (!start(name.front())) return false;
    for (const char c : name)
        if (!start(c) && !(c >= '0' && c <= '9') && c != '-' && c != '.') return false;
    return true;
}

// The offset of the first character XML 1.0 forbids anywhere (C0 controls other than tab, line
// feed and carriage return; U+FFFE and U+FFFF) in UTF-8 `text`, or nullopt.
std::optional<std::size_t> forbidden_character_at(std::string_view text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return i;
        if (c == 0xEF && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xBF &&
            (static_cast<unsigned char>(text[i + 2]) & 0xFE) == 0xBE)
            return i;
    }
    return std::nullopt;
}

// The struct's name without its namespaces and enclosing scopes: what follows the last "::"
// outside template arguments and parentheses ("(anonymous namespace)::Order" is "Order").
std::string_view unqualified(std::string_view name) {
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        if (c == '<' || c == '(') ++depth;
        if (c == '>' || c == ')') --depth;
        if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':') start = i + 2;
    }
    return name.substr(start);
}

// Streams the events of one value as an XML document (header comment of xml_codec.hpp).
class XmlWriter final : public ValueWriter {
public:
    XmlWriter(std::string_view root, FieldNames names) : root_(root), names_(names) {}

    void null() override {
        const std::string name = element_name(Value::Kind::null);
        put("<"), put(name), put("/>");
        after_value();
    }
    void boolean(bool b) override { leaf(Value::Kind::boolean, b ? "true" : "false"); }
    void int64(std::int64_t i) override { number(Value::Kind::int64, i); }
    void uint64(std::uint64_t u) override { number(Value::Kind::uint64, u); }
    void float64(double d) override {
        if (std::isnan(d)) return leaf(Value::Kind::float64, "NaN");
        if (std::isinf(d)) return leaf(Value::Kind::float64, d > 0 ? "INF" : "-INF");
        number(Value::Kind::float64, d);
    }
    void string(std::string_view text) override {
        if (at_key()) {
            key(text);
            return;
        }
        if (const auto bad = detail::invalid_utf8_at(text))
            throw EncodeError("acemq: a string is not valid UTF-8 (bad byte at offset " + std::to_string(*bad) +
                              "); XML carries text only, so send binary data as bytes (base64 in XML)");
        if (const auto bad = forbidden_character_at(text))
            throw EncodeError("acemq: a string holds a character XML 1.0 cannot carry (byte " +
                              std::to_string(static_cast<unsigned char>(text[*bad])) + " at offset " +
                              std::to_string(*bad) + "); send it as bytes (base64 in XML) or use JsonCodec");
        const std::string name = element_name(Value::Kind::string);
        open_tag(name);
        for (const char c : text) {
            switch (c) {
            case '&': put("&amp;"); break;
            case '<': put("&lt;"); break;
            case '>': put("&gt;"); break;
            case '\r': put("&#xD;"); break;  // a raw one would be read back as a line feed
            default: body.push_back(static_cast<std::byte>(c));
            }
        }
        close_tag(name);
        after_value();
    }
    void bytes(std::span<const std::byte> data) override { leaf(Value::Kind::bytes, detail::base64_encode(data)); }
    void begin_array(std::size_t) override {
        if (open_.empty()) refuse_top_level(Value::Kind::array);
        if (open_.back().kind == Value::Kind::array)
            throw EncodeError("acemq: XML writes a list as its element repeated, so a list inside a list (\"" +
                              open_.back().name +
                              "\") has no form; wrap the inner lists in a struct, or use JsonCodec");
        std::string name = element_name(Value::Kind::array);
        open_.push_back({Value::Kind::array, std::move(name), false});
    }
    void end_array() override {
        open_.pop_back();
        after_value();
    }
    void begin_map(std::size_t) override { open_element(Value::Kind::map); }
    void end_map() override { close_element(); }
    void begin_record(std::size_t) override { open_element(Value::Kind::record); }
    void field(std::string_view name) override { next_ = checked_name(name, "the field key"); }
    void end_record() override { close_element(); }
    FieldNames field_names() const noexcept override { return names_; }

    std::vector<std::byte> body;

private:
    struct Open {
        Value::Kind kind;  // record or map: an element; array: its elements' name, repeated
        std::string name;
        bool at_key;  // a map's next event is a key
    };

    void put(std::string_view text) {
        for (const char c : text) body.push_back(static_cast<std::byte>(c));
    }
    void open_tag(std::string_view name) { put("<"), put(name), put(">"); }
    void close_tag(std::string_view name) { put("</"), put(name), put(">"); }

    bool at_key() const { return !open_.empty() && open_.back().at_key; }

    static std::string checked_name(std::string_view name, std::string_view what) {
        if (!xml_name(name))
            throw EncodeError("acemq: " + std::string(what) + " " + detail::in_quotes(name) +
                              " is not an XML element name (a letter or '_' first, then letters, digits, '-', '.' "
                              "or '_'); rename it (field_keys.hpp), or use JsonCodec");
        return std::string(name);
    }

    [[noreturn]] static void refuse_top_level(Value::Kind kind) {
        throw EncodeError("acemq: XML writes a struct or a map, not " + std::string(kind_name(kind)) +
                          " values: a document is one root element with named children; wrap the value in a "
                          "struct, or use JsonCodec");
    }

    // The name of the element the next value is written as; checks the value may go there.
    std::string element_name(Value::Kind kind) {
        if (open_.empty()) {
            if (kind != Value::Kind::record && kind != Value::Kind::map) refuse_top_level(kind);
            return std::string(root_);
        }
        if (at_key())
            throw EncodeError("acemq: XML names elements after map keys, which must be strings; a key of kind " +
                              std::string(kind_name(kind)) + " cannot be written (use JsonCodec for such maps)");
        std::size_t elements = 0;
        for (const Open& open : open_) elements += open.kind == Value::Kind::array ? 0 : 1;
        if (elements >= XmlCodec::max_depth)
            throw EncodeError("acemq: the value nests deeper than XmlCodec::max_depth (" +
                              std::to_string(XmlCodec::max_depth) + " elements), which XmlCodec would refuse to read");
        return open_.back().kind == Value::Kind::array ? open_.back().name : next_;
    }

    void leaf(Value::Kind kind, std::string_view text) {
        const std::string name = element_name(kind);
        open_tag(name), put(text), close_tag(name);
        after_value();
    }

    template <class Number>
    void number(Value::Kind kind, Number n) {
        if (at_key() && kind != Value::Kind::float64)
            throw EncodeError("acemq: XML names elements after map keys, and an element name cannot be a number (" +
                              std::to_string(n) + "); use string keys, or JsonCodec");
        char text[32];
        const auto end = std::to_chars(text, text + sizeof text, n).ptr;
        leaf(kind, std::string_view(text, static_cast<std::size_t>(end - text)));
    }

    void key(std::string_view text) {
        next_ = checked_name(text, "the map key");
        open_.back().at_key = false;
    }

    void open_element(Value::Kind kind) {
        std::string name = element_name(kind);
        open_tag(name);
        open_.push_back({kind, std::move(name), kind == Value::Kind::map});
    }

    void close_element() {
        close_tag(open_.back().name);
        open_.pop_back();
        after_value();
    }

    // A map's next event is a key again once its value is written.
    void after_value() {
        if (!open_.empty() && open_.back().kind == Value::Kind::map) open_.back().at_key = true;
    }

    std::string_view root_;
    FieldNames names_;
    std::vector<Open> open_;
    std::string next_;
};

[[noreturn]] void refuse(std::string problem) { throw DecodeError("acemq: the XML body " + std::move(problem)); }

[[noreturn]] void refuse_dtd() {
    refuse(
        "carries a document type declaration (<!DOCTYPE ...>): a message body has no use for one, and DTDs are how "
        "entity attacks (the billion laughs, external entities) start, so XmlCodec refuses every one; send the "
        "document without it");
}

// One UTF-8 encoding of a code point XML allows (checked by the caller).
void append_utf8(std::string& out, std::uint32_t c) {
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
}

bool xml_char(std::uint32_t c) {
    return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) ||
           (c >= 0x10000 && c <= 0x10FFFF);
}

// Text and attribute values with their references replaced. pugixml is asked to leave them
// (no parse_escapes) because it keeps a reference it does not know as it is, where XML
// requires an error: "&lol;" must not read as those five characters.
std::string unescaped(std::string_view raw) {
    std::string out;
    out.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '&') {
            out += raw[i];
            continue;
        }
        const std::size_t end = raw.find(';', i);
        if (end == std::string_view::npos || end - i > 12)
            refuse("holds an '&' that starts no reference (write a literal one as &amp;)");
        const std::string_view name = raw.substr(i + 1, end - i - 1);
        i = end;
        if (name == "lt") {
            out += '<';
        } else if (name == "gt") {
            out += '>';
        } else if (name == "amp") {
            out += '&';
        } else if (name == "quot") {
            out += '"';
        } else if (name == "apos") {
            out += '\'';
        } else if (name.size() > 1 && name[0] == '#') {
            const bool hex = name[1] == 'x';
            const std::string_view digits = name.substr(hex ? 2 : 1);
            std::uint32_t c = 0;
            const auto [stop, err] = std::from_chars(digits.data(), digits.data() + digits.size(), c, hex ? 16 : 10);
            if (digits.empty() || err != std::errc() || stop != digits.data() + digits.size() || !xml_char(c))
                refuse("holds the character reference &" + detail::shown_text(name, 16) +
                       "; which names no character XML allows");
            append_utf8(out, c);
        } else {
            refuse("refers to the entity &" + detail::shown_text(name, 16) +
                   "; which XML does not predefine; XmlCodec reads only &lt; &gt; &amp; &quot; &apos; and character "
                   "references, and refuses the DTDs that declare others");
        }
    }
    return out;
}

// "a:total" is "total": the family reads the field, not the namespace it was declared in.
std::string_view local_name(std::string_view name) {
    const std::size_t colon = name.rfind(':');
    return colon == std::string_view::npos ? name : name.substr(colon + 1);
}

bool namespace_declaration(std::string_view attribute) {
    return attribute == "xmlns" || attribute.starts_with("xmlns:");
}

bool blank(std::string_view text) { return text.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// An element's children (and attributes) by name, in the order first seen, a repeated name
// gathered into a list; in time linear in their number, however many repeat.
class Children {
public:
    void add(std::string_view name, Value value) {
        const auto [at, added] = index_.try_emplace(name, entries_.size());
        if (added) entries_.emplace_back(name, Value::Array{});
        entries_[at->second].second.push_back(std::move(value));
    }
    bool empty() const { return entries_.empty(); }
    Value take() {
        Value::Map map;
        map.reserve(entries_.size());
        for (auto& [name, values] : entries_)
            map.emplace_back(Value(std::string(name)),
                             values.size() == 1 ? std::move(values.front()) : Value(std::move(values)));
        return Value(std::move(map));
    }

private:
    std::vector<std::pair<std::string_view, Value::Array>> entries_;  // names point into the parsed document
    std::unordered_map<std::string_view, std::size_t> index_;
};

Value element_value(const pugi::xml_node& element, std::size_t depth) {
    if (depth > XmlCodec::max_depth)
        refuse("nests elements deeper than XmlCodec::max_depth (" + std::to_string(XmlCodec::max_depth) + ")");
    Children children;
    for (const pugi::xml_attribute& attribute : element.attributes()) {
        const std::string_view name = attribute.name();
        if (!namespace_declaration(name)) children.add(local_name(name), Value(unescaped(attribute.value())));
    }
    const bool attributes = !children.empty();
    bool elements = false;
    std::string text;
    for (const pugi::xml_node& child : element.children()) {
        switch (child.type()) {
        case pugi::node_element:
            elements = true;
            children.add(local_name(child.name()), element_value(child, depth + 1));
            break;
        case pugi::node_pcdata: text += unescaped(child.value()); break;
        case pugi::node_cdata: text += child.value(); break;
        default: break;  // comments and processing instructions are not parsed at all
        }
    }
    if (!elements && !attributes) return Value(std::move(text));
    if (!blank(text))
        refuse("holds text beside " + std::string(elements ? "child elements" : "attributes") + " in <" +
               detail::shown_text(element.name(), 64) +
               "> (mixed content), which the family's XML mapping has no place for; put the text in an element "
               "of its own");
    return children.take();
}

}  // namespace

XmlCodec::XmlCodec() : XmlCodec(Options{}) {}

XmlCodec::XmlCodec(Options options) : root_(std::move(options.root)), names_(options.names) {
    if (!root_.empty() && !xml_name(root_))
        throw InvalidArgument("acemq: XmlCodec's root " + detail::in_quotes(root_) +
                              " is not an XML element name (a letter or '_' first, then letters, digits, '-', '.' "
                              "or '_')");
}

bool XmlCodec::can_decode(std::string_view content_type) const noexcept {
    return detail::starts_with_ci(content_type, "application/xml") ||
           detail::starts_with_ci(content_type, "text/xml") || detail::contains_ci(content_type, "+xml");
}

std::vector<std::byte> XmlCodec::encode(ValueSource source) const {
    std::string_view root = root_;
    if (root.empty()) {
        const std::string_view type = source.struct_name();
        root = type.empty() ? default_root : unqualified(type);
        if (!xml_name(root))
            throw EncodeError("acemq: the C++ type " + std::string(type) +
                              " has no name XML can give its root element; name the root: XmlCodec{{.root = \"...\"}}");
    }
    XmlWriter writer(root, names_);
    source.write_to(writer);
    return std::move(writer.body);
}

Value XmlCodec::decode(std::span<const std::byte> body, std::string_view) const {
    const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
    // Checked up front so the error says what is wrong rather than the parser's "syntax error".
    if (const auto bad = detail::invalid_utf8_at(text))
        refuse("is not valid UTF-8 (bad byte at offset " + std::to_string(*bad) + "); XmlCodec reads UTF-8 only");
    if (const auto bad = forbidden_character_at(text))
        refuse("holds a character XML 1.0 forbids (byte " + std::to_string(static_cast<unsigned char>(text[*bad])) +
               " at offset " + std::to_string(*bad) + ")");
    pugi::xml_document document;
    // parse_fragment keeps text outside the root element, which pugixml otherwise skips, so it
    // can be refused below; the one root element is checked there too.
    const unsigned options = pugi::parse_cdata | pugi::parse_eol | pugi::parse_wconv_attribute |
                             pugi::parse_ws_pcdata_single | pugi::parse_doctype | pugi::parse_declaration |
                             pugi::parse_fragment;
    const pugi::xml_parse_result parsed = document.load_buffer(body.data(), body.size(), options, pugi::encoding_utf8);
    if (parsed.status == pugi::status_bad_doctype) refuse_dtd();
    if (!parsed)
        refuse("is not well-formed XML: " + std::string(parsed.description()) + " at offset " +
               std::to_string(parsed.offset));
    pugi::xml_node root;
    for (const pugi::xml_node& node : document.children()) {
        switch (node.type()) {
        case pugi::node_doctype: refuse_dtd();
        case pugi::node_declaration: {
            const std::string_view encoding = node.attribute("encoding").value();
            if (!encoding.empty() && !detail::starts_with_ci(encoding, "utf-8") &&
                !detail::starts_with_ci(encoding, "utf8"))
                refuse("declares the encoding " + detail::in_quotes(encoding) + "; XmlCodec reads UTF-8 only");
            break;
        }
        case pugi::node_element:
            if (root) refuse("has more than one root element");
            root = node;
            break;
        case pugi::node_pcdata:
        case pugi::node_cdata:
            if (!blank(node.value())) refuse("holds text outside its root element");
            break;
        default: break;
        }
    }
    if (!root) refuse("has no root element");
    return element_value(root, 1);
}

}  // namespace acemq
