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

// Where the authority starts: after "scheme:" and the slashes that follow it, however many
// there are ("amqp:/host" is a mistake the reader must see, scheme and all). With no slash,
// "amqp:guest@host" cannot be told from "guest:password@host", so there is no scheme and the
// authority starts at the first character: the password goes, and the scheme with it.
std::size_t authority_start(std::string_view url) {
    const std::size_t first = url.find_first_not_of(" \t\r\n");
    const std::size_t colon = url.find(':');
    if (first == std::string_view::npos || colon == std::string_view::npos || colon < first ||
        !is_scheme(url.substr(first, colon - first)))
        return 0;
    const std::size_t after_slashes = url.find_first_not_of('/', colon + 1);
    const std::size_t end = after_slashes == std::string_view::npos ? url.size() : after_slashes;
    return end == colon + 1 ? 0 : end;
}

}  // namespace

std::string redacted_url(std::string_view url) {
    const std::size_t start = authority_start(url);
    std::string shown(url.substr(0, start));
    std::string_view rest = url.substr(start);
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
