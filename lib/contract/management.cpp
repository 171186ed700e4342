#include <acemq/management.hpp>

#include <map>
#include <mutex>

#include <acemq/url.hpp>
#include "builtin_transports.hpp"

namespace acemq {

namespace {

// Starts with the management of the transports built into the library; register_management
// adds more.
struct ManagementRegistry {
    ManagementRegistry() {
        for (auto& [scheme, factory] : detail::builtin_management()) factories.emplace(scheme, std::move(factory));
    }

    std::mutex lock;
    std::map<std::string, ManagementFactory, std::less<>> factories;
};

ManagementRegistry& management_registry() {
    static ManagementRegistry instance;
    return instance;
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
    ManagementRegistry& known = management_registry();
    std::lock_guard guard(known.lock);
    known.factories.insert_or_assign(std::string(scheme), std::move(factory));
}

std::unique_ptr<Management> open_management(std::string_view url, ManagementOptions options) {
    const std::size_t separator = url.find("://");
    const std::string_view scheme = separator == std::string_view::npos ? std::string_view{} : url.substr(0, separator);
    ManagementFactory factory;
    std::string known_schemes;
    {
        ManagementRegistry& known = management_registry();
        std::lock_guard guard(known.lock);
        if (auto it = known.factories.find(scheme); it != known.factories.end()) factory = it->second;
        for (const auto& [name, unused] : known.factories) known_schemes += (known_schemes.empty() ? "" : ", ") + name;
    }
    if (!factory)
        throw InvalidArgument(
            "acemq: no management for \"" + redacted_url(url) + "\": the URL must start with one of " +
            (known_schemes.empty() ? std::string("(none registered)") : known_schemes) + " followed by ://");
    return factory(url, options);
}

}  // namespace acemq
