#include <acemq/json_codec.hpp>

// Boost.JSON, header-only: this is the one translation unit that compiles it.
#include <algorithm>
#include <bit>
#include <boost/container/small_vector.hpp>
#include <boost/json/src.hpp>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <ranges>
#include <string>
#include <utility>

#include <acemq/error.hpp>

namespace acemq {

namespace {

namespace json = boost::json;

// A JSON string: '"', '\\' and control characters escaped (the short forms where JSON has
// them, else \u00XX), everything else byte for byte. Calls put with chars and string_views.
template <class Put>
void write_quoted(std::string_view text, Put put) {
    put('"');
    std::size_t plain = 0;  // start of the run that needs no escaping
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        put(text.substr(plain, i - plain));
        plain = i + 1;
        put('\\');
        switch (c) {
        case '"': put('"'); break;
        case '\\': put('\\'); break;
        case '\b': put('b'); break;
        case '\t': put('t'); break;
        case '\n': put('n'); break;
        case '\f': put('f'); break;
        case '\r': put('r'); break;
        default: {
            constexpr std::string_view hex = "0123456789abcdef";
            put(std::string_view("u00"));
            put(hex[c >> 4]);
            put(hex[c & 15]);
        }
        }
    }
    put(text.substr(plain));
    put('"');
}

// Writes the events as JSON text straight into the body, byte for byte what Boost.JSON's
// serializer writes for the same value (the format this codec has always produced): no
// whitespace, only '"', '\\' and control characters escaped, doubles in Boost's shortest
// round-trip form. Records and maps are objects; inside a map, events alternate key, value.
class JsonWriter final : public ValueWriter {
public:
    JsonWriter(std::vector<std::byte>& body, FieldNames names) : body_(body), names_(names) {}

    void null() override {
        value_or_refuse_key(Value::Kind::null);
        put("null");
    }
    void boolean(bool b) override {
        value_or_refuse_key(Value::Kind::boolean);
        put(b ? "true" : "false");
    }
    void int64(std::int64_t i) override { number(i); }
    void uint64(std::uint64_t u) override { number(u); }
    void float64(double d) override {
        value_or_refuse_key(Value::Kind::float64);
        if (!std::isfinite(d))
            throw EncodeError("acemq: JSON has no form for " + std::to_string(d) +
                              "; send a finite number, or null via std::optional");
        char text[64];  // Boost's own formatter, so the digits are the serializer's
        put({text, json::detail::format_double(text, d)});
    }
    void string(std::string_view text) override {
        if (at_key()) {
            detail::require_utf8_to_encode(text, "a map key");
            key(text);
            return;
        }
        detail::require_utf8_to_encode(text, "a string");
        separate();
        quoted(text);
    }
    void bytes(std::span<const std::byte> data) override {
        value_or_refuse_key(Value::Kind::bytes);
        quoted(detail::base64_encode(data));
    }
    void begin_array(std::size_t) override { open(Value::Kind::array, '['); }
    void end_array() override { close(']'); }
    void begin_map(std::size_t) override { open(Value::Kind::map, '{'); }
    void end_map() override { close('}'); }
    void begin_record(std::size_t) override { open(Value::Kind::record, '{'); }
    void field(std::string_view name) override { key(name); }
    void end_record() override { close('}'); }
    FieldNames field_names() const noexcept override { return names_; }

private:
    struct Open {
        Value::Kind kind;       // array, map or record
        std::size_t members;    // written so far, for the commas
        bool at_key;            // a map's next event is a key
        std::size_t first_key;  // this object's keys in keys_
    };

    bool at_key() const { return !open_.empty() && open_.back().at_key; }

    // Every value event but a string (which may be a key) starts here.
    void value_or_refuse_key(Value::Kind kind) {
        if (at_key())
            throw EncodeError("acemq: JSON object keys are strings; a map key of kind " + std::string(kind_name(kind)) +
                              " cannot be written (use MsgpackCodec for such maps)");
        separate();
    }

