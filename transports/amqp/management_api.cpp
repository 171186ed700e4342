#include "amqp/management_api.hpp"

#include <httplib.h>

#include <span>

#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>

#include "codec/quoted_text.hpp"

namespace acemq::amqp {

namespace {

// RabbitMQ's reason for a refusal is shown up to this many bytes: enough for its sentences,
// bounded against a proxy's HTML page.
constexpr std::size_t shown_reason_limit = 300;

std::string_view method_name(ManagementApi::Method method) noexcept {
    switch (method) {
    case ManagementApi::Method::get: return "GET";
    case ManagementApi::Method::post: return "POST";
    case ManagementApi::Method::del: return "DELETE";
    }
    return "GET";
}

[[noreturn]] void refuse_http_url(std::string_view http_url, const std::string& why) {
    throw InvalidArgument("acemq: cannot use " + detail::in_quotes(http_url) +
                          " as RabbitMQ's management API address (ManagementOptions::http_url): " + why +
                          "; write http[s]://host[:port][/path], the credentials staying in the amqp URL");
}

struct HttpAddress {
    std::string scheme_host_port;
    std::string prefix;
};

HttpAddress http_address(const Address& address, std::string_view http_url) {
    if (http_url.empty()) {
        const std::string host = address.host.find(':') == std::string::npos ? address.host : "[" + address.host + "]";
        return {"http://" + host + ":15672", ""};
    }
    const std::size_t scheme_end = http_url.find("://");
    const std::string_view scheme = http_url.substr(0, scheme_end);
    if (scheme_end == std::string_view::npos || (scheme != "http" && scheme != "https"))
        refuse_http_url(http_url, "the scheme must be http:// or https://");
    const std::string_view rest = http_url.substr(scheme_end + 3);
    if (rest.find_first_of("?#") != std::string_view::npos) refuse_http_url(http_url, "it has a query or fragment");
    const std::string_view authority = rest.substr(0, rest.find('/'));
    if (authority.find('@') != std::string_view::npos) refuse_http_url(http_url, "it holds credentials");
    if (authority.empty() || authority.starts_with(':')) refuse_http_url(http_url, "the host is missing");
    std::string_view prefix = rest.substr(authority.size());
    while (prefix.ends_with('/')) prefix.remove_suffix(1);
    return {std::string(scheme) + "://" + std::string(authority), std::string(prefix)};
}

std::string no_answer_reason(httplib::Error error, std::chrono::milliseconds timeout) {
    switch (error) {
    case httplib::Error::Connection: return "connection refused or the host unreachable";
    case httplib::Error::ConnectionTimeout: return "no connection within " + std::to_string(timeout.count()) + " ms";
    case httplib::Error::Read: return "no answer within " + std::to_string(timeout.count()) + " ms";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLLoadingCerts:
    case httplib::Error::SSLServerVerification: return "TLS failed: " + httplib::to_string(error);
    default: return httplib::to_string(error);
    }
}

}  // namespace

std::string path_segment(std::string_view text) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if ((byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') || (byte >= '0' && byte <= '9') || c == '-' ||
            c == '.' || c == '_' || c == '~') {
            out += c;
        } else {
            out += '%';
            out += hex[byte >> 4];
            out += hex[byte & 15];
        }
    }
    return out;
}

ManagementApi::ManagementApi(const Address& address, const ManagementOptions& options)
    : user_(address.login_user()), vhost_(address.vhost), vhost_segment_(path_segment(address.vhost)),
      timeout_(options.timeout) {
    HttpAddress http = http_address(address, options.http_url);
    base_url_ = http.scheme_host_port + http.prefix;
    path_prefix_ = std::move(http.prefix);
    client_ = std::make_unique<httplib::Client>(http.scheme_host_port);
    client_->set_basic_auth(user_, address.login_password());
    client_->set_connection_timeout(options.timeout);
    client_->set_read_timeout(options.timeout);
    client_->set_write_timeout(options.timeout);
}

ManagementApi::~ManagementApi() = default;

