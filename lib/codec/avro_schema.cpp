#include "avro_schema.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <utility>

#include <acemq/avro_codec.hpp>
#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>

namespace acemq::detail {

namespace {

using Type = AvroSchema::Type;
using Node = AvroSchema::Node;

constexpr std::pair<std::string_view, Type> primitives[] = {
    {"null", Type::null},     {"boolean", Type::boolean}, {"int", Type::int32},   {"long", Type::int64},
    {"float", Type::float32}, {"double", Type::float64},  {"bytes", Type::bytes}, {"string", Type::string},
};

std::string_view type_word(Type type) noexcept {
    switch (type) {
    case Type::record: return "record";
    case Type::enumeration: return "enum";
    case Type::array: return "array";
    case Type::map: return "map";
    case Type::fixed: return "fixed";
    case Type::union_: return "union";
    default:
        for (const auto& [word, each] : primitives)
            if (each == type) return word;
        return "?";
    }
}

// "an int", "a record": the words errors use.
std::string a(std::string_view word) {
    return (std::string_view("aeiou").find(word.front()) != std::string_view::npos ? "an " : "a ") + std::string(word);
}

std::string describe(const Node& node) {
    return node.name.empty() ? a(type_word(node.type))
                             : a(type_word(node.type)) + " " + std::string(avro_short_name(node.name));
}

std::string in_quotes(std::string_view text) { return "'" + std::string(text) + "'"; }

[[noreturn]] void bad_schema(const std::string& where, const std::string& what) {
    throw InvalidArgument("acemq: not an Avro schema: " + (where.empty() ? what : where + ": " + what));
}

// A JSON string's code points as bytes, as Avro writes a bytes or fixed default.
std::optional<Value::Bytes> latin1_bytes(std::string_view text) {
    Value::Bytes out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            out.push_back(std::byte{c});
        } else if ((c & 0xE0) == 0xC0 && i + 1 < text.size() && c <= 0xC3) {
            out.push_back(std::byte(static_cast<unsigned char>(((c & 0x03) << 6) | (text[++i] & 0x3F))));
        } else {
            return std::nullopt;
        }
    }
    return out;
}

bool fits_int32(std::int64_t i) noexcept {
    return i >= std::numeric_limits<std::int32_t>::min() && i <= std::numeric_limits<std::int32_t>::max();
}

bool is_integer(const Value& v) noexcept { return v.kind() == Value::Kind::int64 || v.kind() == Value::Kind::uint64; }

// An encoding or decoding error on its way up: each record field, array item and map entry it
// leaves prefixes its step, so the path costs nothing until something fails.
struct Trail {
    std::string path;  // ".items[2].sku"
    std::string what;
};

template <class Step, class Body>
void along(Step step, Body body) {
    try {
        body();
    } catch (Trail& trail) {
        trail.path.insert(0, step());
        throw;
    }
}

// "OrderPlaced.items[2].sku", or "" for an error at the top of a schema that is not a record.
std::string trail_path(const Node& root, const Trail& trail) {
    return std::string(avro_short_name(root.name)) + trail.path;
}

}  // namespace

std::string_view avro_short_name(std::string_view full) noexcept {
    const auto dot = full.rfind('.');
    return dot == std::string_view::npos ? full : full.substr(dot + 1);
}

// ---- parsing ---------------------------------------------------------------------------

AvroSchema::AvroSchema(std::string_view json) {
    Value parsed;
    try {
        parsed = JsonCodec({.names = FieldNames::as_is})
                     .decode(std::as_bytes(std::span(json.data(), json.size())), content_types::json);
    } catch (const DecodeError& e) {
        bad_schema("", "the JSON does not parse (" + std::string(without_prefix(e.what())) + ")");
    }
    root_ = parse(parsed, "", "");
}

std::optional<std::size_t> AvroSchema::lookup(std::string_view name, const std::string& space) const {
    const auto find = [&](std::string_view full) -> std::optional<std::size_t> {
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            if (!nodes_[i].name.empty() && nodes_[i].name == full) return i;
        return std::nullopt;
    };
    if (name.find('.') == std::string_view::npos && !space.empty())
        if (auto found = find(space + "." + std::string(name))) return found;
    return find(name);
}

