#include <cstdlib>
#include <fstream>

#include <acemq/amqp.hpp>
#include <acemq/error.hpp>

namespace acemq::amqp {

Credentials::Credentials(Source source, std::string first, std::string second)
    : source_(source), first_(std::move(first)), second_(std::move(second)) {}

Credentials Credentials::plain(std::string user, std::string password) {
    if (user.empty()) throw InvalidArgument("acemq: AMQP credentials need a user name; it is empty");
    return Credentials(Source::plain, std::move(user), std::move(password));
}

Credentials Credentials::from_environment(std::string user_variable, std::string password_variable) {
    if (user_variable.empty() || password_variable.empty())
        throw InvalidArgument("acemq: name both environment variables that hold the AMQP user and password");
    return Credentials(Source::environment, std::move(user_variable), std::move(password_variable));
}

Credentials Credentials::from_file(std::filesystem::path file) {
    if (file.empty()) throw InvalidArgument("acemq: name the file that holds the AMQP user and password");
    return Credentials(Source::file, file.string(), {});
}

Credentials::Resolved Credentials::resolve() const {
    switch (source_) {
    case Source::plain: return {first_, second_};
    case Source::environment: {
        const char* user = std::getenv(first_.c_str());
        const char* password = std::getenv(second_.c_str());
        if (user == nullptr || *user == '\0')
            throw InvalidArgument("acemq: the AMQP user name should be in environment variable " + first_ +
                                  ", which is not set or empty");
        if (password == nullptr)
            throw InvalidArgument("acemq: the AMQP password should be in environment variable " + second_ +
                                  ", which is not set");
        return {user, password};
    }
    case Source::file: {
        std::ifstream in(first_);
        if (!in)
            throw InvalidArgument("acemq: cannot read the AMQP credentials file " + first_ + ": it cannot be opened");
        Resolved resolved;
        std::getline(in, resolved.user);
        std::getline(in, resolved.password);
        for (std::string* line : {&resolved.user, &resolved.password})
            if (!line->empty() && line->back() == '\r') line->pop_back();
        if (resolved.user.empty())
            throw InvalidArgument("acemq: the AMQP credentials file " + first_ +
                                  " should hold the user name on its first line and the password on its second; "
                                  "the first line is empty");
        return resolved;
    }
    }
    throw InvalidArgument("acemq: unknown credentials source");
}

std::ostream& operator<<(std::ostream& out, const Credentials& credentials) {
    switch (credentials.source_) {
    case Credentials::Source::plain: return out << "Credentials{given, user and password hidden}";
    case Credentials::Source::environment:
        return out << "Credentials{from environment " << credentials.first_ << " and " << credentials.second_ << "}";
    case Credentials::Source::file: return out << "Credentials{from file " << credentials.first_ << "}";
    }
    return out;
}

Tls& Tls::ca_file(std::filesystem::path file) {
    ca_ = std::move(file);
    return *this;
}

Tls& Tls::client_certificate(std::filesystem::path certificate, std::filesystem::path key) {
    certificate_ = std::move(certificate);
    key_ = std::move(key);
    return *this;
}

Tls& Tls::server_name(std::string name) {
    server_name_ = std::move(name);
    return *this;
}

Tls Tls::without_verification_insecure() {
    Tls tls;
    tls.verify_ = false;
    return tls;
}

}  // namespace acemq::amqp
