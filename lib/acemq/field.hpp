// AMQP-style field values: what message headers and queue/exchange arguments are made of.
// A transport converts its own representation into these and back; the engine and the
// envelope only ever see these types. Value types, no sharing: safe to copy between threads.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/field_name.hpp>

namespace acemq {

class FieldValue;
using Bytes = std::vector<std::byte>;
using FieldArray = std::vector<FieldValue>;
// An AMQP timestamp field ('T'): an instant in whole seconds since the Unix epoch. Kept
// apart from the integers so that a header written as a time is never read as a count
// or as milliseconds.
using FieldTimestamp = std::chrono::sys_seconds;

// A field table: names to values, kept sorted by name (as a person reads them; AMQP gives
// table order no meaning). It reads like std::map — find, contains, at, operator[],
// emplace, insert_or_assign, erase — but keeps its entries in one vector, because a message's
// headers are a dozen small entries built and dropped on every publish, and one allocation
// for all of them costs a fraction of a tree node each. Its names are FieldNames
// (field_name.hpp): a short name or one of the contract's costs no heap block.
class FieldTable {
public:
    using value_type = std::pair<FieldName, FieldValue>;
    using iterator = std::vector<value_type>::iterator;
    using const_iterator = std::vector<value_type>::const_iterator;

    FieldTable() = default;
    // A name given twice keeps its first value, as std::map does.
    FieldTable(std::initializer_list<value_type> entries);

    // (Defined below FieldValue, which a table's entries hold.)
    iterator begin() noexcept;
    iterator end() noexcept;
    const_iterator begin() const noexcept;
    const_iterator end() const noexcept;
    std::size_t size() const noexcept;
    bool empty() const noexcept;
    void clear() noexcept;
    void reserve(std::size_t count);

    iterator find(std::string_view name);
    const_iterator find(std::string_view name) const;
    bool contains(std::string_view name) const;
    // Throw InvalidArgument naming the missing field: the name given is not one of the
    // table's (use find or contains when the field may be absent).
    FieldValue& at(std::string_view name);
    const FieldValue& at(std::string_view name) const;
    // Inserts a void value when the name is absent.
    FieldValue& operator[](std::string_view name);

    // Insert when the name is absent; leave an existing value alone (false in .second).
    template <class... Args>
    std::pair<iterator, bool> emplace(FieldName name, Args&&... args);
    template <class... Args>
    std::pair<iterator, bool> try_emplace(FieldName name, Args&&... args);
    std::pair<iterator, bool> insert_or_assign(FieldName name, FieldValue value);
    // Adds an entry whose name sorts after every name already here: the cheap way to build
    // a table in order. Throws UsageError when the name is out of order or repeated.
    void append(FieldName name, FieldValue value);
    // The same, with the value made in place from `value_args` (FieldValue's constructors'):
    // what a table built on every publish is made with, so that no value is moved about.
    template <class... Args>
    void emplace_back(std::string_view name, Args&&... value_args);
    std::size_t erase(std::string_view name);
    iterator erase(const_iterator position);
    // Moves in every entry of `other` whose name is absent here.
    void merge(FieldTable&& other);

    friend bool operator==(const FieldTable& left, const FieldTable& right);

private:
    iterator position_of(std::string_view name);
    // Throws UsageError unless `name` sorts after every name here.
    void check_appended(std::string_view name) const;

    std::vector<value_type> entries_;
};

// A message's application and x-acemq-* headers, as envelopes, transports and tracing
// carry them.
using Headers = FieldTable;

// One value of a field table. The integer widths matter on the wire: the family writes
// version and attempt as signed 32-bit, first-seen as signed 64-bit (epoch milliseconds,
// never a timestamp).
class FieldValue {
public:
    using Variant = std::variant<std::monostate, bool, std::int32_t, std::int64_t, std::uint64_t, double, std::string,
                                 Bytes, FieldArray, FieldTable, FieldTimestamp>;

