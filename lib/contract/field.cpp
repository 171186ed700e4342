#include <acemq/field.hpp>

#include <charconv>
#include <cmath>
#include <limits>

namespace acemq {

namespace {

std::optional<std::int64_t> parse_decimal(std::string_view text) {
    std::int64_t parsed = 0;
    const char* first = text.data();
    const char* last = text.data() + text.size();
    if (first != last && *first == '+') ++first;
    auto [end, error] = std::from_chars(first, last, parsed);
    if (error != std::errc{} || end != last || first == last) return std::nullopt;
    return parsed;
}

std::string_view as_view(const Bytes& bytes) { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }

}  // namespace

std::optional<std::int64_t> FieldValue::as_integer() const {
    return std::visit(
        [](const auto& value) -> std::optional<std::int64_t> {
            using T = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) {
                return value;
            } else if constexpr (std::is_same_v<T, std::uint64_t>) {
                if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
                return static_cast<std::int64_t>(value);
            } else if constexpr (std::is_same_v<T, double>) {
                // JSON fixtures and some clients carry integers as doubles; only whole values
                // inside the exactly representable range count.
                if (!std::isfinite(value) || value != std::trunc(value) || std::fabs(value) > 9.0e15)
                    return std::nullopt;
                return static_cast<std::int64_t>(value);
            } else if constexpr (std::is_same_v<T, std::string>) {
                return parse_decimal(value);
            } else if constexpr (std::is_same_v<T, Bytes>) {
                return parse_decimal(as_view(value));
            } else {
                return std::nullopt;
            }
        },
        value_);
}

std::optional<std::string> FieldValue::as_text() const {
    if (const auto* text = std::get_if<std::string>(&value_)) return *text;
    if (const auto* bytes = std::get_if<Bytes>(&value_)) return std::string(as_view(*bytes));
    return std::nullopt;
}

std::string FieldValue::to_string() const {
    return std::visit(
        [](const auto& value) -> std::string {
            using T = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                return "void";
            } else if constexpr (std::is_same_v<T, bool>) {
                return value ? "true" : "false";
            } else if constexpr (std::is_same_v<T, std::string>) {
                return value;
            } else if constexpr (std::is_same_v<T, Bytes>) {
                return std::string(as_view(value));
            } else if constexpr (std::is_same_v<T, FieldArray>) {
                std::string out = "[";
                for (std::size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + value[i].to_string();
                return out + "]";
            } else if constexpr (std::is_same_v<T, FieldTable>) {
                return "{" + acemq::to_string(value) + "}";
            } else if constexpr (std::is_same_v<T, FieldTimestamp>) {
                return "timestamp " + std::to_string(value.time_since_epoch().count()) + " s";
            } else {
                return std::to_string(value);
            }
        },
        value_);
}

FieldTable::FieldTable(std::initializer_list<value_type> entries) {
    entries_.reserve(entries.size());
    for (const value_type& entry : entries) emplace(entry.first, entry.second);
}

FieldValue& FieldTable::at(std::string_view name) {
    auto found = find(name);
    if (found == end())
        throw InvalidArgument("acemq: the table has no field \"" + std::string(name) +
                              "\"; look it up with find or contains when it may be absent");
    return found->second;
}

const FieldValue& FieldTable::at(std::string_view name) const { return const_cast<FieldTable*>(this)->at(name); }

FieldValue& FieldTable::operator[](std::string_view name) { return emplace(FieldName(name)).first->second; }

std::pair<FieldTable::iterator, bool> FieldTable::insert_or_assign(FieldName name, FieldValue value) {
    auto at = position_of(name);
    if (at != entries_.end() && at->first == name) {
        at->second = std::move(value);
        return {at, false};
    }
    return {entries_.emplace(at, std::move(name), std::move(value)), true};
}

void FieldTable::check_appended(std::string_view name) const {
    if (!entries_.empty() && !(std::string_view(entries_.back().first) < name))
        throw UsageError("acemq: FieldTable::append was given \"" + std::string(name) + "\" after \"" +
                         entries_.back().first +
                         "\"; names must come in increasing order (insert_or_assign takes them in any order)");
}

void FieldTable::append(FieldName name, FieldValue value) {
    check_appended(name);
    entries_.emplace_back(std::move(name), std::move(value));
}

std::size_t FieldTable::erase(std::string_view name) {
    auto found = find(name);
    if (found == end()) return 0;
    entries_.erase(found);
    return 1;
}

void FieldTable::merge(FieldTable&& other) {
    for (value_type& entry : other.entries_) emplace(std::move(entry.first), std::move(entry.second));
    other.clear();
}

bool equivalent(const FieldValue& a, const FieldValue& b) {
    const auto integer = [](const FieldValue& value) {
        return value.holds<std::int32_t>() || value.holds<std::int64_t>() || value.holds<std::uint64_t>();
    };
    if (integer(a) && integer(b)) {
        const auto left = a.as_integer(), right = b.as_integer();
        if (left && right) return *left == *right;
    }
    return a == b;
}

std::string to_string(const FieldTable& table) {
    std::string out;
    for (const auto& [name, value] : table) {
        if (!out.empty()) out += ", ";
        out += name + "=" + value.to_string();
    }
    return out;
}

}  // namespace acemq
