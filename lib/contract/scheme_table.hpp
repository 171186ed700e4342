// Factories by URL scheme, starting from the ones built into the library: the one lookup
// behind open_transport and open_management. Internal.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <acemq/error.hpp>
#include <acemq/url.hpp>

namespace acemq::detail {

template <class Factory>
class SchemeTable {
public:
    explicit SchemeTable(std::vector<std::pair<std::string, Factory>> builtin) {
        for (auto& [scheme, factory] : builtin) factories_.emplace(std::move(scheme), std::move(factory));
    }

    // Replaces an earlier factory of the scheme. Thread-safe.
    void set(std::string_view scheme, Factory factory) {
        std::lock_guard guard(lock_);
        factories_.insert_or_assign(std::string(scheme), std::move(factory));
    }

    // The factory of `url`'s scheme; InvalidArgument naming the URL (redacted), what was
    // looked for ("transport", "management") and the schemes known. Thread-safe.
    Factory find(std::string_view url, std::string_view what) const {
        const std::size_t separator = url.find("://");
        const std::string_view scheme =
            separator == std::string_view::npos ? std::string_view{} : url.substr(0, separator);
        std::string known_schemes;
        {
            std::lock_guard guard(lock_);
            if (auto it = factories_.find(scheme); it != factories_.end()) return it->second;
            for (const auto& [name, unused] : factories_) known_schemes += (known_schemes.empty() ? "" : ", ") + name;
        }
        throw InvalidArgument(
            "acemq: no " + std::string(what) + " for \"" + redacted_url(url) + "\": the URL must start with one of " +
            (known_schemes.empty() ? std::string("(none registered)") : known_schemes) + " followed by ://");
    }

private:
    mutable std::mutex lock_;
    std::map<std::string, Factory, std::less<>> factories_;
};

}  // namespace acemq::detail
