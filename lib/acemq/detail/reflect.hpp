// Internal: how reflect.hpp's write_value, to_value and from_value are done (Boost.PFR for
// aggregates, one overload set per kind of type). Included by <acemq/reflect.hpp>; do not
// include it yourself, nothing in it is API.
#pragma once

#include <array>
#include <boost/pfr.hpp>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include <acemq/reflect.hpp>

namespace acemq {

namespace detail {

// ---- type names for error messages -------------------------------------------------

template <class T>
std::string type_name() {
    if constexpr (std::is_same_v<T, bool>)
        return "bool";
    else if constexpr (std::is_same_v<T, char>)
        return "char";
    else if constexpr (std::is_integral_v<T>)
        return std::string(std::is_signed_v<T> ? "int" : "uint") + std::to_string(sizeof(T) * 8) + "_t";
    else if constexpr (std::is_same_v<T, std::string>)
        return "std::string";
    else if constexpr (std::is_same_v<T, Value>)
        return "acemq::Value";
    else
        return demangle(typeid(T).name());
}

// ---- where in the value a problem is ------------------------------------------------

// A chain of stack frames, one per step into the value, turned into text such as
// "Order.items[2].sku" only when an error needs it, so the happy path allocates nothing.
struct Path {
    enum class Step { root, field, index, key };
    Step step;
    const Path* parent;
    std::string_view name;  // the root type or a field name
    std::size_t index;      // an array element
    const Value* key;       // a map entry
};

[[noreturn]] void throw_decode_error(const Path& where, std::string_view problem);
[[noreturn]] void throw_wrong_kind(const Path& where, std::string_view wanted, std::string_view cpp_type,
                                   Value::Kind found);
// A map key from the body that does not read as the C++ key type; `key` is shown escaped.
[[noreturn]] void throw_bad_key(const Path& where, std::string_view key, std::string_view cpp_type);
// Scalars::text: the whole of `text` as the scalar `cpp_type` asks for, by the rules in
// reflect.hpp, or a DecodeError naming the text (shown escaped) and what it should have been.
std::int64_t int64_from_text(std::string_view text, const Path& where, std::string_view cpp_type);
std::uint64_t uint64_from_text(std::string_view text, const Path& where, std::string_view cpp_type);
double double_from_text(std::string_view text, const Path& where, std::string_view cpp_type);
bool bool_from_text(std::string_view text, const Path& where);

// ---- field names of aggregates --------------------------------------------------------

// PFR 1.81 has no field names, but g++ and clang++ spell out a constant template argument
// in __PRETTY_FUNCTION__: a pointer to a field of an object, wrapped in a struct (clang++
// prints a bare pointer to a subobject only as an offset), reads "[with auto Probe =
// field_pointer<int>{((const int*)(& field_name_object<P>.field_name_probe<P>::value.
// P::amount_cents))}; ...]" under g++ and "[Probe = {&field_name_object.value.amount_cents}]"
// under clang++. The object is only named, never defined or read, so this is pure compile
// time; clang++ warns about such a variable unless told it is meant.
template <class T>
struct field_name_probe {
    const T value;
};
template <class T>
extern const field_name_probe<T> field_name_object;
template <class F>
struct field_pointer {
    const F* pointer;
};

template <auto Probe>
consteval std::string_view pretty_function_of() {
    return __PRETTY_FUNCTION__;
}

consteval std::string_view last_identifier_of_argument(std::string_view pretty) {
    const auto start = pretty.find("Probe = ");
    if (start == std::string_view::npos) return {};
    auto end = pretty.find(';', start);
    if (end == std::string_view::npos) end = pretty.find(']', start);
    if (end == std::string_view::npos) return {};
    while (end > start && (pretty[end - 1] == ')' || pretty[end - 1] == '}')) --end;
    auto begin = end;
    const auto identifier_char = [](char c) {
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    while (begin > start && identifier_char(pretty[begin - 1])) --begin;
    const bool member_of_probe =
        (begin >= start + 2 && pretty.substr(begin - 2, 2) == "::") || (begin >= start + 1 && pretty[begin - 1] == '.');
    if (!member_of_probe || begin == end) return {};
    return pretty.substr(begin, end - begin);
}

#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wundefined-var-template"
#endif
template <class T, std::size_t I>
consteval std::string_view field_name() {
    using Field = std::remove_cvref_t<boost::pfr::tuple_element_t<I, T>>;
    constexpr std::string_view name =
        last_identifier_of_argument(pretty_function_of<field_pointer<Field>{
                                        &std::get<I>(boost::pfr::structure_tie(field_name_object<T>.value))}>());
    static_assert(!name.empty(),
                  "acemq: could not read a field name of this struct from the compiler; "
                  "this technique needs g++ 12, clang++ 14 or a compatible __PRETTY_FUNCTION__");
    return name;
}
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

template <class T>
inline constexpr auto field_names = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<std::string_view, sizeof...(I)>{field_name<T, I>()...};
}(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});

// ---- the keys of a struct's fields -----------------------------------------------------

// A struct's field keys under one FieldNames policy, worked out by the compiler.
template <std::size_t N>
struct RecordKeys {
    std::array<std::string_view, N> key;       // written, and looked up first
    std::array<std::string_view, N> fallback;  // looked up when `key` is absent; empty: none
    std::size_t clash = N;                     // < N: fields clash and clash_with share a key
    std::size_t clash_with = N;
};

// The key field_keys<T> gives the field, or empty.
template <class T>
constexpr std::string_view renamed_key(std::string_view field) {
    for (const FieldKey& rename : field_keys<T>::renamed)
        if (rename.field == field) return rename.key;
    return {};
}

template <class T>
consteval bool renames_are_valid() {
    const auto& fields = field_names<T>;
    for (const FieldKey& rename : field_keys<T>::renamed) {
        std::size_t named = 0;
        for (const std::string_view field : fields) named += field == rename.field ? 1 : 0;
        std::size_t renamed = 0;
        for (const FieldKey& other : field_keys<T>::renamed) renamed += other.field == rename.field ? 1 : 0;
        if (named != 1 || renamed != 1 || rename.key.empty()) return false;
    }
    return true;
}

// The camelCase keys of T's fields that are not renamed, one after another: the storage
// camel_case_keys<T> points into.
template <class T>
inline constexpr auto camel_case_text = [] {
    constexpr std::size_t size = [] {
        std::size_t chars = 0;
        for (const std::string_view field : field_names<T>)
            if (renamed_key<T>(field).empty()) put_camel_case(field, [&chars](char) { ++chars; });
        return chars;
    }();
    std::array<char, size> text{};
    std::size_t at = 0;
    for (const std::string_view field : field_names<T>)
        if (renamed_key<T>(field).empty()) put_camel_case(field, [&](char c) { text[at++] = c; });
    return text;
}();

template <class T>
constexpr auto make_record_keys(FieldNames names) {
    static_assert(renames_are_valid<T>(),
                  "acemq: acemq::field_keys<T>::renamed must name fields of T, each once, each "
                  "with a key that is not empty");
    constexpr std::size_t n = boost::pfr::tuple_size_v<T>;
    const auto& fields = field_names<T>;
    RecordKeys<n> keys{};
    std::size_t camel_at = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::string_view renamed = renamed_key<T>(fields[i]);
        keys.key[i] = renamed.empty() ? fields[i] : renamed;
        if (names != FieldNames::camel_case || !renamed.empty()) continue;
        std::size_t size = 0;
        put_camel_case(fields[i], [&size](char) { ++size; });
        keys.key[i] = std::string_view(camel_case_text<T>.data() + camel_at, size);
        camel_at += size;
        if (keys.key[i] != fields[i]) keys.fallback[i] = fields[i];
    }
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            // A fallback that is another field's key would read that field's value twice.
            if (keys.fallback[i] == keys.key[j]) keys.fallback[i] = {};
            if (i < j && keys.key[i] == keys.key[j] && keys.clash == n) {
                keys.clash = i;
                keys.clash_with = j;
            }
        }
    }
    return keys;
}