    // Integer map keys are written as decimal text, as Go does.
    template <class Integer>
    void number(Integer i) {
        char text[24];
        const auto end = std::to_chars(text, text + sizeof text, i).ptr;
        const std::string_view digits(text, static_cast<std::size_t>(end - text));
        if (at_key()) {
            key(digits);
            return;
        }
        separate();
        put(digits);
    }

    // Before a value: a comma between array elements; a map value follows its key.
    void separate() {
        if (open_.empty()) return;
        Open& top = open_.back();
        if (top.kind == Value::Kind::array && top.members++ > 0) put(',');
        if (top.kind == Value::Kind::map) top.at_key = true;
    }

    void key(std::string_view text) {
        Open& top = open_.back();
        if (top.members++ > 0) put(',');
        top.at_key = false;
        const std::size_t from = body_.size() + 1;  // after the opening quote
        quoted(text);
        keys_.emplace_back(from, body_.size() - 1 - from);
        put(':');
    }

    void open(Value::Kind kind, char bracket) {
        value_or_refuse_key(kind);
        if (open_.size() >= JsonCodec::max_depth)
            throw EncodeError("acemq: the value nests arrays and objects deeper than " +
                              std::to_string(JsonCodec::max_depth) + " levels, which no AceMQ reader accepts");
        open_.push_back(Open{kind, 0, kind == Value::Kind::map, keys_.size()});
        put(bracket);
    }

    void close(char bracket) {
        const std::size_t first = open_.back().first_key;
        if (first < keys_.size()) {
            refuse_duplicate_keys(first);
            keys_.resize(first);
        }
        open_.pop_back();
        put(bracket);
    }

    // Two keys of one object (say "1" and the integer 1) would leave only one member in
    // the reader's hands. Checked when the object closes, by sorting its keys (which are
    // not needed after), so a large map costs n log n. The keys are compared as written,
    // escaped: two texts are equal exactly when their escaped forms are.
    void refuse_duplicate_keys(std::size_t first) {
        const auto text = [this](const std::pair<std::size_t, std::size_t>& k) {
            return std::string_view(reinterpret_cast<const char*>(body_.data()) + k.first, k.second);
        };
        // Iterators rather than a ranges::subrange, which clang 14 (the fuzz build) cannot
        // compile with libstdc++ 12.
        const auto from = keys_.begin() + static_cast<std::ptrdiff_t>(first);
        std::sort(from, keys_.end(), [&](const auto& a, const auto& b) { return text(a) < text(b); });
        const auto twin =
            std::adjacent_find(from, keys_.end(), [&](const auto& a, const auto& b) { return text(a) == text(b); });
        if (twin != keys_.end())
            throw EncodeError("acemq: two map keys both become the JSON key \"" + std::string(text(*twin)) + "\"");
    }

    void quoted(std::string_view text) {
        write_quoted(text, [this](auto part) { put(part); });
    }

    void put(char c) { body_.push_back(static_cast<std::byte>(c)); }
    void put(std::string_view text) {
        const auto* first = reinterpret_cast<const std::byte*>(text.data());
        body_.insert(body_.end(), first, first + text.size());
    }

    std::vector<std::byte>& body_;
    FieldNames names_;
    // Both held in the writer for a typical struct's depth and keys: a message's encoding
    // allocates for its body alone.
    boost::container::small_vector<Open, 8> open_;
    // The keys of the open objects, innermost last, as (offset, size) of their escaped text
    // in the body.
    boost::container::small_vector<std::pair<std::size_t, std::size_t>, 16> keys_;
};

// A parsed body, flat: each value one token in document order, an array or object first
// with its count (elements; an object's key and value pairs), its members after it. The
// reader walks it, so a struct is read with no Value tree, and decode() builds its Value
// from it the same way.
struct Token {
    Value::Kind kind;
    bool owned;            // a string in Tape::text, not in the body
    std::uint64_t number;  // a bool, an integer's or a double's bits, a count; a string's size
    std::size_t offset;    // a string's start, in the body or in Tape::text
};

struct Tape {
    std::vector<Token> tokens;
    std::string text;  // the strings the body does not hold as they read: escaped, or split
};

// Boost.JSON's SAX events into a Tape. Numbers are re-read from their text with
// std::from_chars: Boost 1.81 parses doubles imprecisely (about one in four random doubles
// comes back one ulp off).
class TapeBuilder {
public:
    static constexpr std::size_t max_object_size = json::object::max_size();
    static constexpr std::size_t max_array_size = json::array::max_size();
    static constexpr std::size_t max_key_size = json::string::max_size();
    static constexpr std::size_t max_string_size = json::string::max_size();

