// AMQP-style field values: what message headers and queue/exchange arguments are made of.
// A transport converts its own representation into these and back; the engine and the
// envelope only ever see these types. Value types, no sharing: safe to copy between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace acemq {

class FieldValue;
using Bytes = std::vector<std::byte>;
using FieldArray = std::vector<FieldValue>;
// Sorted by name, as a person reads them; AMQP does not give table order any meaning.
using FieldTable = std::map<std::string, FieldValue, std::less<>>;

// One value of a field table. The integer widths matter on the wire: the family writes
// version and attempt as signed 32-bit, first-seen as signed 64-bit.
class FieldValue {
public:
    using Variant = std::variant<std::monostate, bool, std::int32_t, std::int64_t, std::uint64_t,
                                 double, std::string, Bytes, FieldArray, FieldTable>;

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

    const Variant& get() const noexcept { return value_; }
    template <class T> bool holds() const noexcept { return std::holds_alternative<T>(value_); }
    bool is_void() const noexcept { return holds<std::monostate>(); }

    // Tolerant readers, as the family reads headers written by any client: an integer of
    // any width, a whole double, or a decimal string ("2") reads as an integer; a string or
    // a byte array reads as text. Anything else is nullopt, never an exception, because a
    // producer's odd header must not become the consumer's outage.
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

}  // namespace acemq