template <class T>
inline constexpr auto as_is_keys = make_record_keys<T>(FieldNames::as_is);
template <class T>
inline constexpr auto camel_case_keys = make_record_keys<T>(FieldNames::camel_case);

std::string key_clash_message(std::string_view type, FieldNames names, std::string_view first, std::string_view second,
                              std::string_view key);

// T's keys under `names`; throws Refusal (EncodeError or DecodeError) when two fields share one.
template <class T, class Refusal>
const auto& record_keys(FieldNames names) {
    const auto& keys = names == FieldNames::camel_case ? camel_case_keys<T> : as_is_keys<T>;
    if (keys.clash < keys.key.size())
        throw Refusal(key_clash_message(type_name<T>(), names, field_names<T>[keys.clash],
                                        field_names<T>[keys.clash_with], keys.key[keys.clash]));
    return keys;
}

// ---- classification -------------------------------------------------------------------

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_std_map : std::false_type {};
template <class K, class V, class C, class A>
struct is_std_map<std::map<K, V, C, A>> : std::true_type {};

template <class T>
inline constexpr bool is_reflected_struct = std::is_class_v<T> && std::is_aggregate_v<T> && !is_std_array<T>::value;

template <class T>
inline constexpr bool has_value_form = requires { sizeof(value_form<T>); };