std::size_t AvroSchema::parse(const Value& json, const std::string& space, const std::string& where) {
    const auto primitive = [this](std::string_view word) -> std::optional<std::size_t> {
        for (const auto& [name, type] : primitives)
            if (name == word) {
                nodes_.push_back(Node{.type = type});
                return nodes_.size() - 1;
            }
        return std::nullopt;
    };
    switch (json.kind()) {
    case Value::Kind::string: {
        if (auto index = primitive(json.as_string())) return *index;
        if (auto index = lookup(json.as_string(), space)) return *index;
        bad_schema(where,
                   "unknown type " + in_quotes(json.as_string()) + " (not a primitive, nor a type named before)");
    }
    case Value::Kind::array: {
        if (json.as_array().empty()) bad_schema(where, "a union needs at least one branch");
        std::vector<std::size_t> branches;
        for (const Value& branch : json.as_array()) {
            const std::size_t index = parse(branch, space, where);
            if (nodes_[index].type == Type::union_) bad_schema(where, "a union may not hold a union directly");
            branches.push_back(index);
        }
        nodes_.push_back(Node{.type = Type::union_, .children = std::move(branches)});
        return nodes_.size() - 1;
    }
    case Value::Kind::map: {
        const Value* type = json.find("type");
        if (type == nullptr) bad_schema(where, "a schema object needs a \"type\"");
        if (type->kind() != Value::Kind::string) return parse(*type, space, where);
        const std::string& word = type->as_string();
        if (word == "record" || word == "error") return named(json, Type::record, space, where);
        if (word == "enum") return named(json, Type::enumeration, space, where);
        if (word == "fixed") return named(json, Type::fixed, space, where);
        if (word == "array" || word == "map") {
            const Value* inner = json.find(word == "array" ? "items" : "values");
            if (inner == nullptr)
                bad_schema(where, "an " + word + " needs \"" + (word == "array" ? "items" : "values") + "\"");
            const std::size_t child = parse(*inner, space, where);
            nodes_.push_back(Node{.type = word == "array" ? Type::array : Type::map, .children = {child}});
            return nodes_.size() - 1;
        }
        return parse(*type, space, where);  // a primitive or a named type, spelled as an object
    }
    default: bad_schema(where, "a schema is a string, an object or an array, not " + a(kind_name(json.kind())));
    }
}

std::size_t AvroSchema::named(const Value& json, Type type, const std::string& space, const std::string& where) {
    const Value* name = json.find("name");
    if (name == nullptr || name->kind() != Value::Kind::string || name->as_string().empty())
        bad_schema(where, "a " + std::string(type_word(type)) + " needs a \"name\"");
    std::string full = name->as_string();
    if (full.find('.') == std::string::npos) {
        const Value* ns = json.find("namespace");
        const std::string own = ns != nullptr && ns->kind() == Value::Kind::string ? ns->as_string() : space;
        if (!own.empty()) full = own + "." + full;
    }
    if (lookup(full, "")) bad_schema(where, "the name " + in_quotes(full) + " is defined twice");
    const auto dot = full.rfind('.');
    const std::string inner_space = dot == std::string::npos ? std::string() : full.substr(0, dot);
    const std::size_t self = nodes_.size();
    nodes_.push_back(Node{.type = type, .name = full});  // first, so the type may refer to itself
    const std::string here = std::string(avro_short_name(full));
    if (type == Type::fixed) {
        const Value* size = json.find("size");
        if (size == nullptr || !is_integer(*size) || size->as_int64() < 0 ||
            size->as_int64() > std::numeric_limits<std::int32_t>::max())
            bad_schema(here, "a fixed needs a \"size\" of 0 or more");
        nodes_[self].size = static_cast<std::size_t>(size->as_int64());
    } else if (type == Type::enumeration) {
        const Value* symbols = json.find("symbols");
        if (symbols == nullptr || symbols->kind() != Value::Kind::array) bad_schema(here, "an enum needs \"symbols\"");
        for (const Value& symbol : symbols->as_array()) {
            if (symbol.kind() != Value::Kind::string) bad_schema(here, "enum symbols are strings");
            if (std::ranges::find(nodes_[self].symbols, symbol.as_string()) != nodes_[self].symbols.end())
                bad_schema(here, "the symbol " + in_quotes(symbol.as_string()) + " is listed twice");
            nodes_[self].symbols.push_back(symbol.as_string());
        }
    } else {
        const Value* fields = json.find("fields");
        if (fields == nullptr || fields->kind() != Value::Kind::array) bad_schema(here, "a record needs \"fields\"");
        for (const Value& field : fields->as_array()) {
            const Value* field_name = field.kind() == Value::Kind::map ? field.find("name") : nullptr;
            if (field_name == nullptr || field_name->kind() != Value::Kind::string)
                bad_schema(here, "every field needs a \"name\"");
            const std::string at = here + "." + field_name->as_string();
            for (const Field& before : nodes_[self].fields)
                if (before.name == field_name->as_string()) bad_schema(at, "the field is declared twice");
            const Value* field_type = field.find("type");
            if (field_type == nullptr) bad_schema(at, "the field has no \"type\"");
            const std::size_t child = parse(*field_type, inner_space, at);
            std::optional<Value> fallback;
            if (const Value* given = field.find("default")) fallback = default_of(child, *given, at);
            nodes_[self].fields.push_back(Field{field_name->as_string(), child, std::move(fallback)});
        }
    }
    return self;
}

