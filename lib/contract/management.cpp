#include <acemq/management.hpp>

#include "builtin_transports.hpp"
#include "scheme_table.hpp"

namespace acemq {

namespace {

detail::SchemeTable<ManagementFactory>& managements() {
    static detail::SchemeTable<ManagementFactory> table(detail::builtin_management());
    return table;
}

}  // namespace

std::string_view to_string(ManagementError::Reason reason) noexcept {
    switch (reason) {
    case ManagementError::Reason::not_found: return "not_found";
    case ManagementError::Reason::in_use: return "in_use";
    case ManagementError::Reason::disabled: return "disabled";
    case ManagementError::Reason::access_refused: return "access_refused";
    case ManagementError::Reason::unsupported: return "unsupported";
    case ManagementError::Reason::failed: return "failed";
    }
    return "failed";
}

void register_management(std::string_view scheme, ManagementFactory factory) {
    managements().set(scheme, std::move(factory));
}

std::unique_ptr<Management> open_management(std::string_view url, ManagementOptions options) {
    return managements().find(url, "management")(url, options);
}

}  // namespace acemq