template <class T>
inline constexpr bool unsupported = false;

// Stops the build on a type write and decode cannot carry, with the list of those they can.
template <class T>
void refuse_unsupported() {
    static_assert(unsupported<T>,
                  "acemq: this type has no Value form. Use bool, integers, enums, float, "
                  "double, std::string, std::vector, std::array, std::optional, std::map, "
                  "acemq::Value, or an aggregate struct (no constructors, public fields) "
                  "made of those.");
}

// ---- encoding ------------------------------------------------------------------------

// The one mapping of C++ types to value events; to_value and every codec go through it.
template <class T>
void write(const T& v, ValueWriter& out) {
    if constexpr (std::is_same_v<T, Value>) {
        v.write_to(out);
    } else if constexpr (has_value_form<T>) {
        value_form<T>::write(v, out);
    } else if constexpr (std::is_same_v<T, bool>) {
        out.boolean(v);
    } else if constexpr (std::is_integral_v<T>) {
        if constexpr (std::is_signed_v<T>)
            out.int64(static_cast<std::int64_t>(v));
        else
            out.uint64(static_cast<std::uint64_t>(v));
    } else if constexpr (std::is_enum_v<T>) {
        write(static_cast<std::underlying_type_t<T>>(v), out);
    } else if constexpr (std::is_floating_point_v<T>) {
        out.float64(static_cast<double>(v));
    } else if constexpr (std::is_same_v<T, std::string>) {
        out.string(v);
    } else if constexpr (std::is_same_v<T, Value::Bytes>) {
        out.bytes(v);
    } else if constexpr (is_vector<T>::value || is_std_array<T>::value) {
        out.begin_array(v.size());
        for (const auto& element : v) write(element, out);
        out.end_array();
    } else if constexpr (is_optional<T>::value) {
        if (v)
            write(*v, out);
        else
            out.null();
    } else if constexpr (is_std_map<T>::value) {
        out.begin_map(v.size());
        for (const auto& [key, element] : v) {
            write(key, out);
            write(element, out);
        }
        out.end_map();
    } else if constexpr (is_reflected_struct<T>) {
        const auto& keys = record_keys<T, EncodeError>(out.field_names());
        out.begin_record(boost::pfr::tuple_size_v<T>);
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            ((out.field(keys.key[I]), write(boost::pfr::get<I>(v), out)), ...);
        }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
        out.end_record();
    } else {
        refuse_unsupported<T>();
    }
}

// ---- decoding -------------------------------------------------------------------------

// How the value being decoded was written: the spelling of its keys, and its scalars'.
struct Reading {
    FieldNames names;
    Scalars scalars;

    bool text(const Value& v) const { return scalars == Scalars::text && v.kind() == Value::Kind::string; }
    bool empty_text(const Value& v) const { return text(v) && v.as_string().empty(); }
};

template <class T>
T decode(const Value& v, const Path& at, Reading how);

