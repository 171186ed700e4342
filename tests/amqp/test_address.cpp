// Suite `amqp-offline`: what the AMQP transport decides before it talks to a broker. The
// URL taken apart, credentials resolved and printed, options that contradict each other
// refused by open() before any connect. No broker is needed: the only sockets opened are
// to 127.0.0.1 port 1, where nothing listens.
//
// The secret values below are distinctive strings, so "never in an error or a printed
// object" is checked by searching every text for them.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include <acemq/amqp.hpp>
#include "amqp/address.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using acemq::InvalidArgument;
using acemq::amqp::Address;
using acemq::amqp::Credentials;
using acemq::amqp::parse_address;

constexpr const char* secret = "Sup3rSecretPa55";

// The text of the InvalidArgument that parse_address throws for `url`; fails the test when
// it throws nothing or something else.
std::string refusal_of(const std::string& url) {
    try {
        const Address address = parse_address(url);
        FAIL("parse_address accepted \"" << url << "\" (host \"" << address.host << "\")");
    } catch (const InvalidArgument& error) {
        return error.what();
    }
    return {};
}

template <class T>
std::string printed(const T& value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

// Sets an environment variable for one test and removes it afterwards.
class ScopedVariable {
public:
    ScopedVariable(std::string name, const std::string& value) : name_(std::move(name)) {
        ::setenv(name_.c_str(), value.c_str(), 1);
    }
    ~ScopedVariable() { ::unsetenv(name_.c_str()); }
    ScopedVariable(const ScopedVariable&) = delete;
    ScopedVariable& operator=(const ScopedVariable&) = delete;

private:
    std::string name_;
};

// A file in a fresh temporary folder, removed with the folder.
class TempFile {
public:
    explicit TempFile(const std::string& contents) {
        dir_ = std::filesystem::temp_directory_path() / ("acemq-address-" + acemq::new_uuid().substr(0, 8));
        std::filesystem::create_directories(dir_);
        path_ = dir_ / "credentials";
        std::ofstream(path_, std::ios::binary) << contents;
    }
    ~TempFile() {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path dir_;
    std::filesystem::path path_;
};

}  // namespace

TEST_CASE("an AMQP URL with only a host takes the defaults") {
    const Address plain = parse_address("amqp://broker.internal");
    CHECK_FALSE(plain.tls);
    CHECK(plain.host == "broker.internal");
    CHECK(plain.port == 5672);
    CHECK(plain.vhost == "/");
    CHECK_FALSE(plain.user.has_value());
    CHECK_FALSE(plain.password.has_value());

    const Address tls = parse_address("amqps://broker.internal/");
    CHECK(tls.tls);
    CHECK(tls.port == 5671);
    CHECK(tls.vhost == "/");
}

TEST_CASE("ports and virtual hosts are read from the URL, %2f being '/'") {
    CHECK(parse_address("amqp://h:1234").port == 1234);
    CHECK(parse_address("amqp://h:1/").port == 1);
    CHECK(parse_address("amqps://h:65535/").port == 65535);
    CHECK(parse_address("amqps://h:5672/").tls);

    CHECK(parse_address("amqp://h:5672/").vhost == "/");
    CHECK(parse_address("amqp://h/%2f").vhost == "/");
    CHECK(parse_address("amqp://h/%2F").vhost == "/");
    CHECK(parse_address("amqp://h/production").vhost == "production");
    CHECK(parse_address("amqp://h/team%2fpayments").vhost == "team/payments");
    CHECK(parse_address("amqp://h/a%20b").vhost == "a b");
}

TEST_CASE("an IPv6 address is written in brackets, with or without a port") {
    const Address with_port = parse_address("amqp://[::1]:5673/x");
    CHECK(with_port.host == "::1");
    CHECK(with_port.port == 5673);
    CHECK(with_port.vhost == "x");

    const Address without_port = parse_address("amqps://[fe80::1:2]");
    CHECK(without_port.host == "fe80::1:2");
    CHECK(without_port.port == 5671);
}

TEST_CASE("user and password are percent-decoded; a user without a password is allowed") {
    const Address both = parse_address("amqp://us%40er:p%3Ass%2Fw%25rd@h/");
    REQUIRE(both.user.has_value());
    REQUIRE(both.password.has_value());
    CHECK(*both.user == "us@er");
    CHECK(*both.password == "p:ss/w%rd");
    CHECK(both.host == "h");

    const Address user_only = parse_address("amqp://reader@h");
    CHECK(user_only.user == std::optional<std::string>("reader"));
    CHECK_FALSE(user_only.password.has_value());

    const Address empty_password = parse_address("amqp://reader:@h");
    CHECK(empty_password.password == std::optional<std::string>(""));

    // An '@' in the password itself: the last '@' before the path ends the userinfo.
    const Address at_in_password = parse_address("amqp://u:p@ss@h:5700/");
    CHECK(at_in_password.password == std::optional<std::string>("p@ss"));
    CHECK(at_in_password.host == "h");
    CHECK(at_in_password.port == 5700);
}

TEST_CASE("a URL that cannot be used is refused, saying what is wrong and how to write it") {
    struct Case {
        std::string url;
        std::string says;
    };
    const std::vector<Case> cases = {
        {"http://h/", "the scheme must be amqp:// or amqps://"},
        {"h:5672", "the scheme must be amqp:// or amqps://"},
        {"", "the scheme must be amqp:// or amqps://"},
        {"amqp://h/?heartbeat=10", "query parameters and fragments are not read"},
        {"amqp://h/#x", "query parameters and fragments are not read"},
        {"amqp://h:0/", "is not a number from 1 to 65535"},
        {"amqp://h:65536/", "is not a number from 1 to 65535"},
        {"amqp://h:-1/", "is not a number from 1 to 65535"},
        {"amqp://h:56x/", "is not a number from 1 to 65535"},
        {"amqp://h:/", "is not a number from 1 to 65535"},
        {"amqp://", "the host is missing"},
        {"amqp:///vhost", "the host is missing"},
        {"amqp://:5672/", "the host is missing"},
        {"amqp://u:p@/", "the host is missing"},
        {"amqp://[::1/", "is not closed"},
        {"amqp://[::1]x/", "only a port may follow an IPv6 address"},
        {"amqp://[::1]:99999/", "is not a number from 1 to 65535"},
        {"amqp://h/a/b", "write it as %2f"},
        {"amqp://h/%zz", "the virtual host has a '%' not followed by two hex digits"},
        {"amqp://h/%2", "the virtual host has a '%' not followed by two hex digits"},
        {"amqp://%g0:p@h/", "the user name has a '%' not followed by two hex digits"},
        {"amqp://@h/", "the user name before '@' is empty"},
        {"amqp://:password@h/", "the user name before '@' is empty"},
    };
    for (const auto& [url, says] : cases) {
        INFO("URL: \"" << url << "\"");
        const std::string text = refusal_of(url);
        CHECK_THAT(text, Catch::StartsWith("acemq: cannot use \"") && Catch::Contains(says) &&
                             Catch::Contains("write amqp[s]://[user[:password]@]host[:port][/vhost]"));
    }
}

TEST_CASE("a password never appears in a refusal or a printed Address") {
    const std::string s = secret;
    // Each URL carries the secret as its password (raw or percent-escaped) and is refused
    // for some other reason, so the refusal has to quote the URL without it.
    const std::vector<std::string> refused = {
        "amqp://user:" + s + "@h:0/",
        "amqp://user:" + s + "@h:notaport/",
        "amqp://user:" + s + "@/",
        "amqp://user:" + s + "@h/a/b",
        "amqp://user:" + s + "@h/?x=1",
        "amqp://user:" + s + "%zz@h/",     // the password's own escape is broken
        "amqp://user:Sup3r@Pa55@h:0/",     // an '@' in the password
        "amqp://user:" + s + "/slash@h/",  // an unescaped '/' in the password
        "amqp://user:" + s + "/slash@h:77777/",
        "amqp://user:Sup3r%53ecretPa55@h:0/",  // the secret escaped: %53 is 'S'
        "amqp://user:" + s + "@[::1/",
        "amqps://:" + s + "@h/",
    };
    for (const auto& url : refused) {
        INFO("URL: \"" << url << "\"");
        const std::string text = refusal_of(url);
        CHECK_THAT(text, !Catch::Contains(s) && !Catch::Contains("Sup3r") && !Catch::Contains("Pa55"));
        CHECK_THAT(text, Catch::Contains("acemq: cannot use"));
    }

    const Address address = parse_address("amqps://orders-service:" + s + "@mq.internal:5671/shop");
    CHECK(address.password == std::optional<std::string>(s));
    CHECK(address.printable() == "amqps://mq.internal:5671/shop");
    CHECK_THAT(address.printable(), !Catch::Contains(s) && !Catch::Contains("orders-service"));
}

TEST_CASE("a printed Address is itself a URL that reads back the same") {
    for (const std::string url : {"amqp://u:p@h/", "amqps://h:1234/team%2fpayments", "amqp://[::1]:5673/x",
                                  "amqp://h/a%25b", "amqp://[fe80::1]/"}) {
        INFO("URL: \"" << url << "\"");
        const Address first = parse_address(url);
        const std::string shown = first.printable();
        INFO("printed: \"" << shown << "\"");
        const Address again = parse_address(shown);
        CHECK(again.tls == first.tls);
        CHECK(again.host == first.host);
        CHECK(again.port == first.port);
        CHECK(again.vhost == first.vhost);
        CHECK_FALSE(again.user.has_value());
    }
    CHECK(parse_address("amqp://h").printable() == "amqp://h:5672/");
    CHECK(parse_address("amqp://h/%2f").printable() == "amqp://h:5672/");
    CHECK(parse_address("amqp://[::1]/v").printable() == "amqp://[::1]:5672/v");
}

TEST_CASE("plain credentials are given back by resolve and never printed") {
    const Credentials credentials = Credentials::plain("orders-service", secret);
    const Credentials::Resolved resolved = credentials.resolve();
    CHECK(resolved.user == "orders-service");
    CHECK(resolved.password == secret);
    const std::string shown = printed(credentials);
    CHECK_THAT(shown, !Catch::Contains(secret) && !Catch::Contains("orders-service"));
    CHECK_THAT(shown, Catch::Contains("hidden"));

    CHECK_THROWS_AS(Credentials::plain("", secret), InvalidArgument);
    try {
        (void)Credentials::plain("", secret);
    } catch (const InvalidArgument& error) {
        CHECK_THAT(error.what(), !Catch::Contains(secret));
    }
}

TEST_CASE("credentials from the environment are read at resolve, naming the variable when one is missing") {
    const std::string tag = acemq::new_uuid().substr(0, 8);
    const std::string user_variable = "ACEMQ_OFFLINE_USER_" + tag, password_variable = "ACEMQ_OFFLINE_PASSWORD_" + tag;
    const Credentials credentials = Credentials::from_environment(user_variable, password_variable);

    // Printing names where they come from, at any time, and never a value.
    CHECK_THAT(printed(credentials), Catch::Contains(user_variable) && Catch::Contains(password_variable));

    try {
        (void)credentials.resolve();
        FAIL("resolve succeeded with neither variable set");
    } catch (const InvalidArgument& error) {
        CHECK_THAT(error.what(), Catch::Contains(user_variable) && Catch::Contains("not set"));
    }
    {
        const ScopedVariable user(user_variable, "orders-service");
        try {
            (void)credentials.resolve();
            FAIL("resolve succeeded without the password variable");
        } catch (const InvalidArgument& error) {
            CHECK_THAT(error.what(), Catch::Contains(password_variable) && Catch::Contains("not set") &&
                                         !Catch::Contains("orders-service"));
        }
        {
            const ScopedVariable password(password_variable, secret);
            const Credentials::Resolved resolved = credentials.resolve();
            CHECK(resolved.user == "orders-service");
            CHECK(resolved.password == secret);
            CHECK_THAT(printed(credentials), !Catch::Contains(secret) && !Catch::Contains("orders-service"));

            // Read at each resolve: a changed value is picked up.
            ::setenv(password_variable.c_str(), "rotated-password", 1);
            CHECK(credentials.resolve().password == "rotated-password");
        }
    }
    {
        // An empty user name is as good as none; an empty password is a password.
        const ScopedVariable user(user_variable, "");
        const ScopedVariable password(password_variable, secret);
        try {
            (void)credentials.resolve();
            FAIL("resolve succeeded with an empty user name");
        } catch (const InvalidArgument& error) {
            CHECK_THAT(error.what(), Catch::Contains(user_variable) && !Catch::Contains(secret));
        }
    }

    CHECK_THROWS_AS(Credentials::from_environment("", password_variable), InvalidArgument);
    CHECK_THROWS_AS(Credentials::from_environment(user_variable, ""), InvalidArgument);
}

TEST_CASE("credentials from a file are read at resolve, naming the file when it cannot be used") {
    {
        const TempFile file("orders-service\n" + std::string(secret) + "\n");
        const Credentials credentials = Credentials::from_file(file.path());
        const Credentials::Resolved resolved = credentials.resolve();
        CHECK(resolved.user == "orders-service");
        CHECK(resolved.password == secret);
        const std::string shown = printed(credentials);
        CHECK_THAT(shown, Catch::Contains(file.path().string()) && !Catch::Contains(secret) &&
                              !Catch::Contains("orders-service"));

        // Read again at each resolve: a rotated secret is picked up.
        std::ofstream(file.path(), std::ios::trunc) << "orders-service\nrotated-password\n";
        CHECK(credentials.resolve().password == "rotated-password");
    }
    {
        // Written on Windows: the line ends are not part of the values. No final newline.
        const TempFile file("orders-service\r\n" + std::string(secret));
        const Credentials::Resolved resolved = Credentials::from_file(file.path()).resolve();
        CHECK(resolved.user == "orders-service");
        CHECK(resolved.password == secret);
    }
    {
        const TempFile file("\n" + std::string(secret) + "\n");
        try {
            (void)Credentials::from_file(file.path()).resolve();
            FAIL("resolve succeeded with an empty first line");
        } catch (const InvalidArgument& error) {
            CHECK_THAT(error.what(), Catch::Contains(file.path().string()) && Catch::Contains("first line") &&
                                         !Catch::Contains(secret));
        }
    }
    const std::filesystem::path missing =
        std::filesystem::temp_directory_path() / ("acemq-no-such-file-" + acemq::new_uuid().substr(0, 8));
    try {
        (void)Credentials::from_file(missing).resolve();
        FAIL("resolve succeeded with a file that does not exist");
    } catch (const InvalidArgument& error) {
        CHECK_THAT(error.what(), Catch::Contains(missing.string()) && Catch::Contains("cannot be opened"));
    }
    CHECK_THROWS_AS(Credentials::from_file(""), InvalidArgument);
}

TEST_CASE("open refuses contradicting options before it connects") {
    // Port 1 on loopback: nothing listens, so a connect would fail with a ConnectionError.
    // InvalidArgument proves the options were looked at first.
    using acemq::amqp::Options;
    using acemq::amqp::Tls;
    auto refusal = [](const std::string& url, Options options) -> std::string {
        try {
            (void)acemq::amqp::open(url, std::move(options));
            FAIL("open(\"" << url << "\") succeeded");
        } catch (const InvalidArgument& error) {
            return error.what();
        }
        return {};
    };

    CHECK_THAT(refusal("amqp://127.0.0.1:1/", {.tls = Tls{}}), Catch::Contains("amqp://127.0.0.1:1/") &&
                                                                   Catch::Contains("not encrypted") &&
                                                                   Catch::Contains("amqps://"));
    CHECK_THAT(refusal("amqp://127.0.0.1:1/", {.tls = Tls{}.ca_file("/nowhere/ca.pem")}),
               Catch::Contains("not encrypted"));
    CHECK_THAT(refusal("amqp://127.0.0.1:1/", {.tls = Tls::without_verification_insecure()}),
               Catch::Contains("not encrypted"));

    const std::string both =
        refusal("amqp://guest:" + std::string(secret) + "@127.0.0.1:1/", {.credentials = Credentials::plain("u", "p")});
    CHECK_THAT(both, Catch::Contains("both in the URL and in Options") && !Catch::Contains(secret));

    CHECK_THAT(refusal("amqp://127.0.0.1:1/", {.session = {.max_outstanding_publishes = 0}}),
               Catch::Contains("max_outstanding_publishes"));
    // AMQP negotiates heartbeats in whole seconds: 1500 ms would quietly become 1 s.
    CHECK_THAT(refusal("amqp://127.0.0.1:1/", {.session = {.heartbeat = std::chrono::milliseconds(1500)}}),
               Catch::Contains("1500 ms") && Catch::Contains("whole seconds"));

    CHECK_THAT(refusal("amqq://user:" + std::string(secret) + "@127.0.0.1:1/", {}),
               Catch::Contains("amqp:// or amqps://") && !Catch::Contains(secret));

    // Credentials that cannot be resolved are the caller's to fix, before any socket.
    const std::string variable = "ACEMQ_OFFLINE_UNSET_" + acemq::new_uuid().substr(0, 8);
    CHECK_THAT(refusal("amqp://127.0.0.1:1/", {.credentials = Credentials::from_environment(variable, variable)}),
               Catch::Contains(variable));
}

TEST_CASE("a broker that cannot be reached is a ConnectionError naming the address and never the password") {
    try {
        (void)acemq::amqp::open("amqp://orders-service:" + std::string(secret) + "@127.0.0.1:1/shop",
                                {.session = {.connect_timeout = std::chrono::seconds(5)}});
        FAIL("open succeeded against a port where nothing listens");
    } catch (const acemq::ConnectionError& error) {
        CHECK_THAT(error.what(), Catch::Contains("127.0.0.1:1") && !Catch::Contains(secret));
    }
    // Through the URL registry too: connect("amqp://...") reaches the same transport.
    try {
        (void)acemq::connect("amqp://orders-service:" + std::string(secret) + "@127.0.0.1:1/");
        FAIL("connect succeeded against a port where nothing listens");
    } catch (const acemq::ConnectionError& error) {
        CHECK_THAT(error.what(), Catch::Contains("127.0.0.1:1") && !Catch::Contains(secret));
    }
}

TEST_CASE("TLS settings that cannot be used are refused before the handshake") {
    using acemq::amqp::Tls;
    try {
        (void)acemq::amqp::open("amqps://127.0.0.1:1/", {.tls = Tls{}.ca_file("/nowhere/acemq-ca.pem"),
                                                         .session = {.connect_timeout = std::chrono::seconds(5)}});
        FAIL("open succeeded with a CA file that does not exist");
    } catch (const acemq::ConnectionError& error) {
        CHECK_THAT(error.what(), Catch::Contains("/nowhere/acemq-ca.pem"));
    }
    const Tls insecure = Tls::without_verification_insecure();
    CHECK_FALSE(insecure.verifies());
    CHECK(Tls{}.verifies());
    const Tls named = Tls{}.ca_file("ca.pem").client_certificate("me.pem", "me.key").server_name("localhost");
    CHECK(named.ca() == std::optional<std::filesystem::path>("ca.pem"));
    CHECK(named.certificate() == std::optional<std::filesystem::path>("me.pem"));
    CHECK(named.key() == std::optional<std::filesystem::path>("me.key"));
    CHECK(named.expected_server_name() == "localhost");
}

TEST_CASE("amqp::state is for a transport amqp::open made, and says so for another") {
    auto other = acemq::open_transport("inproc://amqp-state-" + acemq::new_uuid().substr(0, 8));
    CHECK_THROWS_WITH(acemq::amqp::state(*other), Catch::Contains("amqp::open") && Catch::Contains("\"inproc\""));
}

TEST_CASE("connection events have stable names") {
    using Kind = acemq::ConnectionEvent::Kind;
    CHECK(acemq::to_string(Kind::lost) == "lost");
    CHECK(acemq::to_string(Kind::retrying) == "retrying");
    CHECK(acemq::to_string(Kind::recovered) == "recovered");
    CHECK(acemq::to_string(Kind::blocked) == "blocked");
    CHECK(acemq::to_string(Kind::unblocked) == "unblocked");
    CHECK(acemq::to_string(Kind::gave_up) == "gave-up");
}
