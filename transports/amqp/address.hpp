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
    // Who logs in when no other credentials are given: the URL's user and password, an empty
    // password for a user named without one, RabbitMQ's guest/guest for a URL naming nobody.
    std::string login_user() const { return user.value_or("guest"); }
    std::string login_password() const { return password.value_or(user ? "" : "guest"); }
};

// InvalidArgument naming what is wrong; the text never repeats a password it was given.
Address parse_address(std::string_view url);

}  // namespace acemq::amqp
