// An amqp:// or amqps:// URL taken apart. Internal to the transport.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace acemq::amqp {

struct Address {
    bool tls = false;
    std::string host;
    int port = 5672;
    std::string vhost = "/";
    std::optional<std::string> user{};  // from the URL's userinfo, percent-decoded
    std::optional<std::string> password{};

    // "amqp://host:port/vhost", never the credentials: safe for logs and errors.
    std::string printable() const;
};

// InvalidArgument naming what is wrong; the text never repeats a password it was given.
Address parse_address(std::string_view url);

}  // namespace acemq::amqp
