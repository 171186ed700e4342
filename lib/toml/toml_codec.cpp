#include <acemq/toml_codec.hpp>

#include <charconv>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <toml++/toml.h>

#include <acemq/error.hpp>

namespace acemq {

namespace {

[[noreturn]] void refuse(const std::string& why) { throw EncodeError("acemq: " + why); }

// Builds a toml::table from the events, refusing what TOML cannot carry as soon as it comes.
class TomlWriter final : public ValueWriter {
public:
    explicit TomlWriter(FieldNames names) : names_(names) {}

    toml::table take() { return std::move(root_); }

    void null() override {
        if (open_.empty()) top_level(Value::Kind::null);
        Open& top = open_.back();
        if (top.at_key) refuse_key(Value::Kind::null);
        if (top.node.index() == array)
            refuse("TOML has no null, so an array cannot hold one (an empty std::optional in a std::vector)");
        // A member without a value is left out: it reads back as an empty std::optional.
        top.key.reset();
        if (top.map) top.at_key = true;
    }
    void boolean(bool b) override { put(b, Value::Kind::boolean); }
    void int64(std::int64_t i) override {
        if (key_integer(i)) return;
        put(i, Value::Kind::int64);
    }
    void uint64(std::uint64_t u) override {
        if (key_integer(u)) return;
        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            refuse("TOML integers are 64-bit signed; " + std::to_string(u) + " has no TOML form");
        put(static_cast<std::int64_t>(u), Value::Kind::uint64);
    }
    void float64(double d) override { put(d, Value::Kind::float64); }
    void string(std::string_view text) override {
        detail::require_utf8_to_encode(text, "a string");
        if (!open_.empty() && open_.back().at_key) return key(std::string(text));
        put(std::string(text), Value::Kind::string);
    }
    void bytes(std::span<const std::byte> data) override { put(detail::base64_encode(data), Value::Kind::bytes); }
    void begin_array(std::size_t) override { open(toml::array{}, false, Value::Kind::array); }
    void end_array() override { close(); }
    void begin_map(std::size_t) override { open(toml::table{}, true, Value::Kind::map); }
    void end_map() override { close(); }
    void begin_record(std::size_t) override { open(toml::table{}, false, Value::Kind::record); }
    void field(std::string_view name) override { key(std::string(name)); }
    void end_record() override { close(); }
    FieldNames field_names() const noexcept override { return names_; }

private:
    static constexpr std::size_t table = 0;
    static constexpr std::size_t array = 1;

    struct Open {
        std::variant<toml::table, toml::array> node;
        bool map;                        // a map's entries alternate key and value
        bool at_key;                     // a map's next event is its key
        std::optional<std::string> key;  // a table's key, until its value arrives
    };

    [[noreturn]] static void top_level(Value::Kind kind) {
        refuse("TOML's top level must be a table (a struct or a map), not " + std::string(kind_name(kind)) +
               "; wrap the value in a struct, or use JsonCodec");
    }
    [[noreturn]] static void refuse_key(Value::Kind kind) {
        refuse("TOML keys are strings; a map key of kind " + std::string(kind_name(kind)) +
               " cannot be written (use MsgpackCodec for such maps)");
    }

    // Integer map keys are written as decimal text, as JsonCodec writes them.
    template <class Integer>
    bool key_integer(Integer i) {
        if (open_.empty() || !open_.back().at_key) return false;
        char text[24];
        key(std::string(text, std::to_chars(text, text + sizeof text, i).ptr));
        return true;
    }

    void key(std::string name) {
        Open& top = open_.back();
        if (std::get<table>(top.node).contains(name))
            refuse("two keys of one table are both \"" + name + "\", which TOML cannot hold");
        top.key = std::move(name);
        top.at_key = false;
    }

    template <class Node>
    void put(Node&& node, Value::Kind kind) {
        if (open_.empty()) top_level(kind);
        Open& top = open_.back();
        if (top.at_key) refuse_key(kind);
        if (auto* into = std::get_if<toml::array>(&top.node)) {
            into->push_back(std::forward<Node>(node));
            return;
        }
        std::get<table>(top.node).insert(std::move(*top.key), std::forward<Node>(node));
        top.key.reset();
        if (top.map) top.at_key = true;
    }