// `number` as a T, or the error saying it does not fit.
template <class T, class Number>
T checked_integer(Number number, const Path& at) {
    using limits = std::numeric_limits<T>;
    if (std::in_range<T>(number)) return static_cast<T>(number);
    throw_decode_error(at, std::to_string(number) + " does not fit in " + type_name<T>() + " (" +
                               std::to_string(limits::min()) + ".." + std::to_string(limits::max()) + ")");
}

template <class T>
T checked_float(double d, const Path& at) {
    if (std::isfinite(d) && std::abs(d) > static_cast<double>(std::numeric_limits<T>::max()))
        throw_decode_error(at, std::to_string(d) + " does not fit in " + type_name<T>());
    return static_cast<T>(d);
}

inline Value::Bytes bytes_from_base64(std::string_view text, const Path& at) {
    auto bytes = base64_decode(text);
    if (!bytes) throw_decode_error(at, "expected bytes, found a string that is not base64");
    return std::move(*bytes);
}

template <class T>
[[noreturn]] void throw_wrong_field_count(const Path& at, std::size_t found) {
    throw_decode_error(at, "expected " + std::to_string(boost::pfr::tuple_size_v<T>) + " fields for " + type_name<T>() +
                               ", found an array of " + std::to_string(found));
}

template <class T>
void check_element_count(const Path& at, std::size_t found) {
    if (found != std::tuple_size_v<T>)
        throw_decode_error(
            at, "expected " + std::to_string(std::tuple_size_v<T>) + " elements, found " + std::to_string(found));
}

template <class T>
T decode_integer(const Value& v, const Path& at, Reading how) {
    if (v.kind() == Value::Kind::int64) return checked_integer<T>(v.as_int64(), at);
    if (v.kind() == Value::Kind::uint64) return checked_integer<T>(v.as_uint64(), at);
    if (how.text(v)) {
        if constexpr (std::is_signed_v<T>)
            return checked_integer<T>(int64_from_text(v.as_string(), at, type_name<T>()), at);
        else
            return checked_integer<T>(uint64_from_text(v.as_string(), at, type_name<T>()), at);
    }
    throw_wrong_kind(at, "an integer", type_name<T>(), v.kind());
}

// JSON object keys are text; an integer-keyed std::map travels with decimal keys.
template <class K>
K decode_map_key(const Value& key, const Path& at, Reading how) {
    if constexpr (std::is_integral_v<K> && !std::is_same_v<K, bool>) {
        if (key.kind() == Value::Kind::string) {
            const std::string& text = key.as_string();
            K number{};
            const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), number);
            if (err != std::errc() || end != text.data() + text.size() || text.empty())
                throw_bad_key(at, text, type_name<K>());
            return number;
        }
    }
    return decode<K>(key, at, how);
}

template <class T>
[[noreturn]] void throw_missing_field(const Path& at, std::string_view key, std::string_view name) {
    const std::string cpp_name = key == name ? "" : std::string(name) + " in C++; ";
    throw_decode_error(at, "the " + type_name<T>() + " has no field \"" + std::string(key) + "\" (" + cpp_name +
                               "send it, or declare the field std::optional)");
}

// `keys` is null when `v` is an array: its fields are read by position.
template <class T, std::size_t I, class Keys>
auto decode_field(const Value& v, const Path& at, Reading how, const Keys* keys) {
    using Field = boost::pfr::tuple_element_t<I, T>;
    constexpr std::string_view name = field_names<T>[I];
    const Path here{Path::Step::field, &at, name, 0, nullptr};
    if (keys == nullptr) return decode<Field>(v.as_array()[I], here, how);
    const std::string_view key = keys->key[I];
    const Value* field = v.find(key);
    if (field == nullptr && !keys->fallback[I].empty()) field = v.find(keys->fallback[I]);
    if (field != nullptr) return decode<Field>(*field, here, how);
    // A list of none has no element to write in XML (Scalars::text): its absence is the list.
    constexpr bool list = is_vector<Field>::value && !std::is_same_v<Field, Value::Bytes>;
    if constexpr (is_optional<Field>::value) {
        return Field{};
    } else {
        if constexpr (list)
            if (how.scalars == Scalars::text) return Field{};
        throw_missing_field<T>(at, key, name);
    }
}