    TapeBuilder(std::string_view body, std::size_t max_values) : body_(body), max_values_(max_values) {
        // One allocation for a typical message: no value takes less than two bytes but a
        // lone digit's.
        tape_.tokens.reserve(std::min<std::size_t>(body.size() / 4 + 4, 4096));
    }

    Tape take_result() { return std::move(tape_); }
    // Whether the parse stopped because the body holds more than max_values values.
    bool too_many() const { return values_ > max_values_; }

    bool on_document_begin(json::error_code&) { return true; }
    bool on_document_end(json::error_code&) { return true; }
    bool on_object_begin(json::error_code& error) { return open(Value::Kind::map, error); }
    bool on_object_end(std::size_t members, json::error_code&) { return close(members); }
    bool on_array_begin(json::error_code& error) { return open(Value::Kind::array, error); }
    bool on_array_end(std::size_t elements, json::error_code&) { return close(elements); }
    bool on_key_part(json::string_view part, std::size_t, json::error_code&) { return more_text(part); }
    bool on_key(json::string_view part, std::size_t, json::error_code& error) { return string(part, error); }
    bool on_string_part(json::string_view part, std::size_t, json::error_code&) { return more_text(part); }
    bool on_string(json::string_view part, std::size_t, json::error_code& error) { return string(part, error); }
    bool on_number_part(json::string_view part, json::error_code&) { return more_text(part); }
    bool on_int64(std::int64_t i, json::string_view, json::error_code& error) {
        part_.clear();
        return add(Value::Kind::int64, static_cast<std::uint64_t>(i), error);
    }
    bool on_uint64(std::uint64_t u, json::string_view, json::error_code& error) {
        part_.clear();
        const bool fits = u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        return add(fits ? Value::Kind::int64 : Value::Kind::uint64, u, error);
    }
    bool on_double(double rough, json::string_view part, json::error_code& error) {
        part_.append(part.data(), part.size());
        double exact = 0;
        const auto [end, failure] = std::from_chars(part_.data(), part_.data() + part_.size(), exact);
        const bool whole = failure == std::errc() && end == part_.data() + part_.size();
        part_.clear();
        // Out of range: an underflow (1e-400) is as near zero as Boost's reading of it;
        // an overflow (1e400) has no double and is refused.
        const bool underflow =
            failure == std::errc::result_out_of_range && std::isfinite(rough) && std::abs(rough) < 1.0;
        if (!whole && !underflow) {
            error = json::error::exponent_overflow;
            return false;
        }
        return add(Value::Kind::float64, std::bit_cast<std::uint64_t>(whole ? exact : rough), error);
    }
    bool on_bool(bool b, json::error_code& error) { return add(Value::Kind::boolean, b ? 1 : 0, error); }
    bool on_null(json::error_code& error) { return add(Value::Kind::null, 0, error); }
    // Comments are off in the parse options, so these are never called.
    bool on_comment_part(json::string_view, json::error_code&) { return true; }
    bool on_comment(json::string_view, json::error_code&) { return true; }

private:
    // Every value (and every object key) counts one; past the limit the parse stops, before
    // the tape grows further. The error code only ends the parse: too_many() says why.
    bool add(Value::Kind kind, std::uint64_t number, json::error_code& error, std::size_t offset = 0,
             bool owned = false) {
        if (++values_ > max_values_) {
            error = json::error::extra_data;
            return false;
        }
        tape_.tokens.push_back(Token{kind, owned, number, offset});
        return true;
    }

