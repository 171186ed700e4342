// The test RabbitMQ that scripts/servers.sh starts (start_rabbitmq exports its URLs; scripts/test
// runs it). The AMQP tests are never skipped: a URL that is not set fails the test, naming it
// and what to run.
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace testing_support {

inline std::string rabbitmq_variable(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0')
        throw std::runtime_error(std::string(name) +
                                 " is not set: this test needs the RabbitMQ that scripts/servers.sh starts; run "
                                 "scripts/test, or by hand `source scripts/servers.sh; start_rabbitmq` and meson "
                                 "test in the same shell");
    return value;
}

inline std::string amqp_url() { return rabbitmq_variable("ACEMQ_TEST_AMQP_URL"); }
inline std::string amqps_url() { return rabbitmq_variable("ACEMQ_TEST_AMQPS_URL"); }
// rabbitmq_management's HTTP API of the same broker.
inline std::string amqp_http_url() { return rabbitmq_variable("ACEMQ_TEST_AMQP_HTTP_URL"); }

}  // namespace testing_support
