#include "field_visitor.hpp"

#include <type_traits>
#include <variant>

namespace acemq::detail {

void visit(const FieldValue& value, FieldVisitor& visitor) {
    std::visit(
        [&](const auto& held) {
            using Held = std::decay_t<decltype(held)>;
            if constexpr (std::is_same_v<Held, std::monostate>) {
                visitor.nil();
            } else if constexpr (std::is_same_v<Held, bool>) {
                visitor.boolean(held);
            } else if constexpr (std::is_same_v<Held, std::int32_t>) {
                visitor.int32(held);
            } else if constexpr (std::is_same_v<Held, std::int64_t>) {
                visitor.int64(held);
            } else if constexpr (std::is_same_v<Held, std::uint64_t>) {
                visitor.uint64(held);
            } else if constexpr (std::is_same_v<Held, double>) {
                visitor.float64(held);
            } else if constexpr (std::is_same_v<Held, std::string>) {
                visitor.text(held);
            } else if constexpr (std::is_same_v<Held, Bytes>) {
                visitor.bytes(held);
            } else if constexpr (std::is_same_v<Held, FieldArray>) {
                visitor.array(held.size());
                for (const FieldValue& element : held) visit(element, visitor);
            } else if constexpr (std::is_same_v<Held, FieldTable>) {
                visit(held, visitor);
            } else {
                static_assert(std::is_same_v<Held, FieldTimestamp>);
                visitor.timestamp(held);
            }
        },
        value.get());
}

void visit(const FieldTable& table, FieldVisitor& visitor) {
    visitor.table(table.size());
    for (const auto& [name, value] : table) {
        visitor.name(name);
        visit(value, visitor);
    }
}

}  // namespace acemq::detail
