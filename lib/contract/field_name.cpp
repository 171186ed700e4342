#include <acemq/field_name.hpp>

#include <cstring>
#include <limits>
#include <ostream>

#include <acemq/error.hpp>

#include "contract_names.hpp"

namespace acemq {

FieldName::FieldName(std::string_view name) : bytes_{} {
    if (name.size() <= max_inline) {
        // An empty name may come as a null pointer (an empty key read off the wire): not for memcpy.
        if (!name.empty()) std::memcpy(bytes_, name.data(), name.size());
        bytes_[max_inline] = static_cast<char>(name.size());
        return;
    }
    if (const int constant = contract_names::index_of(name); constant >= 0) {
        point_at(contract_names::all[constant].data(), name.size(), constant_tag);
        return;
    }
    if (name.size() > std::numeric_limits<std::uint32_t>::max())
        throw InvalidArgument("acemq: a field name of " + std::to_string(name.size()) +
                              " bytes; a field table's names are at most 4 GiB");
    char* copy = new char[name.size()];
    std::memcpy(copy, name.data(), name.size());
    point_at(copy, name.size(), heap_tag);
}

FieldName::FieldName(const FieldName& other) : bytes_{} {
    if (other.tag() == heap_tag) {
        const std::string_view name = other.view();
        char* copy = new char[name.size()];
        std::memcpy(copy, name.data(), name.size());
        point_at(copy, name.size(), heap_tag);
    } else {
        std::memcpy(bytes_, other.bytes_, sizeof(bytes_));
    }
}

void FieldName::point_at(const char* name, std::size_t size, std::uint8_t kind) noexcept {
    const auto length = static_cast<std::uint32_t>(size);
    std::memcpy(bytes_, &name, sizeof(name));
    std::memcpy(bytes_ + sizeof(name), &length, sizeof(length));
    bytes_[max_inline] = static_cast<char>(kind);
}

std::ostream& operator<<(std::ostream& out, const FieldName& name) { return out << name.view(); }

}  // namespace acemq
