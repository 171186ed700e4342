#include <acemq/value.hpp>

#include <cxxabi.h>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

#include <acemq/error.hpp>
#include <acemq/reflect.hpp>
#include <acemq/value_writer.hpp>
#include "quoted_text.hpp"

namespace acemq {

Value::Value() noexcept = default;
Value::Value(std::nullptr_t) noexcept {}
Value::Value(bool b) noexcept : data_(b) {}
Value::Value(std::int64_t i) noexcept : data_(i) {}
Value::Value(std::uint64_t u) noexcept : data_(u) {}
Value::Value(double d) noexcept : data_(d) {}
Value::Value(std::string s) noexcept : data_(std::move(s)) {}
Value::Value(const char* s) : data_(std::string(s)) {}
Value::Value(Bytes b) noexcept : data_(std::move(b)) {}
Value::Value(Array a) noexcept : data_(std::move(a)) {}
Value::Value(Map m) noexcept : data_(std::move(m)) {}
Value::Value(Record r) noexcept : data_(std::move(r)) {}
Value::Value(const Value&) = default;
Value::Value(Value&&) noexcept = default;
Value& Value::operator=(const Value&) = default;
Value& Value::operator=(Value&&) noexcept = default;
Value::~Value() = default;

Value::Kind Value::kind() const noexcept { return static_cast<Kind>(data_.index()); }

std::string_view kind_name(Value::Kind kind) noexcept {
    switch (kind) {
    case Value::Kind::null: return "null";
    case Value::Kind::boolean: return "bool";
    case Value::Kind::int64: return "int64";
    case Value::Kind::uint64: return "uint64";
    case Value::Kind::float64: return "double";
    case Value::Kind::string: return "string";
    case Value::Kind::bytes: return "bytes";
    case Value::Kind::array: return "array";
    case Value::Kind::map: return "map";
    case Value::Kind::record: return "record";
    }
    return "unknown";
}

namespace {

[[noreturn]] void wrong_kind(std::string_view wanted, Value::Kind found) {
    throw DecodeError("acemq: expected " + std::string(wanted) + ", found a value of kind " +
                      std::string(kind_name(found)));
}

template <class T>
const T& get_or_throw(const auto& data, std::string_view wanted, Value::Kind found) {
    if (const T* p = std::get_if<T>(&data)) return *p;
    wrong_kind(wanted, found);
}

}  // namespace

bool Value::as_bool() const { return get_or_throw<bool>(data_, "a bool", kind()); }

std::int64_t Value::as_int64() const {
    if (const auto* i = std::get_if<std::int64_t>(&data_)) return *i;
    if (const auto* u = std::get_if<std::uint64_t>(&data_)) {
        if (*u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return static_cast<std::int64_t>(*u);
        throw DecodeError("acemq: expected an int64, found " + std::to_string(*u) + ", which is larger than INT64_MAX");
    }
    wrong_kind("an int64", kind());
}

std::uint64_t Value::as_uint64() const {
    if (const auto* u = std::get_if<std::uint64_t>(&data_)) return *u;
    if (const auto* i = std::get_if<std::int64_t>(&data_)) {
        if (*i >= 0) return static_cast<std::uint64_t>(*i);
        throw DecodeError("acemq: expected a uint64, found the negative number " + std::to_string(*i));
    }
    wrong_kind("a uint64", kind());
}

double Value::as_double() const {
    if (const auto* d = std::get_if<double>(&data_)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(&data_)) return static_cast<double>(*i);
    if (const auto* u = std::get_if<std::uint64_t>(&data_)) return static_cast<double>(*u);
    wrong_kind("a number", kind());
}

const std::string& Value::as_string() const { return get_or_throw<std::string>(data_, "a string", kind()); }
const Value::Bytes& Value::as_bytes() const { return get_or_throw<Bytes>(data_, "bytes", kind()); }
const Value::Array& Value::as_array() const { return get_or_throw<Array>(data_, "an array", kind()); }
const Value::Map& Value::as_map() const { return get_or_throw<Map>(data_, "a map", kind()); }
const Value::Record& Value::as_record() const { return get_or_throw<Record>(data_, "a record", kind()); }

const Value* Value::find(std::string_view key) const {
    if (const auto* record = std::get_if<Record>(&data_)) {
        for (const auto& [name, value] : *record)
            if (name == key) return &value;
        return nullptr;
    }
    if (const auto* map = std::get_if<Map>(&data_)) {
        for (const auto& [k, value] : *map) {
            const auto* name = std::get_if<std::string>(&k.data_);
            if (name && *name == key) return &value;
        }
        return nullptr;
    }
    wrong_kind("a record or a map", kind());
}

void Value::write_to(ValueWriter& out) const {
    switch (kind()) {
    case Kind::null: out.null(); return;
    case Kind::boolean: out.boolean(std::get<bool>(data_)); return;
    case Kind::int64: out.int64(std::get<std::int64_t>(data_)); return;
    case Kind::uint64: out.uint64(std::get<std::uint64_t>(data_)); return;
    case Kind::float64: out.float64(std::get<double>(data_)); return;
    case Kind::string: out.string(std::get<std::string>(data_)); return;
    case Kind::bytes: out.bytes(std::get<Bytes>(data_)); return;
    case Kind::array: {
        const auto& elements = std::get<Array>(data_);
        out.begin_array(elements.size());
        for (const auto& element : elements) element.write_to(out);
        out.end_array();
        return;
    }
    case Kind::map: {
        const auto& entries = std::get<Map>(data_);
        out.begin_map(entries.size());
        for (const auto& [key, element] : entries) {
            key.write_to(out);
            element.write_to(out);
        }
        out.end_map();
        return;
    }
    case Kind::record: {
        const auto& fields = std::get<Record>(data_);
        out.begin_record(fields.size());
        for (const auto& [name, element] : fields) {
            out.field(name);
            element.write_to(out);
        }
        out.end_record();
        return;
    }
    }
}

// ---- ValueBuilder ---------------------------------------------------------------------

void ValueBuilder::null() { add(Value()); }
void ValueBuilder::boolean(bool b) { add(Value(b)); }
void ValueBuilder::int64(std::int64_t i) { add(Value(i)); }
void ValueBuilder::uint64(std::uint64_t u) { add(Value(u)); }
void ValueBuilder::float64(double d) { add(Value(d)); }
void ValueBuilder::string(std::string_view text) { add(Value(std::string(text))); }
void ValueBuilder::bytes(std::span<const std::byte> data) { add(Value(Value::Bytes(data.begin(), data.end()))); }

void ValueBuilder::begin_array(std::size_t size) {
    Value::Array elements;
    elements.reserve(size);
    open(Value(std::move(elements)));
}
void ValueBuilder::begin_map(std::size_t size) {
    Value::Map entries;
    entries.reserve(size);
    open(Value(std::move(entries)));
}
void ValueBuilder::begin_record(std::size_t fields) {
    Value::Record record;
    record.reserve(fields);
    open(Value(std::move(record)));
}
void ValueBuilder::field(std::string_view name) { open_.back().name = name; }
void ValueBuilder::end_array() { close(); }
void ValueBuilder::end_map() { close(); }
void ValueBuilder::end_record() { close(); }

void ValueBuilder::open(Value container) { open_.push_back(Open{std::move(container), Value(), false, {}}); }

void ValueBuilder::close() {
    Value done = std::move(open_.back().container);
    open_.pop_back();
    add(std::move(done));
}

void ValueBuilder::add(Value value) {
    if (open_.empty()) {
        result_ = std::move(value);
        return;
    }
    Open& top = open_.back();
    if (auto* elements = std::get_if<Value::Array>(&top.container.data_)) {
        elements->push_back(std::move(value));
    } else if (auto* entries = std::get_if<Value::Map>(&top.container.data_)) {
        if (!top.have_key) {  // a map's events alternate: key, then its value
            top.key = std::move(value);
            top.have_key = true;
            return;
        }
        entries->emplace_back(std::move(top.key), std::move(value));
        top.have_key = false;
    } else {
        std::get<Value::Record>(top.container.data_).emplace_back(std::move(top.name), std::move(value));
    }
}

bool operator==(const Value& a, const Value& b) {
    using Kind = Value::Kind;
    const Kind ka = a.kind();
    const Kind kb = b.kind();
    const bool a_int = ka == Kind::int64 || ka == Kind::uint64;
    const bool b_int = kb == Kind::int64 || kb == Kind::uint64;
    if (a_int && b_int) {
        if (ka == kb) return a.data_ == b.data_;
        const std::int64_t i = ka == Kind::int64 ? std::get<std::int64_t>(a.data_) : std::get<std::int64_t>(b.data_);
        const std::uint64_t u =
            ka == Kind::uint64 ? std::get<std::uint64_t>(a.data_) : std::get<std::uint64_t>(b.data_);
        return i >= 0 && static_cast<std::uint64_t>(i) == u;
    }
    if (ka != kb) return false;
    if (ka == Kind::float64) {
        const double x = std::get<double>(a.data_);
        const double y = std::get<double>(b.data_);
        return x == y || (std::isnan(x) && std::isnan(y));
    }
    return a.data_ == b.data_;
}

namespace detail {

std::optional<std::size_t> invalid_utf8_at(std::string_view text) noexcept {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    // Most text is ASCII, and encoders check every string: a loop without early exits
    // (which the compiler vectorises) settles that case before the careful one below.
    unsigned char high_bits = 0;
    for (std::size_t k = 0; k < n; ++k) high_bits |= s[k];
    if (high_bits < 0x80) return std::nullopt;
    std::size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len;
        unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;  // overlong
            if (c == 0xED) hi = 0x9F;  // UTF-16 surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;  // overlong
            if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
        } else {
            return i;
        }
        if (n - i < len) return i;
        if (s[i + 1] < lo || s[i + 1] > hi) return i;
        for (std::size_t k = 2; k < len; ++k)
            if ((s[i + k] & 0xC0) != 0x80) return i;
        i += len;
    }
    return std::nullopt;
}

namespace {
constexpr std::string_view base64_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_digit(char c) noexcept {
    const auto at = base64_alphabet.find(c);
    return at == std::string_view::npos ? -1 : static_cast<int>(at);
}
}  // namespace

void require_utf8_to_encode(std::string_view text, std::string_view what) {
    if (const auto bad = invalid_utf8_at(text))
        throw EncodeError("acemq: " + std::string(what) + " is not valid UTF-8 (bad byte at offset " +
                          std::to_string(*bad) + "); carry binary data in std::vector<std::byte>");
}

std::string base64_encode(std::span<const std::byte> bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const auto v = std::to_integer<unsigned>(bytes[i]) << 16 | std::to_integer<unsigned>(bytes[i + 1]) << 8 |
                       std::to_integer<unsigned>(bytes[i + 2]);
        for (int shift = 18; shift >= 0; shift -= 6) out += base64_alphabet[(v >> shift) & 63];
    }
    const std::size_t rest = bytes.size() - i;
    if (rest > 0) {
        unsigned v = std::to_integer<unsigned>(bytes[i]) << 16;
        if (rest == 2) v |= std::to_integer<unsigned>(bytes[i + 1]) << 8;
        out += base64_alphabet[(v >> 18) & 63];
        out += base64_alphabet[(v >> 12) & 63];
        out += rest == 2 ? base64_alphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::optional<std::vector<std::byte>> base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::vector<std::byte> out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        int pad = 0;
        if (last && text[i + 3] == '=') pad = text[i + 2] == '=' ? 2 : 1;
        unsigned v = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            int d = 0;
            if (k < 4 - static_cast<std::size_t>(pad)) {
                d = base64_digit(text[i + k]);
                if (d < 0) return std::nullopt;
            }
            v = v << 6 | static_cast<unsigned>(d);
        }
        out.push_back(static_cast<std::byte>(v >> 16));
        if (pad < 2) out.push_back(static_cast<std::byte>(v >> 8));
        if (pad < 1) out.push_back(static_cast<std::byte>(v));
    }
    return out;
}

