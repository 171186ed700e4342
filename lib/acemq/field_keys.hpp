// How the fields of a C++ struct are keyed where a format names them (JSON objects; the
// records of acemq::Value): a FieldNames policy spells the keys, and field_keys<T> renames
// the odd field of one struct. msgpack writes structs by position and needs neither.
//
// FieldNames::as_is keys a field by its C++ name. FieldNames::camel_case, the spelling of
// the other AceMQ languages, makes the key from the C++ name by these rules, in order:
//   1. leading underscores are kept                        _id        -> _id
//   2. trailing underscores are dropped (the C++ habit for class_     -> class
//      a field named after a keyword)
//   3. every other run of underscores is dropped, and the  order_id   -> orderId
//      character after it is capitalised if it is an       a__b       -> aB
//      ASCII lowercase letter                              line_2_sku -> line2Sku
//   4. everything else stays as it is, so names already    orderId    -> orderId
//      camelCase, capitals and digits pass unchanged       URL, sha256
// A name of underscores only is kept as it is.
//
// The odd field: specialise field_keys for the struct and list the fields to rename. A
// renamed field has its key under every policy; the other fields follow the policy.
//
//   struct Order { std::string order_id; std::string sku; std::string class_; };
//
//   template <>
//   struct acemq::field_keys<Order> {
//       static constexpr acemq::FieldKey renamed[] = {{"sku", "SKU"}, {"class_", "kind"}};
//   };
//
// The keys are worked out at compile time, once per struct and policy. Renaming a field
// the struct does not have, renaming one twice or to an empty key does not compile. Two
// fields that end up with one key (order_id and orderId under camel_case, or a rename onto
// another field's key) are refused when the struct is written or read under that policy,
// by an error naming both fields.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include <acemq/detail/field_keys.hpp>

namespace acemq {

enum class FieldNames { as_is, camel_case };

// One renamed field: `field` is its C++ name, `key` what formats call it.
struct FieldKey {
    std::string_view field;
    std::string_view key;
};

// Specialise for a struct whose field keys the policy does not spell as wanted (above).
template <class T>
struct field_keys {
    static constexpr std::array<FieldKey, 0> renamed{};
};

// The key FieldNames::camel_case gives a field called `name`.
inline std::string camel_case(std::string_view name) {
    std::string key;
    detail::put_camel_case(name, [&key](char c) { key += c; });
    return key;
}

}  // namespace acemq
