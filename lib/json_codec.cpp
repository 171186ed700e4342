#include "acemq/json_codec.hpp"

// Boost.JSON, header-only: this is the one translation unit that compiles it.
#include <boost/json/src.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>
#include <string>

#include "acemq/error.hpp"

namespace acemq {

namespace {

namespace json = boost::json;

std::string valid_utf8(const std::string& text, std::string_view what) {
    if (const auto bad = detail::invalid_utf8_at(text))
        throw EncodeError("acemq: " + std::string(what) + " is not valid UTF-8 (bad byte at " +
                          "offset " + std::to_string(*bad) +
                          "); carry binary data in std::vector<std::byte>");
    return text;
}

std::string object_key(const Value& key) {
    switch (key.kind()) {
        case Value::Kind::string: return valid_utf8(key.as_string(), "a map key");
        case Value::Kind::int64: return std::to_string(key.as_int64());
        case Value::Kind::uint64: return std::to_string(key.as_uint64());
        default:
            throw EncodeError("acemq: JSON object keys are strings; a map key of kind " +
                              std::string(kind_name(key.kind())) +
                              " cannot be written (use MsgpackCodec for such maps)");
    }
}

void enter_container(std::size_t depth) {
    if (depth >= JsonCodec::max_depth)
        throw EncodeError("acemq: the value nests arrays and objects deeper than " +
                          std::to_string(JsonCodec::max_depth) +
                          " levels, which no AceMQ reader accepts");
}

void add_member(json::object& object, std::string key, json::value member) {
    if (!object.emplace(key, std::move(member)).second)
        throw EncodeError("acemq: two map keys both become the JSON key \"" + key + "\"");
}

json::value to_json(const Value& value, std::size_t depth) {
    switch (value.kind()) {
        case Value::Kind::null: return nullptr;
        case Value::Kind::boolean: return value.as_bool();
        case Value::Kind::int64: return value.as_int64();
        case Value::Kind::uint64: return value.as_uint64();
        case Value::Kind::float64: {
            const double d = value.as_double();
            if (!std::isfinite(d))
                throw EncodeError("acemq: JSON has no form for " + std::to_string(d) +
                                  "; send a finite number, or null via std::optional");
            return d;
        }
        case Value::Kind::string: return json::string(valid_utf8(value.as_string(), "a string"));
        case Value::Kind::bytes: return json::string(detail::base64_encode(value.as_bytes()));
        case Value::Kind::array: {
            enter_container(depth);
            json::array out;
            out.reserve(value.as_array().size());
            for (const auto& element : value.as_array()) out.push_back(to_json(element, depth + 1));
            return out;
        }
        case Value::Kind::map: {
            enter_container(depth);
            json::object out;
            out.reserve(value.as_map().size());
            for (const auto& [key, element] : value.as_map())
                add_member(out, object_key(key), to_json(element, depth + 1));
            return out;
        }
        case Value::Kind::record: {
            enter_container(depth);
            json::object out;
            out.reserve(value.as_record().size());
            for (const auto& [name, element] : value.as_record())
                add_member(out, name, to_json(element, depth + 1));
            return out;
        }
    }
    throw EncodeError("acemq: a Value of unknown kind cannot be written as JSON");
}

// Builds a Value straight from Boost.JSON's SAX events. Going through json::value would
// lose doubles: Boost 1.81 parses them imprecisely (about one in four random doubles comes
// back one ulp off), so numbers are re-read from their text with std::from_chars.
class ValueBuilder {
public:
    static constexpr std::size_t max_object_size = json::object::max_size();
    static constexpr std::size_t max_array_size = json::array::max_size();
    static constexpr std::size_t max_key_size = json::string::max_size();
    static constexpr std::size_t max_string_size = json::string::max_size();

    Value take_result() { return std::move(result_); }