Value AvroSchema::default_of(std::size_t index, const Value& json, const std::string& where) const {
    const Node& node = nodes_[index];
    const auto wrong = [&]() -> Value {
        bad_schema(where, "the default is " + a(kind_name(json.kind())) + ", which is not " + describe(node));
    };
    switch (node.type) {
    case Type::null: return json.is_null() ? Value() : wrong();
    case Type::boolean: return json.kind() == Value::Kind::boolean ? json : wrong();
    case Type::int32: return is_integer(json) && fits_int32(json.as_int64()) ? Value(json.as_int64()) : wrong();
    case Type::int64: return json.kind() == Value::Kind::int64 ? json : wrong();
    case Type::float32:
    case Type::float64:
        return is_integer(json) || json.kind() == Value::Kind::float64 ? Value(json.as_double()) : wrong();
    case Type::string: return json.kind() == Value::Kind::string ? json : wrong();
    case Type::bytes:
    case Type::fixed: {
        if (json.kind() != Value::Kind::string) return wrong();
        auto bytes = latin1_bytes(json.as_string());
        if (!bytes || (node.type == Type::fixed && bytes->size() != node.size)) return wrong();
        return Value(std::move(*bytes));
    }
    case Type::enumeration:
        return json.kind() == Value::Kind::string &&
                       std::ranges::find(node.symbols, json.as_string()) != node.symbols.end()
                   ? json
                   : wrong();
    case Type::array: {
        if (json.kind() != Value::Kind::array) return wrong();
        Value::Array items;
        for (const Value& item : json.as_array()) items.push_back(default_of(node.children[0], item, where));
        return Value(std::move(items));
    }
    case Type::map: {
        if (json.kind() != Value::Kind::map) return wrong();
        Value::Map entries;
        for (const auto& [key, value] : json.as_map())
            entries.emplace_back(key, default_of(node.children[0], value, where));
        return Value(std::move(entries));
    }
    case Type::record: {
        if (json.kind() != Value::Kind::map) return wrong();
        Value::Record fields;
        for (const Field& field : node.fields) {
            const std::string at = where + "." + field.name;
            if (const Value* given = json.find(field.name))
                fields.emplace_back(field.name, default_of(field.type, *given, at));
            else if (field.fallback)
                fields.emplace_back(field.name, *field.fallback);
            else
                bad_schema(at, "the default gives no value for this field, nor does its schema");
        }
        return Value(std::move(fields));
    }
    case Type::union_: return default_of(node.children[0], json, where);  // a union's default is its first branch's
    }
    return wrong();
}

// ---- encoding --------------------------------------------------------------------------

namespace {

// Whether `value` can be written as `node`: how a union picks its branch.
bool takes(const Node& node, const Value& value) {
    switch (value.kind()) {
    case Value::Kind::null: return node.type == Type::null;
    case Value::Kind::boolean: return node.type == Type::boolean;
    case Value::Kind::int64:
    case Value::Kind::uint64:
        return node.type == Type::int64 || node.type == Type::float32 || node.type == Type::float64 ||
               (node.type == Type::int32 && value.kind() == Value::Kind::int64 && fits_int32(value.as_int64()));
    case Value::Kind::float64: return node.type == Type::float32 || node.type == Type::float64;
    case Value::Kind::string:
        return node.type == Type::string || (node.type == Type::enumeration &&
                                             std::ranges::find(node.symbols, value.as_string()) != node.symbols.end());
    case Value::Kind::bytes:
        return node.type == Type::bytes || (node.type == Type::fixed && value.as_bytes().size() == node.size);
    case Value::Kind::array: return node.type == Type::array;
    case Value::Kind::map:
    case Value::Kind::record: return node.type == Type::record || node.type == Type::map;
    }
    return false;
}

class Encoder {
public:
    Encoder(const AvroSchema& schema, std::vector<std::byte>& out) : schema_(schema), out_(out) {}