    bool open(Value::Kind kind, json::error_code& error) {
        open_.push_back(tape_.tokens.size());
        return add(kind, 0, error);
    }

    bool close(std::size_t members) {
        tape_.tokens[open_.back()].number = members;
        open_.pop_back();
        return true;
    }

    bool more_text(json::string_view part) {
        part_.append(part.data(), part.size());
        return true;
    }

    // A string or key, whose earlier parts (if the parser split it) are in part_. Where the
    // body holds it as it reads (unescaped, in one part) the token points there.
    bool string(json::string_view last, json::error_code& error) {
        std::string_view text(last.data(), last.size());
        if (!part_.empty()) {
            part_.append(text);
            text = part_;
        }
        const bool in_body = std::less_equal<>()(body_.data(), text.data()) &&
                             std::less_equal<>()(text.data() + text.size(), body_.data() + body_.size());
        std::size_t offset = static_cast<std::size_t>(text.data() - body_.data());
        if (!in_body) {
            offset = tape_.text.size();
            tape_.text.append(text);
        }
        part_.clear();
        return add(Value::Kind::string, text.size(), error, offset, !in_body);
    }

    std::string_view body_;
    Tape tape_;
    std::vector<std::size_t> open_;  // the tokens of the arrays and objects not yet closed
    std::string part_;               // the string, key or number being read, when split into parts
    std::size_t max_values_;
    std::size_t values_ = 0;
};

// The body parsed and checked whole, or the DecodeError saying what is wrong with it.
Tape parse_body(std::span<const std::byte> body, std::size_t max_values) {
    const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
    if (text.empty()) throw DecodeError("acemq: the JSON body is empty");
    // Checked up front so the error says "UTF-8" rather than the parser's "syntax error".
    if (const auto bad = detail::invalid_utf8_at(text))
        throw DecodeError("acemq: the JSON body is not valid UTF-8 (bad byte at offset " + std::to_string(*bad) + ")");
    json::parse_options options;
    options.max_depth = JsonCodec::max_depth;
    json::basic_parser<TapeBuilder> parser(options, text, max_values);
    json::error_code error;
    const std::size_t used = parser.write_some(false, text.data(), text.size(), error);
    if (parser.handler().too_many())
        throw DecodeError("acemq: the JSON body holds more than " + std::to_string(max_values) +
                          " values (arrays, objects, keys and every element count one each), the "
                          "most this JsonCodec reads; send less per message, or construct the "
                          "codec with a higher max_values");
    if (error == json::error::too_deep)
        throw DecodeError("acemq: the JSON body nests arrays and objects deeper than " +
                          std::to_string(JsonCodec::max_depth) + " levels");
    if (error)
        throw DecodeError("acemq: the body is not valid JSON: " + error.message() + " (at byte " +
                          std::to_string(used) + " of " + std::to_string(text.size()) + ")");
    if (used != text.size())
        throw DecodeError("acemq: " + std::to_string(text.size() - used) +
                          " bytes left over after the JSON value; a body holds one value");
    return parser.handler().take_result();
}

// Walks a Tape of a body parse_body accepted.
class JsonReader final : public ValueReader {
public:
    JsonReader(std::span<const std::byte> body, Tape tape, FieldNames names)
        : body_(reinterpret_cast<const char*>(body.data())), tape_(std::move(tape)), names_(names) {}

    Value::Kind next() override { return tape_.tokens[at_].kind; }
    void null() override { take(Value::Kind::null); }
    bool boolean() override { return take(Value::Kind::boolean).number != 0; }
    std::int64_t int64() override { return static_cast<std::int64_t>(take(Value::Kind::int64).number); }
    std::uint64_t uint64() override { return take(Value::Kind::uint64).number; }
    double float64() override { return std::bit_cast<double>(take(Value::Kind::float64).number); }
    std::string_view string() override { return text(take(Value::Kind::string)); }
    // JSON has no bytes (they travel as base64 strings): this only ever refuses.
    std::span<const std::byte> bytes() override {
        take(Value::Kind::bytes);
        return {};
    }
    std::size_t array() override { return take(Value::Kind::array).number; }
    std::size_t map() override { return take(Value::Kind::map).number; }
    FieldNames field_names() const noexcept override { return names_; }