template <class T>
T decode_struct(const Value& v, const Path& at, Reading how) {
    constexpr std::size_t fields = boost::pfr::tuple_size_v<T>;
    if (how.empty_text(v)) return decode_struct<T>(Value(Value::Map{}), at, how);
    const decltype(as_is_keys<T>)* keys = nullptr;
    switch (v.kind()) {
    case Value::Kind::record:
    case Value::Kind::map: keys = &record_keys<T, DecodeError>(how.names); break;
    case Value::Kind::array:
        if (v.as_array().size() != fields) throw_wrong_field_count<T>(at, v.as_array().size());
        break;
    default: throw_wrong_kind(at, "a record, map or array", type_name<T>(), v.kind());
    }
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return T{decode_field<T, I>(v, at, how, keys)...};
    }(std::make_index_sequence<fields>{});
}

template <class T>
T decode(const Value& v, const Path& at, Reading how) {
    if constexpr (std::is_same_v<T, Value>) {
        return v;
    } else if constexpr (has_value_form<T>) {
        return value_form<T>::read(v);
    } else if constexpr (std::is_same_v<T, bool>) {
        if (how.text(v)) return bool_from_text(v.as_string(), at);
        if (v.kind() != Value::Kind::boolean) throw_wrong_kind(at, "a bool", "bool", v.kind());
        return v.as_bool();
    } else if constexpr (std::is_integral_v<T>) {
        return decode_integer<T>(v, at, how);
    } else if constexpr (std::is_enum_v<T>) {
        return static_cast<T>(decode_integer<std::underlying_type_t<T>>(v, at, how));
    } else if constexpr (std::is_floating_point_v<T>) {
        if (how.text(v)) return checked_float<T>(double_from_text(v.as_string(), at, type_name<T>()), at);
        const auto k = v.kind();
        if (k != Value::Kind::float64 && k != Value::Kind::int64 && k != Value::Kind::uint64)
            throw_wrong_kind(at, "a number", type_name<T>(), v.kind());
        return checked_float<T>(v.as_double(), at);
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (v.kind() != Value::Kind::string) throw_wrong_kind(at, "a string", "std::string", v.kind());
        return v.as_string();
    } else if constexpr (std::is_same_v<T, Value::Bytes>) {
        if (v.kind() == Value::Kind::bytes) return v.as_bytes();
        if (v.kind() != Value::Kind::string) throw_wrong_kind(at, "bytes", "bytes", v.kind());
        return bytes_from_base64(v.as_string(), at);
    } else if constexpr (is_vector<T>::value || is_std_array<T>::value) {
        // Scalars::text: one element of a repeated entry comes as itself, a list of one.
        const bool single = how.scalars == Scalars::text && v.kind() != Value::Kind::array;
        if (!single && v.kind() != Value::Kind::array) throw_wrong_kind(at, "an array", type_name<T>(), v.kind());
        const std::span<const Value> elements = single ? std::span<const Value>(&v, 1) : std::span(v.as_array());
        using Element = typename T::value_type;
        const auto element_at = [&](std::size_t i) {
            return decode<Element>(elements[i], Path{Path::Step::index, &at, {}, i, nullptr}, how);
        };
        if constexpr (is_vector<T>::value) {
            T out;
            out.reserve(elements.size());
            for (std::size_t i = 0; i < elements.size(); ++i) out.push_back(element_at(i));
            return out;
        } else {
            check_element_count<T>(at, elements.size());
            return [&]<std::size_t... I>(std::index_sequence<I...>) {
                return T{element_at(I)...};
            }(std::make_index_sequence<std::tuple_size_v<T>>{});
        }
    } else if constexpr (is_optional<T>::value) {
        if (v.is_null() || how.empty_text(v)) return T{};
        return T{decode<typename T::value_type>(v, at, how)};
    } else if constexpr (is_std_map<T>::value) {
        T out;
        if (how.empty_text(v)) return out;
        const auto add = [&](const Value& key, const Value& element) {
            const Path here{Path::Step::key, &at, {}, 0, &key};
            // The first of duplicate keys wins, as Value::find and struct fields do.
            out.try_emplace(decode_map_key<typename T::key_type>(key, here, how),
                            decode<typename T::mapped_type>(element, here, how));
        };
        if (v.kind() == Value::Kind::map) {
            for (const auto& [key, element] : v.as_map()) add(key, element);
        } else if (v.kind() == Value::Kind::record) {
            for (const auto& [name, element] : v.as_record()) add(Value(name), element);
        } else {
            throw_wrong_kind(at, "a map", type_name<T>(), v.kind());
        }
        return out;
    } else if constexpr (is_reflected_struct<T>) {
        return decode_struct<T>(v, at, how);
    } else {
        refuse_unsupported<T>();
    }
}