    FieldValue() = default;
    FieldValue(bool value) : value_(value) {}
    FieldValue(std::int32_t value) : value_(value) {}
    FieldValue(std::int64_t value) : value_(value) {}
    FieldValue(std::uint64_t value) : value_(value) {}
    FieldValue(double value) : value_(value) {}
    FieldValue(std::string value) : value_(std::move(value)) {}
    FieldValue(std::string_view value) : value_(std::string(value)) {}
    FieldValue(const char* value) : value_(std::string(value)) {}
    FieldValue(Bytes value) : value_(std::move(value)) {}
    FieldValue(FieldArray value) : value_(std::move(value)) {}
    FieldValue(FieldTable value) : value_(std::move(value)) {}
    FieldValue(FieldTimestamp value) : value_(value) {}

    const Variant& get() const noexcept { return value_; }
    Variant& get() noexcept { return value_; }
    template <class T>
    bool holds() const noexcept {
        return std::holds_alternative<T>(value_);
    }
    bool is_void() const noexcept { return holds<std::monostate>(); }
    // Whether it is an array or a table (values of its own), not a scalar or a text.
    bool nests() const noexcept { return holds<FieldArray>() || holds<FieldTable>(); }

    // Tolerant readers, as the family reads headers written by any client: an integer of
    // any width, a whole double, or a decimal string ("2") reads as an integer; a string or
    // a byte array reads as text. Anything else is nullopt, never an exception, because a
    // producer's odd header must not become the consumer's outage. A timestamp is not an
    // integer (it is an instant, in seconds): read it with get() / holds<FieldTimestamp>().
    std::optional<std::int64_t> as_integer() const;
    std::optional<std::string> as_text() const;

    // How the value reads in a printed topology or a log: strings bare, numbers in decimal.
    std::string to_string() const;

    friend bool operator==(const FieldValue&, const FieldValue&) = default;

private:
    Variant value_;
};

// Renders a table as `name=value, name=value` in name order.
std::string to_string(const FieldTable& table);

// Whether two values say the same to a broker comparing declarations: integers by value
// whatever their width (a 32-bit 5 is a 64-bit 5, as the wire does not keep the width),
// anything else exactly.
bool equivalent(const FieldValue& a, const FieldValue& b);

inline FieldTable::iterator FieldTable::begin() noexcept { return entries_.begin(); }
inline FieldTable::iterator FieldTable::end() noexcept { return entries_.end(); }
inline FieldTable::const_iterator FieldTable::begin() const noexcept { return entries_.begin(); }
inline FieldTable::const_iterator FieldTable::end() const noexcept { return entries_.end(); }
inline std::size_t FieldTable::size() const noexcept { return entries_.size(); }
inline bool FieldTable::empty() const noexcept { return entries_.empty(); }
inline void FieldTable::clear() noexcept { entries_.clear(); }
inline void FieldTable::reserve(std::size_t count) { entries_.reserve(count); }
inline bool FieldTable::contains(std::string_view name) const { return find(name) != end(); }
inline FieldTable::iterator FieldTable::erase(const_iterator position) { return entries_.erase(position); }
inline bool operator==(const FieldTable& left, const FieldTable& right) { return left.entries_ == right.entries_; }

inline FieldTable::iterator FieldTable::position_of(std::string_view name) {
    return std::lower_bound(entries_.begin(), entries_.end(), name,
                            [](const value_type& entry, std::string_view key) { return entry.first < key; });
}

inline FieldTable::iterator FieldTable::find(std::string_view name) {
    auto at = position_of(name);
    return at != entries_.end() && at->first == name ? at : entries_.end();
}

inline FieldTable::const_iterator FieldTable::find(std::string_view name) const {
    return const_cast<FieldTable*>(this)->find(name);
}

template <class... Args>
std::pair<FieldTable::iterator, bool> FieldTable::emplace(FieldName name, Args&&... args) {
    auto at = position_of(name);
    if (at != entries_.end() && at->first == name) return {at, false};
    return {entries_.emplace(at, std::move(name), FieldValue(std::forward<Args>(args)...)), true};
}

template <class... Args>
void FieldTable::emplace_back(std::string_view name, Args&&... value_args) {
    check_appended(name);
    entries_.emplace_back(std::piecewise_construct, std::forward_as_tuple(name),
                          std::forward_as_tuple(std::forward<Args>(value_args)...));
}

template <class... Args>
std::pair<FieldTable::iterator, bool> FieldTable::try_emplace(FieldName name, Args&&... args) {
    return emplace(std::move(name), std::forward<Args>(args)...);
}

}  // namespace acemq