namespace {

std::string kind_with_article(Value::Kind kind) {
    switch (kind) {
    case Value::Kind::null:
    case Value::Kind::bytes: return std::string(kind_name(kind));
    case Value::Kind::int64:
    case Value::Kind::array: return "an " + std::string(kind_name(kind));
    default: return "a " + std::string(kind_name(kind));
    }
}

void append_path(std::string& out, const Path& at) {
    if (at.parent) append_path(out, *at.parent);
    switch (at.step) {
    case Path::Step::root: out += at.name; break;
    case Path::Step::field: out += '.', out += at.name; break;
    case Path::Step::index: out += '[' + std::to_string(at.index) + ']'; break;
    case Path::Step::key:
        if (at.key->kind() == Value::Kind::string)
            out += '[' + in_quotes(at.key->as_string()) + ']';  // the sender's key: escaped and bounded
        else if (at.key->kind() == Value::Kind::int64)
            out += '[' + std::to_string(at.key->as_int64()) + ']';
        else if (at.key->kind() == Value::Kind::uint64)
            out += '[' + std::to_string(at.key->as_uint64()) + ']';
        else
            out += "[<" + std::string(kind_name(at.key->kind())) + " key>]";
        break;
    }
}

}  // namespace

void throw_decode_error(const Path& where, std::string_view problem) {
    std::string message = "acemq: ";
    if (where.step != Path::Step::root) {
        append_path(message, where);
        message += ": ";
    }
    message += problem;
    throw DecodeError(message);
}