// ---- reading from a ValueReader -------------------------------------------------------

template <class T>
T read(ValueReader& in, const Path& at);

// A struct sent as a map (JSON's objects), field by field as the keys come, by decode_field's
// rules: a field's key wins over its fallback, the first of duplicate keys wins, keys that
// name no field (or are not strings) are skipped, a missing field is an error unless
// std::optional. Where a body has several faults this meets them in the body's order;
// decode<T> (codec.hpp) then re-reads through decode() for the message naming the first in
// declaration order.
template <class T>
T read_keyed_struct(ValueReader& in, const Path& at) {
    constexpr std::size_t fields = boost::pfr::tuple_size_v<T>;
    const auto& keys = record_keys<T, DecodeError>(in.field_names());
    auto slots = []<std::size_t... I>(std::index_sequence<I...>) {
        return std::tuple<std::optional<boost::pfr::tuple_element_t<I, T>>...>{};
    }(std::make_index_sequence<fields>{});
    std::array<bool, fields> by_key{};  // read under its own key, which nothing replaces
    const auto read_into = [&]<std::size_t... I>(std::size_t field, std::index_sequence<I...>) {
        ((I == field ? void(std::get<I>(slots).emplace(read<boost::pfr::tuple_element_t<I, T>>(
                           in, Path{Path::Step::field, &at, field_names<T>[I], 0, nullptr})))
                     : void()),
         ...);
    };
    const auto filled = [&]<std::size_t... I>(std::size_t field, std::index_sequence<I...>) {
        return ((I == field && std::get<I>(slots).has_value()) || ...);
    };
    const std::size_t pairs = in.map();
    for (std::size_t pair = 0; pair < pairs; ++pair) {
        std::size_t field = fields;
        bool primary = false;
        if (in.next() == Value::Kind::string) {
            const std::string_view key = in.string();
            for (std::size_t i = 0; i < fields && field == fields; ++i) {
                if (key == keys.key[i]) {
                    field = i;
                    primary = true;
                } else if (!keys.fallback[i].empty() && key == keys.fallback[i]) {
                    field = i;
                }
            }
        } else {
            in.value();
        }
        if (field == fields || by_key[field] || (!primary && filled(field, std::make_index_sequence<fields>{}))) {
            in.value();
            continue;
        }
        read_into(field, std::make_index_sequence<fields>{});
        by_key[field] = primary;
    }
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        const auto take = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
            using Field = boost::pfr::tuple_element_t<K, T>;
            auto& slot = std::get<K>(slots);
            if (slot) return Field(std::move(*slot));
            if constexpr (is_optional<Field>::value) {
                return Field{};
            } else {
                throw_missing_field<T>(at, keys.key[K], field_names<T>[K]);
            }
        };
        return T{take(std::integral_constant<std::size_t, I>{})...};
    }(std::make_index_sequence<fields>{});
}

