#include "acemq/json_codec.hpp"

// Boost.JSON, header-only: this is the one translation unit that compiles it.
#include <boost/json/src.hpp>
#include <cmath>
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

Value from_json(const json::value& value) {
    switch (value.kind()) {
        case json::kind::null: return Value();
        case json::kind::bool_: return Value(value.get_bool());
        case json::kind::int64: return Value(value.get_int64());
        case json::kind::uint64: {
            const std::uint64_t u = value.get_uint64();
            if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                return Value(static_cast<std::int64_t>(u));
            return Value(u);
        }
        case json::kind::double_: return Value(value.get_double());
        case json::kind::string: return Value(std::string(value.get_string()));
        case json::kind::array: {
            Value::Array out;
            out.reserve(value.get_array().size());
            for (const auto& element : value.get_array()) out.push_back(from_json(element));
            return Value(std::move(out));
        }
        case json::kind::object: {
            Value::Map out;
            out.reserve(value.get_object().size());
            for (const auto& member : value.get_object())
                out.emplace_back(Value(std::string(member.key())), from_json(member.value()));
            return Value(std::move(out));
        }
    }
    throw DecodeError("acemq: the JSON parser returned a value of unknown kind");
}

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
    json::parser parser({}, options);
    boost::system::error_code error;
    const std::size_t used = parser.write_some(text.data(), text.size(), error);
    if (error == json::error::too_deep)
        throw DecodeError("acemq: the JSON body nests arrays and objects deeper than " +
                          std::to_string(max_depth) + " levels");
    if (error)
        throw DecodeError("acemq: the body is not valid JSON: " + error.message() +
                          " (at byte " + std::to_string(used) + " of " +
                          std::to_string(text.size()) + ")");
    if (used != text.size())
        throw DecodeError("acemq: " + std::to_string(text.size() - used) +
                          " bytes left over after the JSON value; a body holds one value");
    return from_json(parser.release());
}

}  // namespace acemq