void throw_bad_key(const Path& where, std::string_view key, std::string_view cpp_type) {
    throw_decode_error(where, "the key " + in_quotes(key) + " is not a " + std::string(cpp_type));
}

namespace {

[[noreturn]] void throw_bad_text(const Path& where, std::string_view text, std::string_view wanted) {
    throw_decode_error(where, "expected " + std::string(wanted) + ", found the text " + in_quotes(text));
}

// from_chars on the whole of `text`, or the error; a leading '+' or space is refused by
// from_chars itself, as the rules in reflect.hpp want.
template <class Number, class... Format>
Number number_from_text(std::string_view text, const Path& where, std::string_view wanted, Format... format) {
    Number number{};
    const char* end = text.data() + text.size();
    const auto [stop, err] = std::from_chars(text.data(), end, number, format...);
    if (err != std::errc() || stop != end) throw_bad_text(where, text, wanted);
    return number;
}

}  // namespace

std::int64_t int64_from_text(std::string_view text, const Path& where, std::string_view cpp_type) {
    return number_from_text<std::int64_t>(text, where,
                                          "decimal text of an integer that fits in " + std::string(cpp_type));
}

std::uint64_t uint64_from_text(std::string_view text, const Path& where, std::string_view cpp_type) {
    return number_from_text<std::uint64_t>(
        text, where, "decimal text of a non-negative integer that fits in " + std::string(cpp_type));
}