    void open(std::variant<toml::table, toml::array> node, bool map, Value::Kind kind) {
        if (open_.empty() && kind == Value::Kind::array) top_level(kind);
        if (!open_.empty() && open_.back().at_key) refuse_key(kind);
        if (open_.size() >= TomlCodec::max_depth)
            refuse("the value nests tables and arrays deeper than " + std::to_string(TomlCodec::max_depth) +
                   " levels, which TomlCodec does not read back");
        open_.push_back(Open{std::move(node), map, map, std::nullopt});
    }

    void close() {
        std::variant<toml::table, toml::array> done = std::move(open_.back().node);
        open_.pop_back();
        if (open_.empty()) {
            root_ = std::move(std::get<table>(done));
            return;
        }
        std::visit([&](auto& node) { put(std::move(node), Value::Kind::map); }, done);
    }

    FieldNames names_;
    std::vector<Open> open_;
    toml::table root_;
};

// Refuses, before toml++ parses the text, what it cannot be trusted with:
// - nesting of tables deeper than max_depth on one line: the parts of its dotted keys (in a
//   [table] header, before an '=', in an inline table) and its inline tables. toml++
//   recurses once per part and crashes on some ten thousand. Arrays are nested by toml++'s
//   own limit (TOML_MAX_NESTED_VALUES); an inline table must end on its line, so no line's
//   nesting carries into the next but through an array.
// - a non-ASCII character outside a string or a comment, which TOML 1.0 does not allow
//   anywhere else: toml++ 3.3's whitespace test reaches __builtin_unreachable for many of
//   them (U+00F6 after a bare key, found by tests/fuzz/fuzz_toml.cpp), undefined behaviour.
// Whether a quote at `at` can open a string: at the start of a line or after '=', '[', '{',
// ',' or '.' (spaces between). Anywhere else toml++ reads it as part of a bare value (and
// refuses it), scanning on past it, so what follows is screened as outside a string.
bool string_may_start(std::string_view text, std::size_t at) {
    while (at > 0 && (text[at - 1] == ' ' || text[at - 1] == '\t')) --at;
    return at == 0 || std::string_view("\n=[{,.").find(text[at - 1]) != std::string_view::npos;
}

void screen(std::string_view text) {
    std::vector<char> brackets;  // the open '[' of arrays and '{' of inline tables
    bool in_key = true;
    std::size_t depth = 0;
    std::size_t line = 1;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\n') {
            ++line;
            depth = 0;
            in_key = brackets.empty();
        } else if (c == '#') {
            while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
        } else if ((c == '"' || c == '\'') && string_may_start(text, i)) {
            const bool multi_line = text.substr(i, 3) == std::string_view(c == '"' ? "\"\"\"" : "'''");
            if (multi_line) {
                const std::size_t end = text.find(text.substr(i, 3), i + 3);
                if (end == std::string_view::npos) return;  // toml++ reports the unclosed string
                for (std::size_t k = i; k < end; ++k) line += text[k] == '\n';
                i = end + 2;
                while (i + 1 < text.size() && text[i + 1] == c) ++i;  // up to two quotes end the string
            } else {
                const std::size_t opened = i;
                while (i + 1 < text.size() && text[i + 1] != c && text[i + 1] != '\n')
                    i += (c == '"' && text[i + 1] == '\\') ? 2 : 1;
                ++i;
                // Unclosed on its line, it is no string to toml++, which scans on through it.
                if (i >= text.size() || text[i] != c) {
                    i = opened;
                    continue;
                }
            }
        } else if (c == '[') {
            if (!(in_key && brackets.empty())) brackets.push_back('[');  // else a [table] header
        } else if (c == ']') {
            if (!brackets.empty() && brackets.back() == '[')
                brackets.pop_back();
            else
                in_key = false;
        } else if (c == '{') {
            brackets.push_back('{');
            ++depth;
            in_key = true;
        } else if (c == '}') {
            if (!brackets.empty()) brackets.pop_back();
            in_key = false;
        } else if (c == ',') {
            in_key = !brackets.empty() && brackets.back() == '{';
        } else if (c == '=') {
            in_key = false;
        } else if (c == '.' && in_key) {
            ++depth;
        } else if (static_cast<unsigned char>(c) >= 0x80) {
            throw DecodeError("acemq: line " + std::to_string(line) +
                              " of the TOML body has a non-ASCII character outside a string or comment, "
                              "where TOML allows none (quote the key)");
        }
        if (depth > TomlCodec::max_depth)
            throw DecodeError("acemq: line " + std::to_string(line) + " of the TOML body nests tables deeper than " +
                              std::to_string(TomlCodec::max_depth) + " levels");
    }
}

