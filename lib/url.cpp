#include <acemq/url.hpp>

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
    std::size_t authority_start = 0;
    const std::size_t first = url.find_first_not_of(" \t\r\n");
    if (const std::size_t separator = url.find("://"); first != std::string_view::npos &&
                                                       separator != std::string_view::npos &&
                                                       is_scheme(url.substr(first, separator - first)))
        authority_start = separator + 3;
    std::string shown(url.substr(0, authority_start));
    std::string_view rest = url.substr(authority_start);
    if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
        shown += "***@";
        rest.remove_prefix(at + 1);
    }
    // A query may carry credentials too (PostgreSQL's ?password=): its text goes.
    if (const std::size_t query = rest.find('?'); query != std::string_view::npos)
        return shown + std::string(rest.substr(0, query)) + "?***";
    return shown + std::string(rest);
}

}  // namespace acemq