// The same rules as decode() above, pulled from a reader: what decode() takes from a Value
// kind, this takes from the reader's next() kind. A std::map and an acemq::Value are read
// whole as a Value and handed to decode(), so their keyed rules have one implementation.
template <class T>
T read(ValueReader& in, const Path& at) {
    if constexpr (std::is_same_v<T, Value>) {
        return in.value();
    } else if constexpr (has_value_form<T> || is_std_map<T>::value) {
        return decode<T>(in.value(), at, Reading{in.field_names(), Scalars::typed});
    } else {
        const Value::Kind kind = in.next();
        if constexpr (std::is_same_v<T, bool>) {
            if (kind != Value::Kind::boolean) throw_wrong_kind(at, "a bool", "bool", kind);
            return in.boolean();
        } else if constexpr (std::is_integral_v<T>) {
            if (kind == Value::Kind::int64) return checked_integer<T>(in.int64(), at);
            if (kind == Value::Kind::uint64) return checked_integer<T>(in.uint64(), at);
            throw_wrong_kind(at, "an integer", type_name<T>(), kind);
        } else if constexpr (std::is_enum_v<T>) {
            return static_cast<T>(read<std::underlying_type_t<T>>(in, at));
        } else if constexpr (std::is_floating_point_v<T>) {
            switch (kind) {
            case Value::Kind::float64: return checked_float<T>(in.float64(), at);
            case Value::Kind::int64: return checked_float<T>(static_cast<double>(in.int64()), at);
            case Value::Kind::uint64: return checked_float<T>(static_cast<double>(in.uint64()), at);
            default: throw_wrong_kind(at, "a number", type_name<T>(), kind);
            }
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (kind != Value::Kind::string) throw_wrong_kind(at, "a string", "std::string", kind);
            return std::string(in.string());
        } else if constexpr (std::is_same_v<T, Value::Bytes>) {
            if (kind == Value::Kind::bytes) {
                const auto bytes = in.bytes();
                return Value::Bytes(bytes.begin(), bytes.end());
            }
            if (kind != Value::Kind::string) throw_wrong_kind(at, "bytes", "bytes", kind);
            return bytes_from_base64(in.string(), at);
        } else if constexpr (is_vector<T>::value || is_std_array<T>::value) {
            if (kind != Value::Kind::array) throw_wrong_kind(at, "an array", type_name<T>(), kind);
            const std::size_t size = in.array();
            using Element = typename T::value_type;
            const auto element_at = [&](std::size_t i) {
                return read<Element>(in, Path{Path::Step::index, &at, {}, i, nullptr});
            };
            if constexpr (is_vector<T>::value) {
                // The codec checked the body whole, so `size` elements really follow it.
                T out;
                out.reserve(size);
                for (std::size_t i = 0; i < size; ++i) out.push_back(element_at(i));
                return out;
            } else {
                check_element_count<T>(at, size);
                return [&]<std::size_t... I>(std::index_sequence<I...>) {
                    return T{element_at(I)...};
                }(std::make_index_sequence<std::tuple_size_v<T>>{});
            }
        } else if constexpr (is_optional<T>::value) {
            if (kind == Value::Kind::null) {
                in.null();
                return T{};
            }
            return T{read<typename T::value_type>(in, at)};
        } else if constexpr (is_reflected_struct<T>) {
            if (kind == Value::Kind::map) return read_keyed_struct<T>(in, at);
            if (kind != Value::Kind::array) throw_wrong_kind(at, "a record, map or array", type_name<T>(), kind);
            const std::size_t size = in.array();
            if (size != boost::pfr::tuple_size_v<T>) throw_wrong_field_count<T>(at, size);
            // Braces read the fields in declaration order, as they come.
            return [&]<std::size_t... I>(std::index_sequence<I...>) {
                return T{read<boost::pfr::tuple_element_t<I, T>>(
                    in, Path{Path::Step::field, &at, field_names<T>[I], 0, nullptr})...};
            }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
        } else {
            refuse_unsupported<T>();
        }
    }
}

// The root of the path error messages start from: demangling costs more than a small
// decode, so it is done once per type, and the name is only read when a message needs it.
template <class T>
Path root_path() {
    static const std::string root = type_name<T>();
    return Path{Path::Step::root, nullptr, root, 0, nullptr};
}

}  // namespace detail

template <class T>
void write_value(const T& value, ValueWriter& out) {
    detail::write(value, out);
}

template <class T>
Value to_value(const T& value) {
    ValueBuilder builder;
    detail::write(value, builder);
    return builder.take();
}

template <class T>
T from_value(const Value& value, FieldNames names, Scalars scalars) {
    return detail::decode<T>(value, detail::root_path<T>(), detail::Reading{names, scalars});
}

template <class T>
T read_value(ValueReader& in) {
    return detail::read<T>(in, detail::root_path<T>());
}

}  // namespace acemq