class ValueMaker {
public:
    explicit ValueMaker(std::size_t max_values) : max_values_(max_values) {}

    Value make(const toml::node& node, std::size_t depth) {
        if (++values_ > max_values_)
            throw DecodeError("acemq: the TOML body holds more than " + std::to_string(max_values_) +
                              " values (tables, arrays, keys and every element count one each), the most this "
                              "TomlCodec reads; send less per message, or construct the codec with a higher "
                              "max_values");
        if (depth > TomlCodec::max_depth)
            throw DecodeError("acemq: the TOML body nests tables and arrays deeper than " +
                              std::to_string(TomlCodec::max_depth) + " levels");
        if (const auto* table = node.as_table()) {
            Value::Map map;
            map.reserve(table->size());
            for (const auto& [key, member] : *table) {
                ++values_;
                map.emplace_back(Value(std::string(key.str())), make(member, depth + 1));
            }
            return Value(std::move(map));
        }
        if (const auto* array = node.as_array()) {
            Value::Array values;
            values.reserve(array->size());
            for (const auto& element : *array) values.push_back(make(element, depth + 1));
            return Value(std::move(values));
        }
        if (const auto* text = node.as_string()) return Value(text->get());
        if (const auto* integer = node.as_integer()) return Value(integer->get());
        if (const auto* number = node.as_floating_point()) return Value(number->get());
        if (const auto* flag = node.as_boolean()) return Value(flag->get());
        std::ostringstream when;  // a date, a time or both, as the RFC 3339 text TOML writes them in
        node.visit([&when](const auto& value) { when << value; });
        return Value(when.str());
    }

private:
    std::size_t max_values_;
    std::size_t values_ = 0;
};

}  // namespace

TomlCodec::TomlCodec(std::size_t max_values) : TomlCodec(Options{.max_values = max_values}) {}

TomlCodec::TomlCodec(Options options) : names_(options.names), max_values_(options.max_values) {
    if (max_values_ == 0) throw InvalidArgument("acemq: a TomlCodec must read at least one value (max_values 0)");
}

bool TomlCodec::can_decode(std::string_view content_type) const noexcept {
    return detail::starts_with_ci(content_type, "application/toml") ||
           detail::starts_with_ci(content_type, "text/toml") || detail::contains_ci(content_type, "+toml");
}

std::vector<std::byte> TomlCodec::encode(ValueSource source) const {
    TomlWriter writer(names_);
    source.write_to(writer);
    std::ostringstream text;
    text << toml::toml_formatter(writer.take()) << '\n';
    const std::string written = std::move(text).str();
    const auto* first = reinterpret_cast<const std::byte*>(written.data());
    return std::vector<std::byte>(first, first + written.size());
}

Value TomlCodec::decode(std::span<const std::byte> body, std::string_view) const {
    const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
    // Checked up front so the error says "UTF-8" rather than the parser's complaint.
    if (const auto bad = detail::invalid_utf8_at(text))
        throw DecodeError("acemq: the TOML body is not valid UTF-8 (bad byte at offset " + std::to_string(*bad) + ")");
    screen(text);
    try {
        const toml::table table = toml::parse(text);
        return ValueMaker(max_values_).make(table, 0);
    } catch (const toml::parse_error& e) {
        throw DecodeError("acemq: the body is not valid TOML: " + std::string(e.description()) + " (line " +
                          std::to_string(e.source().begin.line) + ", column " +
                          std::to_string(e.source().begin.column) + ")");
    }
}

}  // namespace acemq
