// Internal: RabbitMQ's management HTTP API (the rabbitmq_management plugin) as one user of one
// vhost reaches it: requests with that user's basic auth and the caller's timeout, answers
// read as JSON (acemq::Value), and every failure turned into the library's errors. What the
// requests mean is management.cpp's; this file knows HTTP and RabbitMQ's error bodies only.
// Used from one thread at a time, as the Management that owns it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include <acemq/management.hpp>
#include <acemq/value.hpp>

#include "amqp/address.hpp"

namespace httplib {
class Client;
}

namespace acemq::amqp {

// `text` as one segment of a URL path: everything but the unreserved characters
// (A-Z a-z 0-9 - . _ ~) percent-encoded, so "/" is "%2F" and a queue name cannot reach
// another path.
std::string path_segment(std::string_view text);

class ManagementApi {
public:
    // The API at options.http_url, or http://HOST:15672 of `address`. Throws InvalidArgument
    // for an http_url that is not http[s]://host[:port][/prefix] or that holds credentials
    // (they come from the amqp URL). Connects to nothing yet.
    ManagementApi(const Address& address, const ManagementOptions& options);
    ~ManagementApi();
    ManagementApi(const ManagementApi&) = delete;
    ManagementApi& operator=(const ManagementApi&) = delete;

    struct Answer {
        int status = 0;
        std::string reason;  // the HTTP reason phrase
        std::string body;
    };
    enum class Method { get, post, del };

    // Sends a request to `path` (from /api/..., already encoded) and returns whatever status
    // came back. Throws ConnectionError naming the API's address when nothing answered within
    // the timeout.
    Answer send(Method method, const std::string& path, const std::string& json_body = {});
    // A 2xx answer's body as JSON; anything else thrown as what it means:
    //  401, 403: ManagementError access_refused naming the user (never the password);
    //  404: ManagementError not_found, "RabbitMQ has no " + `subject`;
    //  others: ManagementError failed quoting the status and RabbitMQ's reason, cut short.
    Value get(const std::string& path, std::string_view subject);
    Value post(const std::string& path, const std::string& json_body, std::string_view subject);
    void remove(const std::string& path, std::string_view subject);
    // Throws for `answer` as get() does for a status that is not 2xx.
    [[noreturn]] void refuse(Method method, const std::string& path, const Answer& answer, std::string_view subject);

    const std::string& vhost() const noexcept { return vhost_; }
    // The vhost as a path segment: "%2F" for "/".
    const std::string& vhost_segment() const noexcept { return vhost_segment_; }
    // The API's base URL, safe to print: "http://127.0.0.1:15672".
    const std::string& base_url() const noexcept { return base_url_; }

private:
    Value parsed(Method method, const std::string& path, const Answer& answer);

    std::string base_url_;
    std::string path_prefix_;  // of an API behind a proxy: "/rabbitmq", or ""
    std::string user_;
    std::string vhost_;
    std::string vhost_segment_;
    std::chrono::milliseconds timeout_;
    std::unique_ptr<httplib::Client> client_;
};

}  // namespace acemq::amqp