    void write(std::size_t index, const Value& value, std::size_t depth) {
        const Node& node = schema_.node(index);
        if (depth > AvroLimits::max_depth)
            fail("nests deeper than " + std::to_string(AvroLimits::max_depth) + " records, arrays and maps");
        switch (node.type) {
        case Type::null:
            if (!value.is_null()) mismatch(node, value);
            return;
        case Type::boolean:
            if (value.kind() != Value::Kind::boolean) mismatch(node, value);
            out_.push_back(std::byte{value.as_bool() ? std::uint8_t{1} : std::uint8_t{0}});
            return;
        case Type::int32:
        case Type::int64: {
            if (!is_integer(value) ||
                (value.kind() == Value::Kind::uint64 && value.as_uint64() > std::numeric_limits<std::int64_t>::max()))
                mismatch(node, value);
            const std::int64_t i = value.as_int64();
            if (node.type == Type::int32 && !fits_int32(i))
                fail(std::to_string(i) + " does not fit an Avro int (32 bits); make the field a long");
            long_(i);
            return;
        }
        case Type::float32: {
            if (!is_integer(value) && value.kind() != Value::Kind::float64) mismatch(node, value);
            raw(std::bit_cast<std::uint32_t>(static_cast<float>(value.as_double())), 4);
            return;
        }
        case Type::float64:
            if (!is_integer(value) && value.kind() != Value::Kind::float64) mismatch(node, value);
            raw(std::bit_cast<std::uint64_t>(value.as_double()), 8);
            return;
        case Type::string: {
            if (value.kind() != Value::Kind::string) mismatch(node, value);
            const std::string& text = value.as_string();
            if (const auto bad = invalid_utf8_at(text))
                fail("the string is not valid UTF-8 (bad byte at offset " + std::to_string(*bad) +
                     "); carry binary data in a bytes field");
            bytes(std::as_bytes(std::span(text.data(), text.size())));
            return;
        }
        case Type::bytes:
            if (value.kind() != Value::Kind::bytes) mismatch(node, value);
            bytes(value.as_bytes());
            return;
        case Type::fixed:
            if (value.kind() != Value::Kind::bytes) mismatch(node, value);
            if (value.as_bytes().size() != node.size)
                fail(std::to_string(value.as_bytes().size()) + " bytes for " + describe(node) + " of " +
                     std::to_string(node.size));
            out_.insert(out_.end(), value.as_bytes().begin(), value.as_bytes().end());
            return;
        case Type::enumeration: {
            if (value.kind() != Value::Kind::string) mismatch(node, value);
            const auto found = std::ranges::find(node.symbols, value.as_string());
            if (found == node.symbols.end())
                fail(in_quotes(value.as_string()) + " is not a symbol of " + describe(node));
            long_(found - node.symbols.begin());
            return;
        }
        case Type::array: {
            if (value.kind() != Value::Kind::array) mismatch(node, value);
            const Value::Array& items = value.as_array();
            if (!items.empty()) long_(static_cast<std::int64_t>(items.size()));
            for (std::size_t i = 0; i < items.size(); ++i)
                along([i] { return "[" + std::to_string(i) + "]"; },
                      [&] { write(node.children[0], items[i], depth + 1); });
            long_(0);
            return;
        }
        case Type::map: return map(node, value, depth);
        case Type::record: return record(node, value, depth);
        case Type::union_: {
            for (std::size_t i = 0; i < node.children.size(); ++i)
                if (takes(schema_.node(node.children[i]), value)) {
                    long_(static_cast<std::int64_t>(i));
                    return write(node.children[i], value, depth);
                }
            std::string branches;
            for (const std::size_t child : node.children)
                branches += (branches.empty() ? "" : ", ") + std::string(type_word(schema_.node(child).type));
            fail("no branch of the union [" + branches + "] takes " + a(kind_name(value.kind())));
        }
        }
    }

private:
    void map(const Node& node, const Value& value, std::size_t depth) {
        const auto entry = [&](std::string_view key, const Value& mapped) {
            bytes(std::as_bytes(std::span(key.data(), key.size())));
            along([key] { return "[" + std::string(key) + "]"; }, [&] { write(node.children[0], mapped, depth + 1); });
        };
        if (value.kind() == Value::Kind::record) {
            if (!value.as_record().empty()) long_(static_cast<std::int64_t>(value.as_record().size()));
            for (const auto& [key, mapped] : value.as_record()) entry(key, mapped);
        } else if (value.kind() == Value::Kind::map) {
            if (!value.as_map().empty()) long_(static_cast<std::int64_t>(value.as_map().size()));
            for (const auto& [key, mapped] : value.as_map()) {
                if (key.kind() != Value::Kind::string)
                    fail("an Avro map's keys are strings, not " + a(kind_name(key.kind())));
                entry(key.as_string(), mapped);
            }
        } else {
            mismatch(node, value);
        }
        long_(0);
    }

