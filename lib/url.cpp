#include "acemq/url.hpp"

namespace acemq {

namespace {

// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ). A ':' or '/' can never be part of
// one, so "user:pw://x@host" has no scheme and all of it before the '@' is userinfo.
bool is_scheme(std::string_view text) {
    auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    if (text.empty() || !alpha(text.front())) return false;
    for (const char c : text)
        if (!alpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.') return false;
    return true;
}

}  // namespace

std::string redacted_url(std::string_view url) {
    const std::size_t at = url.rfind('@');
    if (at == std::string_view::npos) return std::string(url);
    std::size_t authority_start = 0;
    const std::size_t first = url.find_first_not_of(" \t\r\n");
    if (const std::size_t separator = url.find("://");
        first != std::string_view::npos && separator != std::string_view::npos && separator < at &&
        is_scheme(url.substr(first, separator - first)))
        authority_start = separator + 3;
    return std::string(url.substr(0, authority_start)) + "***@" + std::string(url.substr(at + 1));
}

}  // namespace acemq
