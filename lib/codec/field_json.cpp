#include "field_json.hpp"

#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>

#include <acemq/error.hpp>

namespace acemq::detail {

Value field_to_json(const FieldValue& field, std::string_view what, std::string_view name, std::string_view keeper) {
    return std::visit(
        [&](const auto& value) -> Value {
            using T = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                return Value();
            } else if constexpr (std::is_same_v<T, std::int32_t>) {
                return Value(std::int64_t{value});
            } else if constexpr (std::is_same_v<T, Bytes>) {
                throw InvalidArgument("acemq: " + std::string(what) + " \"" + std::string(name) +
                                      "\" holds bytes, which " + std::string(keeper) +
                                      "; send them as text, e.g. base64");
            } else if constexpr (std::is_same_v<T, FieldTimestamp>) {
                // As a JSON number it would come back as an integer, read as milliseconds.
                throw InvalidArgument("acemq: " + std::string(what) + " \"" + std::string(name) +
                                      "\" holds an AMQP timestamp, which " + std::string(keeper) +
                                      "; send it as an integer of epoch milliseconds");
            } else if constexpr (std::is_same_v<T, FieldArray>) {
                Value::Array items;
                for (const FieldValue& item : value) items.push_back(field_to_json(item, what, name, keeper));
                return Value(std::move(items));
            } else if constexpr (std::is_same_v<T, FieldTable>) {
                Value::Map entries;
                for (const auto& [key, item] : value)
                    entries.emplace_back(Value(key.str()), field_to_json(item, what, key, keeper));
                return Value(std::move(entries));
            } else {
                return Value(value);
            }
        },
        field.get());
}

FieldValue field_from_json(const Value& value, bool int32) {
    switch (value.kind()) {
    case Value::Kind::null: return FieldValue();
    case Value::Kind::boolean: return FieldValue(value.as_bool());
    case Value::Kind::int64: {
        const std::int64_t number = value.as_int64();
        if (int32 && number >= INT32_MIN && number <= INT32_MAX) return FieldValue(static_cast<std::int32_t>(number));
        return FieldValue(number);
    }
    case Value::Kind::uint64: return FieldValue(value.as_uint64());
    case Value::Kind::float64: return FieldValue(value.as_double());
    case Value::Kind::string: return FieldValue(value.as_string());
    case Value::Kind::array: {
        FieldArray items;
        for (const Value& item : value.as_array()) items.push_back(field_from_json(item));
        return FieldValue(std::move(items));
    }
    case Value::Kind::map: {
        FieldTable table;
        for (const auto& [key, item] : value.as_map()) table.insert_or_assign(key.as_string(), field_from_json(item));
        return FieldValue(std::move(table));
    }
    default:
        throw DecodeError("acemq: JSON decoded to a " + std::string(kind_name(value.kind())) +
                          ", which no field value holds");
    }
}

}  // namespace acemq::detail