    // Fields by name, in the schema's order, whatever order the value has them in.
    void record(const Node& node, const Value& value, std::size_t depth) {
        const auto field_of = [&](std::string_view name) -> const Value* {
            if (value.kind() == Value::Kind::record) {
                for (const auto& [key, field] : value.as_record())
                    if (key == name) return &field;
                return nullptr;
            }
            for (const auto& [key, field] : value.as_map())
                if (key.kind() == Value::Kind::string && key.as_string() == name) return &field;
            return nullptr;
        };
        if (value.kind() != Value::Kind::record && value.kind() != Value::Kind::map) mismatch(node, value);
        const std::size_t given =
            value.kind() == Value::Kind::record ? value.as_record().size() : value.as_map().size();
        std::size_t found = 0;
        for (const AvroSchema::Field& field : node.fields)
            along([&field] { return "." + field.name; },
                  [&] {
                      const Value* member = field_of(field.name);
                      if (member != nullptr)
                          ++found;
                      else if (!field.fallback)
                          fail("missing, and the schema gives it no default");
                      write(field.type, member != nullptr ? *member : *field.fallback, depth + 1);
                  });
        if (found != given) extra(node, value);
    }

    [[noreturn]] void extra(const Node& node, const Value& value) {
        const auto declared = [&](std::string_view key) {
            return std::ranges::any_of(node.fields, [&](const AvroSchema::Field& f) { return f.name == key; });
        };
        std::string key;
        if (value.kind() == Value::Kind::record) {
            for (const auto& [name, field] : value.as_record())
                if (!declared(name)) key = name;
        } else {
            for (const auto& [name, field] : value.as_map())
                if (name.kind() != Value::Kind::string || !declared(name.as_string()))
                    key = name.kind() == Value::Kind::string ? name.as_string() : std::string(kind_name(name.kind()));
        }
        std::string fields;
        for (const AvroSchema::Field& f : node.fields) fields += (fields.empty() ? "" : ", ") + f.name;
        fail("the schema of " + std::string(avro_short_name(node.name)) + " has no field " + in_quotes(key) +
             " (it has " + fields + "); add it to the schema, or rename it with acemq::field_keys");
    }

    void long_(std::int64_t i) {
        auto z = (static_cast<std::uint64_t>(i) << 1) ^ static_cast<std::uint64_t>(i >> 63);
        while (z >= 0x80) {
            out_.push_back(std::byte(static_cast<std::uint8_t>(z | 0x80)));
            z >>= 7;
        }
        out_.push_back(std::byte(static_cast<std::uint8_t>(z)));
    }
    void bytes(std::span<const std::byte> data) {
        long_(static_cast<std::int64_t>(data.size()));
        out_.insert(out_.end(), data.begin(), data.end());
    }
    void raw(std::uint64_t bits, int count) {
        for (int i = 0; i < count; ++i) out_.push_back(std::byte(static_cast<std::uint8_t>(bits >> (8 * i))));
    }

    [[noreturn]] void mismatch(const Node& node, const Value& value) {
        fail("expected " + describe(node) + ", found " + a(kind_name(value.kind())));
    }
    [[noreturn]] void fail(const std::string& what) { throw Trail{{}, what}; }

    const AvroSchema& schema_;
    std::vector<std::byte>& out_;
};

}  // namespace

