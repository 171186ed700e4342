#include <acemq/yaml_codec.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <acemq/error.hpp>

namespace acemq {

namespace {

constexpr std::string_view core_tag = "tag:yaml.org,2002:";

bool one_of(std::string_view text, std::initializer_list<std::string_view> words) {
    for (std::string_view word : words)
        if (text == word) return true;
    return false;
}

bool all_digits(std::string_view text, int base) {
    if (text.empty()) return false;
    for (char c : text) {
        const bool digit = base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                                      : c >= '0' && c < static_cast<char>('0' + base);
        if (!digit) return false;
    }
    return true;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, the core schema's float, without the sign.
bool core_float(std::string_view text) {
    std::size_t i = 0;
    const auto digits = [&] {
        const std::size_t from = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
        return i - from;
    };
    const std::size_t whole = digits();
    std::size_t fraction = 0;
    if (i < text.size() && text[i] == '.') {
        ++i;
        fraction = digits();
    }
    if (whole == 0 && fraction == 0) return false;
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
        if (digits() == 0) return false;
    }
    return i == text.size();
}

template <class Number>
std::optional<Number> parse_number(std::string_view text, int base = 10) {
    Number n{};
    const auto [end, failure] = [&] {
        if constexpr (std::is_floating_point_v<Number>)
            return std::from_chars(text.data(), text.data() + text.size(), n);
        else
            return std::from_chars(text.data(), text.data() + text.size(), n, base);
    }();
    if (failure != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return n;
}

// An integer of the core schema: decimal with an optional sign, 0o octal or 0x hex; past
// INT64_MAX a uint64, past that a double (as yaml.v3 reads it).
std::optional<Value> core_integer(std::string_view text) {
    const bool negative = !text.empty() && text[0] == '-';
    std::string_view digits = text.substr(!text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0);
    int base = 10;
    if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'o' || digits[1] == 'x') &&
        digits.size() == text.size()) {
        base = digits[1] == 'o' ? 8 : 16;
        digits.remove_prefix(2);
    }
    if (!all_digits(digits, base)) return std::nullopt;
    if (const auto u = parse_number<std::uint64_t>(digits, base)) {
        if (!negative) {
            if (*u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                return Value(static_cast<std::int64_t>(*u));
            return Value(*u);
        }
        if (*u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1)
            return Value(static_cast<std::int64_t>(0 - *u));
    }
    if (base != 10) return std::nullopt;
    const auto d = parse_number<double>(digits);
    return d ? std::optional<Value>(negative ? -*d : *d) : std::nullopt;
}

// What an unquoted scalar is under YAML 1.2's core schema (yaml.v3's reading).
Value resolve_plain(const std::string& text) {
    if (one_of(text, {"", "~", "null", "Null", "NULL"})) return Value();
    if (one_of(text, {"true", "True", "TRUE"})) return Value(true);
    if (one_of(text, {"false", "False", "FALSE"})) return Value(false);
    if (auto integer = core_integer(text)) return std::move(*integer);
    const bool negative = !text.empty() && text[0] == '-';
    const std::string_view unsigned_text =
        std::string_view(text).substr(!text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0);
    if (one_of(unsigned_text, {".inf", ".Inf", ".INF"}))
        return Value(negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
    if (one_of(text, {".nan", ".NaN", ".NAN"})) return Value(std::numeric_limits<double>::quiet_NaN());
    if (core_float(unsigned_text)) {
        const auto d = parse_number<double>(unsigned_text);  // from_chars takes no sign of '+'
        if (!d) throw DecodeError("acemq: the YAML number " + text + " is out of a double's range");
        return Value(negative ? -*d : *d);
    }
    return Value(text);
}

// Whether a reader could take this string for something else unquoted: what 1.2's core schema
// does not read as a string, YAML 1.1's booleans (Java's SnakeYAML still reads yes/no/on/off)
// and anything starting like a number (1.1's 1_000, 0b1 and 1:20 included).
bool needs_quotes(std::string_view text) {
    if (text.empty()) return true;
    if (one_of(text,
               {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"}))
        return true;
    const char first = text.front();
    if ((first >= '0' && first <= '9') || first == '+' || first == '-' || first == '.') return true;
    return resolve_plain(std::string(text)).kind() != Value::Kind::string;
}

// Writes the events through yaml-cpp's emitter: block style, maps' entries as key, value.
class YamlWriter final : public ValueWriter {
public:
    YamlWriter(YAML::Emitter& out, FieldNames names) : out_(out), names_(names) {}

    void null() override {
        before_value();
        out_ << YAML::Null;
    }
    void boolean(bool b) override {
        before_value();
        out_ << (b ? "true" : "false");
    }
    void int64(std::int64_t i) override { number(i); }
    void uint64(std::uint64_t u) override { number(u); }
    void float64(double d) override {
        before_value();
        if (std::isnan(d)) {
            out_ << ".nan";
        } else if (std::isinf(d)) {
            out_ << (d < 0 ? "-.inf" : ".inf");
        } else {
            // The shortest text that reads back as d, with a '.' or exponent so it stays a float.
            std::array<char, 64> text{};
            const auto end = std::to_chars(text.data(), text.data() + text.size(), d).ptr;
            std::string digits(text.data(), end);
            if (digits.find_first_of(".e") == std::string::npos) digits += ".0";
            out_ << digits;
        }
    }
    void string(std::string_view text) override {
        detail::require_utf8_to_encode(text, open_.empty() || !open_.back().at_key ? "a string" : "a map key");
        before_value();
        scalar_text(text);
    }
    void bytes(std::span<const std::byte> data) override {
        before_value();
        out_ << YAML::Binary(reinterpret_cast<const unsigned char*>(data.data()), data.size());
    }
    void begin_array(std::size_t) override {
        open(false);
        out_ << YAML::BeginSeq;
    }
    void end_array() override { close(YAML::EndSeq); }
    void begin_map(std::size_t) override {
        open(true);
        out_ << YAML::BeginMap;
    }
    void end_map() override { close(YAML::EndMap); }
    void begin_record(std::size_t) override {
        open(false);
        out_ << YAML::BeginMap;
    }
    void field(std::string_view name) override {
        out_ << YAML::Key;
        scalar_text(name);
        out_ << YAML::Value;
    }
    void end_record() override { close(YAML::EndMap); }
    FieldNames field_names() const noexcept override { return names_; }

private:
    struct Open {
        bool map;     // a map's entries alternate key and value (a record's are named by field())
        bool at_key;  // a map's next event is a key
    };

    void before_value() {
        if (open_.empty() || !open_.back().map) return;
        Open& top = open_.back();
        out_ << (top.at_key ? YAML::Key : YAML::Value);
        top.at_key = !top.at_key;
    }

    void scalar_text(std::string_view text) {
        if (needs_quotes(text)) out_ << YAML::DoubleQuoted;
        out_ << std::string(text);
    }

    template <class Integer>
    void number(Integer i) {
        before_value();
        out_ << i;
    }

    void open(bool map) {
        before_value();
        if (open_.size() >= YamlCodec::max_depth)
            throw EncodeError("acemq: the value nests sequences and mappings deeper than " +
                              std::to_string(YamlCodec::max_depth) + " levels, which YamlCodec does not read back");
        open_.push_back(Open{map, map});
    }

    template <class End>
    void close(End end) {
        open_.pop_back();
        out_ << end;
    }

    YAML::Emitter& out_;
    FieldNames names_;
    std::vector<Open> open_;
};

// Builds a Value from yaml-cpp's parse events, refusing what could make it grow past the
// body: an alias (a repeat of an anchored node, the "billion laughs" expansion), nesting past
// max_depth (thrown from inside the parser's recursion, before it goes deeper) and more than
// max_values values.
class YamlReader final : public YAML::EventHandler {
public:
    explicit YamlReader(std::size_t max_values) : max_values_(max_values) {}

    Value take() { return out_.take(); }
    std::size_t documents() const { return documents_; }

    void OnDocumentStart(const YAML::Mark&) override {
        if (++documents_ > 1)
            throw DecodeError("acemq: the YAML body holds more than one document ('---'); a body holds one value");
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {
        count();
        out_.null();
    }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
        throw DecodeError("acemq: the YAML body uses an alias (*name) at " + where(mark) +
                          "; aliases are refused, as repeating anchored nodes can make a small body "
                          "expand without bound: write the value out in full");
    }
    void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t, const std::string& text) override {
        count();
        scalar(mark, tag, text);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {
        open(mark);
        out_.begin_array(0);
    }
    void OnSequenceEnd() override {
        --depth_;
        out_.end_array();
    }
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
        open(mark);
        out_.begin_map(0);
    }
    void OnMapEnd() override {
        --depth_;
        out_.end_map();
    }

private:
    static std::string where(const YAML::Mark& mark) {
        return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
    }

    void count() {
        if (++values_ > max_values_)
            throw DecodeError("acemq: the YAML body holds more than " + std::to_string(max_values_) +
                              " values (sequences, mappings, keys and every element count one each), the most "
                              "this YamlCodec reads; send less per message, or construct the codec with a higher "
                              "max_values");
    }

    void open(const YAML::Mark& mark) {
        count();
        if (++depth_ > YamlCodec::max_depth)
            throw DecodeError("acemq: the YAML body nests sequences and mappings deeper than " +
                              std::to_string(YamlCodec::max_depth) + " levels (at " + where(mark) + ")");
    }

    // "?" is an unquoted scalar, resolved by the core schema; "!" a quoted one, a string.
    void scalar(const YAML::Mark& mark, const std::string& tag, const std::string& text) {
        if (tag == "?") return resolve_plain(text).write_to(out_);
        if (tag == "!" || tag == std::string(core_tag) + "str") return out_.string(text);
        if (tag == std::string(core_tag) + "binary") {
            std::string packed;  // !!binary may wrap its base64 over lines
            for (char c : text)
                if (c != ' ' && c != '\n' && c != '\r' && c != '\t') packed += c;
            if (auto bytes = detail::base64_decode(packed)) return out_.bytes(*bytes);
            throw DecodeError("acemq: the !!binary scalar at " + where(mark) + " is not base64");
        }
        for (const auto& [name, kind] :
             {std::pair{"int", Value::Kind::int64}, std::pair{"float", Value::Kind::float64},
              std::pair{"bool", Value::Kind::boolean}, std::pair{"null", Value::Kind::null}}) {
            if (tag != std::string(core_tag) + name) continue;
            Value value = resolve_plain(text);
            const bool fits = value.kind() == kind ||
                              (kind == Value::Kind::int64 && value.kind() == Value::Kind::uint64) ||
                              (kind == Value::Kind::float64 &&
                               (value.kind() == Value::Kind::int64 || value.kind() == Value::Kind::uint64));
            if (!fits)
                throw DecodeError("acemq: the YAML scalar at " + where(mark) + " is tagged !!" + name +
                                  " but reads as " + std::string(kind_name(value.kind())));
            return value.write_to(out_);
        }
        throw DecodeError("acemq: the YAML scalar at " + where(mark) + " has the tag " + tag +
                          ", which YamlCodec does not read (only YAML's core tags)");
    }

    ValueBuilder out_;
    std::size_t max_values_;
    std::size_t values_ = 0;
    std::size_t depth_ = 0;
    std::size_t documents_ = 0;
};

}  // namespace

YamlCodec::YamlCodec(std::size_t max_values) : YamlCodec(Options{.max_values = max_values}) {}

YamlCodec::YamlCodec(Options options) : names_(options.names), max_values_(options.max_values) {
    if (max_values_ == 0) throw InvalidArgument("acemq: a YamlCodec must read at least one value (max_values 0)");
}

bool YamlCodec::can_decode(std::string_view content_type) const noexcept {
    return detail::starts_with_ci(content_type, "application/yaml") ||
           detail::starts_with_ci(content_type, "application/x-yaml") ||
           detail::starts_with_ci(content_type, "text/yaml") || detail::starts_with_ci(content_type, "text/x-yaml") ||
           detail::contains_ci(content_type, "+yaml");
}

std::vector<std::byte> YamlCodec::encode(ValueSource source) const {
    YAML::Emitter out;
    out.SetOutputCharset(YAML::EmitNonAscii);
    YamlWriter writer(out, names_);
    source.write_to(writer);
    if (!out.good()) throw EncodeError("acemq: yaml-cpp could not write the value: " + out.GetLastError());
    const auto* text = reinterpret_cast<const std::byte*>(out.c_str());
    std::vector<std::byte> body(text, text + out.size());
    body.push_back(std::byte{'\n'});
    return body;
}

Value YamlCodec::decode(std::span<const std::byte> body, std::string_view) const {
    const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
    // Checked up front: yaml-cpp would also read UTF-16 and UTF-32, which no AceMQ member writes.
    if (const auto bad = detail::invalid_utf8_at(text))
        throw DecodeError("acemq: the YAML body is not valid UTF-8 (bad byte at offset " + std::to_string(*bad) + ")");
    std::istringstream in{std::string(text)};
    YamlReader reader(max_values_);
    try {
        YAML::Parser parser(in);
        while (parser.HandleNextDocument(reader)) {}
    } catch (const YAML::Exception& e) {
        throw DecodeError("acemq: the body is not valid YAML: " + e.msg + " (line " + std::to_string(e.mark.line + 1) +
                          ", column " + std::to_string(e.mark.column + 1) + ")");
    }
    if (reader.documents() == 0) throw DecodeError("acemq: the YAML body holds no document");
    return reader.take();
}

}  // namespace acemq
