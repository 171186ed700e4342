// `acemq` against the test RabbitMQ (its management HTTP API): the same round and the same
// answers as on the embedded broker, and the errors of a wrong password and of no broker,
// with no secret printed. Needs ACEMQ_TEST_AMQP_URL and ACEMQ_TEST_AMQP_HTTP_URL
// (scripts/servers.sh), and fails without them.
#include "../support/rabbitmq.hpp"
#include "scenario.hpp"

#include <cstdlib>

using operator_test::run_on;
using operator_test::told;

namespace {

operator_test::Target rabbitmq() {
    return {testing_support::amqp_url(), {"--management-url", testing_support::amqp_http_url()}};
}

// The test URL with another password.
std::string with_password(const std::string& url, const std::string& password) {
    const std::size_t scheme = url.find("://") + 3, colon = url.find(':', scheme), at = url.find('@', scheme);
    return url.substr(0, colon + 1) + password + url.substr(at);
}

}  // namespace

TEST_CASE("acemq operates RabbitMQ the same as the embedded broker", "[operator]") {
    operator_test::operate(rabbitmq());
}

TEST_CASE("acemq with a wrong password on RabbitMQ: exit 4, the password never printed", "[operator]") {
    operator_test::Target target = rabbitmq();
    target.url = with_password(target.url, "Wr0ngS3cret");
    for (const std::vector<std::string>& command :
         std::vector<std::vector<std::string>>{{"queues"}, {"peek", "any"}, {"publish", "any"}}) {
        const operator_test::Run refused = run_on(target, command, {.input = "{}"});
        INFO(told(refused));
        CHECK(refused.status == 4);
        CHECK(refused.out.find("Wr0ngS3cret") == std::string::npos);
        CHECK(refused.err.find("Wr0ngS3cret") == std::string::npos);
    }
}

TEST_CASE("acemq where no RabbitMQ listens: exit 3", "[operator]") {
    const operator_test::Run nobody =
        run_on({"amqp://guest:Sup3rS3cret@127.0.0.1:1/", {"--management-url", "http://127.0.0.1:1"}},
               {"--timeout", "2s", "queues"});
    INFO(told(nobody));
    CHECK(nobody.status == 3);
    CHECK(nobody.err.find("Sup3rS3cret") == std::string::npos);
}