double double_from_text(std::string_view text, const Path& where, std::string_view cpp_type) {
    return number_from_text<double>(text, where,
                                    "decimal text of a number (" + std::string(cpp_type) + "), NaN, INF or -INF",
                                    std::chars_format::general);
}

bool bool_from_text(std::string_view text, const Path& where) {
    if (text == "true" || text == "1") return true;
    if (text == "false" || text == "0") return false;
    throw_bad_text(where, text, "a bool (true, false, 1 or 0)");
}

void throw_wrong_kind(const Path& where, std::string_view wanted, std::string_view cpp_type, Value::Kind found) {
    throw_decode_error(where, "expected " + std::string(wanted) + " (" + std::string(cpp_type) + "), found " +
                                  kind_with_article(found));
}

std::string key_clash_message(std::string_view type, FieldNames names, std::string_view first, std::string_view second,
                              std::string_view key) {
    const std::string_view policy = names == FieldNames::camel_case ? "FieldNames::camel_case" : "FieldNames::as_is";
    return "acemq: the " + std::string(type) + " fields " + std::string(first) + " and " + std::string(second) +
           " both have the key \"" + std::string(key) + "\" under " + std::string(policy) +
           "; give one another key with acemq::field_keys<" + std::string(type) + ">, or rename it";
}

std::string demangle(const char* mangled) {
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> plain(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                      &std::free);
    std::string name = status == 0 && plain ? plain.get() : mangled;
    const auto replace_all = [&name](std::string_view from, std::string_view to) {
        for (auto at = name.find(from); at != std::string::npos; at = name.find(from, at))
            name.replace(at, from.size(), to), at += to.size();
    };
    replace_all("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string");
    replace_all("std::__cxx11::", "std::");
    replace_all("(anonymous namespace)::", "");
    return name;
}

}  // namespace detail

}  // namespace acemq