ManagementApi::Answer ManagementApi::send(Method method, const std::string& path, const std::string& json_body) {
    const std::string target = path_prefix_ + path;
    // No Accept header: RabbitMQ answers a DELETE that has no body to give 406 to one.
    httplib::Result result = method == Method::get    ? client_->Get(target)
                             : method == Method::post ? client_->Post(target, json_body, "application/json")
                                                      : client_->Delete(target);
    if (!result)
        throw ConnectionError("acemq: RabbitMQ's management API at " + base_url_ + " did not answer " +
                              std::string(method_name(method)) + " " + path + " (" +
                              no_answer_reason(result.error(), timeout_) +
                              "): enable the rabbitmq_management plugin (rabbitmq-plugins enable "
                              "rabbitmq_management), and give its address as ManagementOptions::http_url when it "
                              "is not http://HOST:15672 of the amqp URL");
    return Answer{result->status, result->reason, std::move(result->body)};
}

Value ManagementApi::parsed(Method method, const std::string& path, const Answer& answer) {
    if (answer.body.empty()) return Value();
    try {
        return JsonCodec().decode(std::as_bytes(std::span(answer.body)), "application/json");
    } catch (const DecodeError& error) {
        throw ManagementError(ManagementError::Reason::failed,
                              "acemq: RabbitMQ's management API at " + base_url_ + " answered " +
                                  std::string(method_name(method)) + " " + path + " with what is not JSON (" +
                                  std::string(without_prefix(error.what())) + "): is " + base_url_ +
                                  " RabbitMQ's management API?");
    }
}

Value ManagementApi::get(const std::string& path, std::string_view subject) {
    Answer answer = send(Method::get, path);
    if (answer.status / 100 != 2) refuse(Method::get, path, answer, subject);
    return parsed(Method::get, path, answer);
}

Value ManagementApi::post(const std::string& path, const std::string& json_body, std::string_view subject) {
    Answer answer = send(Method::post, path, json_body);
    if (answer.status / 100 != 2) refuse(Method::post, path, answer, subject);
    return parsed(Method::post, path, answer);
}

void ManagementApi::remove(const std::string& path, std::string_view subject) {
    Answer answer = send(Method::del, path);
    if (answer.status / 100 != 2) refuse(Method::del, path, answer, subject);
}

void ManagementApi::refuse(Method method, const std::string& path, const Answer& answer, std::string_view subject) {
    // RabbitMQ says why as {"error": ..., "reason": ...}; anything else (a proxy's page) is
    // quoted as it came.
    std::string reason = answer.body;
    try {
        const Value body = JsonCodec().decode(std::as_bytes(std::span(answer.body)), "application/json");
        if (const Value* said = body.kind() == Value::Kind::map ? body.find("reason") : nullptr;
            said != nullptr && said->kind() == Value::Kind::string)
            reason = said->as_string();
    } catch (const DecodeError&) {}
    const std::string answered = std::to_string(answer.status) + (answer.reason.empty() ? "" : " " + answer.reason) +
                                 " to " + std::string(method_name(method)) + " " + path + ", " +
                                 detail::in_quotes(reason, shown_reason_limit);
    if (answer.status == 401 || answer.status == 403)
        throw ManagementError(ManagementError::Reason::access_refused,
                              "acemq: RabbitMQ refused user " + detail::in_quotes(user_) + " at " + base_url_ + " (" +
                                  answered +
                                  "): check the URL's credentials, and that the user has the management tag and "
                                  "permissions on vhost " +
                                  detail::in_quotes(vhost_));
    if (answer.status == 404)
        throw ManagementError(ManagementError::Reason::not_found, "acemq: RabbitMQ has no " + std::string(subject) +
                                                                      " (" + answered + ", at " + base_url_ + ")");
    throw ManagementError(ManagementError::Reason::failed, "acemq: RabbitMQ's management API at " + base_url_ +
                                                               " answered " + answered + " (about " +
                                                               std::string(subject) + ")");
}

}  // namespace acemq::amqp
