#include <acemq/error.hpp>

namespace acemq {

ReservedHeaderError::ReservedHeaderError(const std::string& name)
    : InvalidArgument("acemq: header \"" + name +
                      "\" is in the reserved \"x-acemq-\" namespace and would be dropped on "
                      "consume; use a namespace of your own, such as x-yourcompany-") {}

std::string_view without_prefix(std::string_view message) noexcept {
    constexpr std::string_view prefix = "acemq: ";
    if (message.starts_with(prefix)) message.remove_prefix(prefix.size());
    return message;
}

}  // namespace acemq