    Value value() override {
        ValueBuilder out;
        struct Open {
            bool map;
            std::uint64_t left;  // values still to come
        };
        std::vector<Open> open;
        do {
            const Token& token = tape_.tokens[at_++];
            bool whole = true;  // the token is a whole value: its container has one less to come
            switch (token.kind) {
            case Value::Kind::null: out.null(); break;
            case Value::Kind::boolean: out.boolean(token.number != 0); break;
            case Value::Kind::int64: out.int64(static_cast<std::int64_t>(token.number)); break;
            case Value::Kind::uint64: out.uint64(token.number); break;
            case Value::Kind::float64: out.float64(std::bit_cast<double>(token.number)); break;
            case Value::Kind::string: out.string(text(token)); break;
            case Value::Kind::array:
            case Value::Kind::map: {
                const bool map = token.kind == Value::Kind::map;
                if (map)
                    out.begin_map(token.number);
                else
                    out.begin_array(token.number);
                if (token.number > 0) {
                    open.push_back(Open{map, map ? 2 * token.number : token.number});
                    whole = false;
                } else {
                    end(out, map);
                }
                break;
            }
            default: unchecked(token.kind);
            }
            while (whole && !open.empty() && --open.back().left == 0) {
                end(out, open.back().map);
                open.pop_back();
            }
        } while (!open.empty());
        return out.take();
    }

private:
    // The next value, which must be of `kind`.
    const Token& take(Value::Kind kind) {
        const Token& token = tape_.tokens[at_];
        if (token.kind != kind)
            throw UsageError("acemq: a ValueReader was asked for " + std::string(kind_name(kind)) +
                             " where the next value is " + std::string(kind_name(token.kind)) + "; ask next() first");
        ++at_;
        return token;
    }

    std::string_view text(const Token& token) const {
        return {(token.owned ? tape_.text.data() : body_) + token.offset, static_cast<std::size_t>(token.number)};
    }

    static void end(ValueBuilder& out, bool map) {
        if (map)
            out.end_map();
        else
            out.end_array();
    }

    [[noreturn, gnu::cold]] static void unchecked(Value::Kind kind) {
        throw Error("acemq: JsonReader met a token of kind " + std::string(kind_name(kind)) +
                    ", which JsonCodec's parse never makes; this is a bug in acemq");
    }

    const char* body_;
    Tape tape_;
    FieldNames names_;
    std::size_t at_ = 0;
};

}  // namespace

std::string json_quoted(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    write_quoted(text, [&out](auto part) { out += part; });
    return out;
}

bool JsonCodec::can_decode(std::string_view content_type) const noexcept {
    return content_type.empty() || detail::starts_with_ci(content_type, "application/json") ||
           detail::starts_with_ci(content_type, "text/json") || detail::contains_ci(content_type, "+json");
}

std::vector<std::byte> JsonCodec::encode(ValueSource source) const {
    std::vector<std::byte> body;
    body.reserve(256);  // as in MsgpackCodec: one allocation for a typical message
    JsonWriter writer(body, names_);
    source.write_to(writer);
    return body;
}

JsonCodec::JsonCodec(std::size_t max_values) : JsonCodec(Options{.max_values = max_values}) {}

JsonCodec::JsonCodec(Options options) : names_(options.names), max_values_(options.max_values) {
    if (max_values_ == 0) throw InvalidArgument("acemq: a JsonCodec must read at least one value (max_values 0)");
}

Value JsonCodec::decode(std::span<const std::byte> body, std::string_view) const {
    return JsonReader(body, parse_body(body, max_values_), names_).value();
}

std::unique_ptr<ValueReader> JsonCodec::reader(std::span<const std::byte> body, std::string_view) const {
    return std::make_unique<JsonReader>(body, parse_body(body, max_values_), names_);
}

}  // namespace acemq