    bool on_document_begin(json::error_code&) { return true; }
    bool on_document_end(json::error_code&) { return true; }
    bool on_object_begin(json::error_code&) { return open(true); }
    bool on_object_end(std::size_t, json::error_code&) {
        return close([](Frame& frame) { return Value(std::move(frame.members)); });
    }
    bool on_array_begin(json::error_code&) { return open(false); }
    bool on_array_end(std::size_t, json::error_code&) {
        return close([](Frame& frame) { return Value(std::move(frame.elements)); });
    }
    bool on_key_part(json::string_view part, std::size_t, json::error_code&) {
        text_.append(part.data(), part.size());
        return true;
    }
    bool on_key(json::string_view part, std::size_t, json::error_code&) {
        text_.append(part.data(), part.size());
        stack_.back().key = std::exchange(text_, {});
        return true;
    }
    bool on_string_part(json::string_view part, std::size_t, json::error_code&) {
        text_.append(part.data(), part.size());
        return true;
    }
    bool on_string(json::string_view part, std::size_t, json::error_code&) {
        text_.append(part.data(), part.size());
        return emit(Value(std::exchange(text_, {})));
    }
    bool on_number_part(json::string_view part, json::error_code&) {
        text_.append(part.data(), part.size());
        return true;
    }
    bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
        text_.clear();
        return emit(Value(i));
    }
    bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
        text_.clear();
        if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return emit(Value(static_cast<std::int64_t>(u)));
        return emit(Value(u));
    }
    bool on_double(double rough, json::string_view part, json::error_code& error) {
        text_.append(part.data(), part.size());
        const std::string number = std::exchange(text_, {});
        double exact = 0;
        const auto [end, failure] =
            std::from_chars(number.data(), number.data() + number.size(), exact);
        if (failure == std::errc() && end == number.data() + number.size())
            return emit(Value(exact));
        // Out of range: an underflow (1e-400) is as near zero as Boost's reading of it;
        // an overflow (1e400) has no double and is refused.
        if (failure == std::errc::result_out_of_range && std::isfinite(rough) &&
            std::abs(rough) < 1.0)
            return emit(Value(rough));
        error = json::error::exponent_overflow;
        return false;
    }
    bool on_bool(bool b, json::error_code&) { return emit(Value(b)); }
    bool on_null(json::error_code&) { return emit(Value()); }
    // Comments are off in the parse options, so these are never called.
    bool on_comment_part(json::string_view, json::error_code&) { return true; }
    bool on_comment(json::string_view, json::error_code&) { return true; }

private:
    struct Frame {
        bool object;
        Value::Array elements;
        Value::Map members;
        std::string key;
    };

    bool open(bool object) {
        stack_.push_back(Frame{object, {}, {}, {}});
        return true;
    }

    template <class Finish>
    bool close(Finish finish) {
        Value done = finish(stack_.back());
        stack_.pop_back();
        return emit(std::move(done));
    }

    bool emit(Value value) {
        if (stack_.empty()) {
            result_ = std::move(value);
        } else if (Frame& top = stack_.back(); top.object) {
            top.members.emplace_back(Value(std::move(top.key)), std::move(value));
        } else {
            top.elements.push_back(std::move(value));
        }
        return true;
    }

    std::vector<Frame> stack_;
    std::string text_;  // the string, key or number being read, when split into parts
    Value result_;
};

}  // namespace

bool JsonCodec::can_decode(std::string_view content_type) const noexcept {
    return content_type.empty() || detail::starts_with_ci(content_type, "application/json") ||
           detail::starts_with_ci(content_type, "text/json") ||
           detail::contains_ci(content_type, "+json");
}

std::vector<std::byte> JsonCodec::encode(const Value& value) const {
    const std::string text = json::serialize(to_json(value, 0));
    const auto* first = reinterpret_cast<const std::byte*>(text.data());
    return {first, first + text.size()};
}

Value JsonCodec::decode(std::span<const std::byte> body, std::string_view) const {
    const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
    if (text.empty()) throw DecodeError("acemq: the JSON body is empty");
    // Checked up front so the error says "UTF-8" rather than the parser's "syntax error".
    if (const auto bad = detail::invalid_utf8_at(text))
        throw DecodeError("acemq: the JSON body is not valid UTF-8 (bad byte at offset " +
                          std::to_string(*bad) + ")");
    json::parse_options options;
    options.max_depth = max_depth;
    json::basic_parser<ValueBuilder> parser(options);
    json::error_code error;
    const std::size_t used = parser.write_some(false, text.data(), text.size(), error);
    if (error == json::error::too_deep)
        throw DecodeError("acemq: the JSON body nests arrays and objects deeper than " +
                          std::to_string(max_depth) + " levels");
    if (error)
        throw DecodeError("acemq: the body is not valid JSON: " + error.message() + " (at byte " +
                          std::to_string(used) + " of " + std::to_string(text.size()) + ")");
    if (used != text.size())
        throw DecodeError("acemq: " + std::to_string(text.size() - used) +
                          " bytes left over after the JSON value; a body holds one value");
    return parser.handler().take_result();
}

}  // namespace acemq