void AvroSchema::encode(const Value& value, std::vector<std::byte>& body) const {
    try {
        Encoder(*this, body).write(root_, value, 0);
    } catch (const Trail& trail) {
        const std::string path = trail_path(root(), trail);
        throw EncodeError("acemq: " + (path.empty() ? std::string() : path + ": ") + trail.what);
    }
}

// ---- decoding --------------------------------------------------------------------------

namespace {

class Decoder {
public:
    Decoder(const AvroSchema& schema, std::span<const std::byte> body, std::size_t max_values)
        : schema_(schema), body_(body), budget_(max_values) {}

    Value read(std::size_t index, std::size_t depth) {
        const Node& node = schema_.node(index);
        switch (node.type) {
        case Type::null: return Value();
        case Type::boolean: {
            const auto b = std::to_integer<std::uint8_t>(take(1, "a boolean")[0]);
            if (b > 1) fail("a boolean byte of " + std::to_string(b) + " (0 or 1)");
            return Value(b == 1);
        }
        case Type::int32: {
            const std::int64_t i = long_("an int");
            if (!fits_int32(i)) fail("an int of " + std::to_string(i) + ", which does not fit 32 bits");
            return Value(i);
        }
        case Type::int64: return Value(long_("a long"));
        case Type::float32:
            return Value(static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(raw(4, "a float")))));
        case Type::float64: return Value(std::bit_cast<double>(raw(8, "a double")));
        case Type::string: {
            const auto data = take(length("a string"), "a string");
            std::string text(reinterpret_cast<const char*>(data.data()), data.size());
            if (const auto bad = invalid_utf8_at(text))
                fail("a string that is not valid UTF-8 (bad byte at offset " + std::to_string(*bad) + " of it)");
            return Value(std::move(text));
        }
        case Type::bytes: {
            const auto data = take(length("bytes"), "bytes");
            return Value(Value::Bytes(data.begin(), data.end()));
        }
        case Type::fixed: {
            const auto data = take(node.size, describe(node));
            return Value(Value::Bytes(data.begin(), data.end()));
        }
        case Type::enumeration: {
            const std::int64_t i = long_("an enum index");
            if (i < 0 || static_cast<std::uint64_t>(i) >= node.symbols.size())
                fail("the enum index " + std::to_string(i) + ", but " + describe(node) + " has " +
                     std::to_string(node.symbols.size()) + " symbols");
            return Value(node.symbols[static_cast<std::size_t>(i)]);
        }
        case Type::array: {
            deeper(depth);
            Value::Array items;
            blocks("an array", [&](std::size_t count) {
                items.reserve(items.size() + std::min(count, left()));
                for (std::size_t i = 0; i < count; ++i) items.push_back(read(node.children[0], depth + 1));
            });
            return Value(std::move(items));
        }
        case Type::map: {
            deeper(depth);
            Value::Map entries;
            blocks("a map", [&](std::size_t count) {
                entries.reserve(entries.size() + std::min(count, left()));
                for (std::size_t i = 0; i < count; ++i) {
                    Value key = read_string_key();
                    entries.emplace_back(std::move(key), read(node.children[0], depth + 1));
                }
            });
            return Value(std::move(entries));
        }
        case Type::record: {
            deeper(depth);
            Value::Record fields;
            fields.reserve(node.fields.size());
            for (const AvroSchema::Field& field : node.fields)
                along([&field] { return "." + field.name; },
                      [&] { fields.emplace_back(field.name, read(field.type, depth + 1)); });
            return Value(std::move(fields));
        }
        case Type::union_: {
            const std::int64_t i = long_("a union index");
            if (i < 0 || static_cast<std::uint64_t>(i) >= node.children.size())
                fail("the union index " + std::to_string(i) + ", but the union has " +
                     std::to_string(node.children.size()) + " branches");
            return read(node.children[static_cast<std::size_t>(i)], depth);
        }
        }
        fail("an unknown schema node");
    }

    void finish() const {
        if (at_ != body_.size())
            fail(std::to_string(body_.size() - at_) +
                 " bytes left over after the value (a body written with another schema?)");
    }

