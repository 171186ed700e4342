#include "amqp/address.hpp"

#include <charconv>

#include <acemq/error.hpp>
#include <acemq/url.hpp>

namespace acemq::amqp {

namespace {

[[noreturn]] void refuse(std::string_view url, const std::string& why) {
    throw InvalidArgument("acemq: cannot use \"" + redacted_url(url) + "\" as an AMQP URL: " + why +
                          "; write amqp[s]://[user[:password]@]host[:port][/vhost]");
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string percent_decoded(std::string_view text, std::string_view url, std::string_view part) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out.push_back(text[i]);
            continue;
        }
        const int high = i + 1 < text.size() ? hex_digit(text[i + 1]) : -1;
        const int low = i + 2 < text.size() ? hex_digit(text[i + 2]) : -1;
        if (high < 0 || low < 0) refuse(url, "the " + std::string(part) + " has a '%' not followed by two hex digits");
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
    }
    return out;
}

}  // namespace

std::string Address::printable() const {
    std::string vhost_part = vhost == "/" ? "" : vhost;
    // Escaped so that the printed URL parses back to the same vhost ('%' and '?' too).
    std::string escaped;
    for (const char c : vhost_part) {
        switch (c) {
        case '/': escaped += "%2f"; break;
        case '%': escaped += "%25"; break;
        case '?': escaped += "%3f"; break;
        case '#': escaped += "%23"; break;
        case '@': escaped += "%40"; break;
        default: escaped += c;
        }
    }
    // An IPv6 address goes in brackets, as in the URL it came from.
    const std::string shown_host = host.find(':') == std::string::npos ? host : "[" + host + "]";
    return std::string(tls ? "amqps" : "amqp") + "://" + shown_host + ":" + std::to_string(port) + "/" + escaped;
}

Address parse_address(std::string_view url) {
    Address address;
    std::string_view rest;
    if (url.starts_with("amqp://")) {
        rest = url.substr(7);
    } else if (url.starts_with("amqps://")) {
        address.tls = true;
        address.port = 5671;
        rest = url.substr(8);
    } else {
        refuse(url, "the scheme must be amqp:// or amqps://");
    }
    if (rest.find_first_of("?#") != std::string_view::npos)
        refuse(url, "query parameters and fragments are not read; give settings in acemq::amqp::Options");
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    const std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        const std::string_view userinfo = authority.substr(0, at);
        authority = authority.substr(at + 1);
        const auto colon = userinfo.find(':');
        address.user = percent_decoded(userinfo.substr(0, colon), url, "user name");
        if (colon != std::string_view::npos)
            address.password = percent_decoded(userinfo.substr(colon + 1), url, "password");
        if (address.user->empty()) refuse(url, "the user name before '@' is empty");
    }
    std::string_view host = authority;
    if (authority.starts_with('[')) {  // an IPv6 literal: [::1]:5672
        const auto close = authority.find(']');
        if (close == std::string_view::npos) refuse(url, "an IPv6 address opened with '[' is not closed");
        host = authority.substr(1, close - 1);
        authority = authority.substr(close + 1);
        if (!authority.empty() && authority[0] != ':') refuse(url, "only a port may follow an IPv6 address");
    } else {
        const auto colon = authority.rfind(':');
        host = authority.substr(0, colon);
        authority = colon == std::string_view::npos ? std::string_view() : authority.substr(colon);
    }
    if (!authority.empty()) {  // ":port"
        const std::string_view digits = authority.substr(1);
        int port = 0;
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
        if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || port < 1 || port > 65535)
            // The text is quoted only when the URL has no userinfo: a password with an
            // unescaped '/' ends the authority early and would show up here as the "port".
            refuse(url, url.find('@') == std::string_view::npos
                            ? "the port \"" + std::string(digits) + "\" is not a number from 1 to 65535"
                            : std::string("the port is not a number from 1 to 65535 (if the password holds a '/', "
                                          "write it as %2f)"));
        address.port = port;
    }
    if (host.empty()) refuse(url, "the host is missing");
    address.host = std::string(host);
    if (!path.empty()) {
        if (path.find('/') != std::string_view::npos)
            refuse(url, "the virtual host contains '/': write it as %2f (\"/\" itself is the default)");
        address.vhost = percent_decoded(path, url, "virtual host");
    }
    return address;
}

}  // namespace acemq::amqp