private:
    std::size_t left() const noexcept { return body_.size() - at_; }

    void deeper(std::size_t depth) const {
        if (depth >= AvroLimits::max_depth)
            fail("records, arrays and maps nested deeper than " + std::to_string(AvroLimits::max_depth));
    }

    // Avro's blocks: a count, its items, ...; a count of 0 ends. A negative count is followed
    // by the block's size in bytes (for skipping), which must be within the body.
    template <class Items>
    void blocks(std::string_view what, Items items) {
        for (;;) {
            std::int64_t count = long_(what == "an array" ? "an array block count" : "a map block count");
            if (count == 0) return;
            if (count < 0) {
                if (count == std::numeric_limits<std::int64_t>::min())
                    fail("a block count of " + std::to_string(count));
                count = -count;
                length("a block size");
            }
            if (static_cast<std::uint64_t>(count) > budget_)
                fail(std::string(what) + " block of " + std::to_string(count) + " items, more than the " +
                     std::to_string(budget_) + " values left of the codec's max_values");
            budget_ -= static_cast<std::size_t>(count);
            items(static_cast<std::size_t>(count));
        }
    }

    Value read_string_key() {
        const auto data = take(length("a map key"), "a map key");
        std::string text(reinterpret_cast<const char*>(data.data()), data.size());
        if (const auto bad = invalid_utf8_at(text))
            fail("a map key that is not valid UTF-8 (bad byte at offset " + std::to_string(*bad) + " of it)");
        return Value(std::move(text));
    }

    std::int64_t long_(std::string_view what) {
        std::uint64_t z = 0;
        for (int shift = 0; shift < 70; shift += 7) {
            if (at_ == body_.size()) fail("the body ends inside " + std::string(what));
            const auto b = std::to_integer<std::uint8_t>(body_[at_++]);
            if (shift == 63 && b > 1) fail(std::string(what) + " that overflows 64 bits");
            z |= static_cast<std::uint64_t>(b & 0x7F) << shift;
            if ((b & 0x80) == 0) return static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
        }
        fail(std::string(what) + " longer than 10 bytes");
    }

    // A length, checked against the bytes left before anything is allocated for it.
    std::size_t length(std::string_view what) {
        const std::size_t start = at_;
        const std::int64_t n = long_(what);
        if (n < 0) fail_at(start, "a negative length (" + std::to_string(n) + ") of " + std::string(what));
        if (static_cast<std::uint64_t>(n) > left())
            fail_at(start, "a length of " + std::to_string(n) + " for " + std::string(what) + ", but only " +
                               std::to_string(left()) + " bytes are left (a truncated body?)");
        return static_cast<std::size_t>(n);
    }

    std::span<const std::byte> take(std::size_t n, std::string_view what) {
        if (n > left()) fail("the body ends inside " + std::string(what));
        const auto data = body_.subspan(at_, n);
        at_ += n;
        return data;
    }

    std::uint64_t raw(std::size_t n, std::string_view what) {
        const auto data = take(n, what);
        std::uint64_t bits = 0;
        for (std::size_t i = 0; i < n; ++i)
            bits |= static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(data[i])) << (8 * i);
        return bits;
    }

    [[noreturn]] void fail(const std::string& what) const { fail_at(at_, what); }
    [[noreturn]] void fail_at(std::size_t at, const std::string& what) const {
        throw Trail{{}, what + " at byte " + std::to_string(at)};
    }

    const AvroSchema& schema_;
    std::span<const std::byte> body_;
    std::size_t at_ = 0;
    std::size_t budget_;
};

}  // namespace

Value AvroSchema::decode(std::span<const std::byte> body, std::size_t max_values) const {
    try {
        Decoder decoder(*this, body, max_values);
        Value value = decoder.read(root_, 0);
        decoder.finish();
        return value;
    } catch (const Trail& trail) {
        throw DecodeError("acemq: the Avro body has " + trail.what +
                          (trail.path.empty() ? std::string() : " (in " + trail_path(root(), trail) + ")"));
    }
}

// ---- resolution ------------------------------------------------------------------------

namespace {

class Resolver {
public:
    Resolver(const AvroSchema& writer, const AvroSchema& reader) : writer_(writer), reader_(reader) {}

    Value resolve(std::size_t w, std::size_t r, const Value& value) {
        const Node& wn = writer_.node(w);
        const Node& rn = reader_.node(r);
        if (wn.type == Type::union_) {
            // The branch the writer took is the one that holds this value's kind.
            for (const std::size_t branch : wn.children)
                if (takes(writer_.node(branch), value)) return resolve(branch, r, value);
            fail("the writer's union has no branch for " + a(kind_name(value.kind())));
        }
        if (rn.type == Type::union_) {
            for (const std::size_t branch : rn.children)
                if (matches(wn, reader_.node(branch))) return resolve(w, branch, value);
            fail("the writer's " + std::string(type_word(wn.type)) + " matches no branch of the reader's union");
        }
        if (!matches(wn, rn))
            fail("the writer wrote " + describe(wn) + " where the reader's schema has " + describe(rn));
        switch (rn.type) {
        case Type::int64:
        case Type::int32: return value;
        case Type::float32:
        case Type::float64: return Value(value.as_double());
        case Type::string:
            if (wn.type == Type::bytes) {
                const auto& data = value.as_bytes();
                std::string text(reinterpret_cast<const char*>(data.data()), data.size());
                if (invalid_utf8_at(text)) fail("the writer's bytes are not UTF-8, which the reader's string needs");
                return Value(std::move(text));
            }
            return value;
        case Type::bytes:
            if (wn.type == Type::string) {
                const auto& text = value.as_string();
                const auto data = std::as_bytes(std::span(text.data(), text.size()));
                return Value(Value::Bytes(data.begin(), data.end()));
            }
            return value;
        case Type::enumeration:
            if (std::ranges::find(rn.symbols, value.as_string()) == rn.symbols.end())
                fail("the writer's symbol " + in_quotes(value.as_string()) + " is not one of the reader's " +
                     describe(rn));
            return value;
        case Type::array: {
            Value::Array items;
            items.reserve(value.as_array().size());
            for (const Value& item : value.as_array()) items.push_back(resolve(wn.children[0], rn.children[0], item));
            return Value(std::move(items));
        }
        case Type::map: {
            Value::Map entries;
            entries.reserve(value.as_map().size());
            for (const auto& [key, mapped] : value.as_map())
                entries.emplace_back(key, resolve(wn.children[0], rn.children[0], mapped));
            return Value(std::move(entries));
        }
        case Type::record: return record(wn, rn, value);
        default: return value;
        }
    }

private:
    // Avro's rules: the same type (named ones by unqualified name, fixed of one size), or a
    // promotion (int to long, float or double; long to float or double; float to double;
    // string and bytes either way).
    static bool matches(const Node& w, const Node& r) {
        if (w.type == r.type) {
            if (!r.name.empty() && avro_short_name(w.name) != avro_short_name(r.name)) return false;
            return r.type != Type::fixed || w.size == r.size;
        }
        switch (w.type) {
        case Type::int32: return r.type == Type::int64 || r.type == Type::float32 || r.type == Type::float64;
        case Type::int64: return r.type == Type::float32 || r.type == Type::float64;
        case Type::float32: return r.type == Type::float64;
        case Type::string: return r.type == Type::bytes;
        case Type::bytes: return r.type == Type::string;
        default: return false;
        }
    }

    Value record(const Node& wn, const Node& rn, const Value& value) {
        const Value::Record& written = value.as_record();
        Value::Record fields;
        fields.reserve(rn.fields.size());
        const std::size_t mark = path_.size();
        if (path_.empty()) path_ = avro_short_name(rn.name);
        for (const AvroSchema::Field& field : rn.fields) {
            const std::size_t inner = path_.size();
            path_ += "." + field.name;
            const auto w = std::ranges::find(wn.fields, field.name, &AvroSchema::Field::name);
            if (w != wn.fields.end()) {
                fields.emplace_back(
                    field.name,
                    resolve(w->type, field.type, written[static_cast<std::size_t>(w - wn.fields.begin())].second));
            } else if (field.fallback) {
                fields.emplace_back(field.name, *field.fallback);
            } else {
                fail("the writer's schema has no such field and the reader's gives it no default");
            }
            path_.resize(inner);
        }
        path_.resize(mark);
        return Value(std::move(fields));
    }

    [[noreturn]] void fail(const std::string& what) const {
        throw DecodeError("acemq: the writer's Avro schema does not resolve onto the reader's: " +
                          (path_.empty() ? std::string() : path_ + ": ") + what);
    }

    const AvroSchema& writer_;
    const AvroSchema& reader_;
    std::string path_;
};

}  // namespace

Value AvroSchema::resolve(const Value& value, const AvroSchema& reader) const {
    return Resolver(*this, reader).resolve(root_, reader.root_, value);
}

}  // namespace acemq::detail
