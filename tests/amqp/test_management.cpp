// Suite `amqp-management`: amqp::manage against the test RabbitMQ's management HTTP API (the
// rabbitmq_management plugin scripts/servers.sh enables), what the transport declares and
// publishes read back through it. Needs, from scripts/servers.sh:
//
//   ACEMQ_TEST_AMQP_URL       amqp://guest:guest@127.0.0.1:PORT/
//   ACEMQ_TEST_AMQP_HTTP_URL  http://127.0.0.1:HTTPPORT
//
// A missing variable fails the test, never skips it. Names carry this process's id, so runs
// side by side on one broker do not meet. RabbitMQ's counts are statistics it samples (every
// second on the test broker, see scripts/servers.sh; a quorum queue's every 5 s): a test that
// reads one waits for it, bounded.
#include <catch2/catch.hpp>

#include <acemq/acemq.hpp>

#include <acemq/amqp.hpp>
#include <acemq/management.hpp>
#include "amqp/address.hpp"

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>
#include "../support/rabbitmq.hpp"
#include "../support/thrown.hpp"
#include "../support/wait.hpp"

namespace {

using namespace std::chrono_literals;
using acemq::ManagementError;
using Reason = acemq::ManagementError::Reason;
using testing_support::eventually;

using testing_support::amqp_http_url;
using testing_support::amqp_url;

std::unique_ptr<acemq::Management> management() {
    return acemq::amqp::manage(amqp_url(), {.timeout = 5s, .http_url = amqp_http_url()});
}

std::string unique(std::string_view name) { return "mgmt-" + std::to_string(::getpid()) + "." + std::string(name); }

acemq::Bytes bytes_of(std::string_view text) {
    const auto* data = reinterpret_cast<const std::byte*>(text.data());
    return acemq::Bytes(data, data + text.size());
}

std::string text_of(std::span<const std::byte> bytes) {
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Publishes "0".."count-1" to `queue` through the default exchange, each with header n, a
// message id and a content type, confirmed.
void publish_numbered(acemq::Transport& transport, const std::string& queue, int count) {
    for (int n = 0; n < count; ++n) {
        const acemq::PublishResult result = transport.publish(acemq::OutboundMessage{
            .routing_key = queue,
            .body = bytes_of(std::to_string(n)),
            .content_type = "text/plain",
            .message_id = "m-" + std::to_string(n),
            .headers = {{"n", acemq::FieldValue(std::int64_t{n})}},
        });
        REQUIRE(result.confirmed);
    }
}

const acemq::QueueSummary* find_queue(const std::vector<acemq::QueueSummary>& queues, const std::string& name) {
    const auto at = std::find_if(queues.begin(), queues.end(), [&](const auto& queue) { return queue.name == name; });
    return at == queues.end() ? nullptr : &*at;
}

// Until RabbitMQ's statistics show `ready` messages in `queue`.
bool shows_ready(acemq::Management& broker, const std::string& queue, std::uint64_t ready) {
    return eventually(
        [&] {
            const auto queues = broker.queues();
            const acemq::QueueSummary* found = find_queue(queues, queue);
            return found != nullptr && found->ready == ready;
        },
        10s, 100ms);
}

}  // namespace

TEST_CASE("the listings show a declared topology with its dead-letter half, and nothing nobody declared",
          "[amqp-management]") {
    const std::string exchange = unique("orders");
    const std::string queue = unique("orders.new");
    auto transport = acemq::amqp::open(amqp_url());
    transport->declare(acemq::Topology{}
                           .exchange(exchange, acemq::ExchangeKind::topic)
                           .queue(queue, {.dead_letter = true})
                           .bind(queue, exchange, "order.*"));
    auto broker = management();

    const auto exchanges = broker->exchanges();
    CHECK(std::none_of(exchanges.begin(), exchanges.end(),
                       [](const auto& e) { return e.name.empty() || e.name.starts_with("amq."); }));
    CHECK(std::is_sorted(exchanges.begin(), exchanges.end(),
                         [](const auto& a, const auto& b) { return a.name < b.name; }));
    const auto orders =
        std::find_if(exchanges.begin(), exchanges.end(), [&](const auto& e) { return e.name == exchange; });
    REQUIRE(orders != exchanges.end());
    CHECK(orders->kind == acemq::ExchangeKind::topic);
    CHECK(orders->durable);
    CHECK(std::any_of(exchanges.begin(), exchanges.end(), [](const auto& e) { return e.name == "acemq.dlx"; }));

    const auto queues = broker->queues();
    const acemq::QueueSummary* main_queue = find_queue(queues, queue);
    REQUIRE(main_queue != nullptr);
    CHECK(main_queue->type == acemq::QueueType::quorum);
    CHECK(main_queue->durable);
    CHECK_FALSE(main_queue->exclusive);
    CHECK(main_queue->arguments.at("x-dead-letter-exchange") == acemq::FieldValue("acemq.dlx"));
    CHECK(main_queue->arguments.at("x-dead-letter-routing-key") == acemq::FieldValue(queue + ".dlq"));
    CHECK(main_queue->arguments.at("x-queue-type") == acemq::FieldValue("quorum"));
    CHECK(find_queue(queues, queue + ".dlq") != nullptr);
    CHECK(find_queue(queues, queue + ".parked") != nullptr);

    const auto bindings = broker->bindings();
    CHECK(std::none_of(bindings.begin(), bindings.end(), [](const auto& b) { return b.exchange.empty(); }));
    CHECK(std::find(bindings.begin(), bindings.end(), acemq::BindingDeclaration{queue, exchange, "order.*", {}}) !=
          bindings.end());
    CHECK(std::find(bindings.begin(), bindings.end(),
                    acemq::BindingDeclaration{queue + ".dlq", "acemq.dlx", queue + ".dlq", {}}) != bindings.end());

    for (const std::string& name : {queue, queue + ".dlq", queue + ".parked"}) broker->delete_queue(name);
    broker->delete_exchange(exchange);
    const auto after = broker->queues();
    CHECK(find_queue(after, queue) == nullptr);
}

TEST_CASE("a browse leaves the queue as it was, in order, on classic and quorum queues", "[amqp-management]") {
    auto broker = management();
    auto transport = acemq::amqp::open(amqp_url());
    for (const acemq::QueueType type : {acemq::QueueType::classic, acemq::QueueType::quorum}) {
        const std::string queue = unique("browse." + std::string(acemq::to_string(type)));
        SECTION(std::string(acemq::to_string(type))) {
            transport->declare(acemq::Topology{}.queue(queue, {.type = type}));
            publish_numbered(*transport, queue, 5);

            const auto browsed = broker->browse(queue, {.from = 1, .count = 3});
            REQUIRE(browsed.size() == 3);
            for (std::size_t i = 0; i < browsed.size(); ++i) {
                const acemq::BrowsedMessage& shown = browsed[i];
                CHECK(shown.position == i + 1);
                CHECK(text_of(shown.message.body()) == std::to_string(i + 1));
                CHECK(shown.message.headers().at("n").as_integer() == static_cast<std::int64_t>(i + 1));
                CHECK(shown.message.content_type() == "text/plain");
                CHECK(shown.message.message_id() == "m-" + std::to_string(i + 1));
                CHECK(shown.message.routing_key() == queue);
                CHECK(shown.message.exchange().empty());
                CHECK(shown.persistent);
                CHECK_FALSE(shown.message.redelivered());
            }
            // A quorum queue has the messages back a moment after the call: RabbitMQ returns
            // them when the browsing channel has closed.
            CHECK(eventually([&] { return transport->queue_depth(queue) == 5; }, 10s, 20ms));
            // What a browse changes on RabbitMQ: the next one sees the messages redelivered
            // (position 0 too, taken to reach position 1), and a quorum queue counts the
            // delivery; position 4 was not taken.
            const auto again = broker->browse(queue, {.from = 0, .count = 5});
            REQUIRE(again.size() == 5);
            CHECK(again[0].message.redelivered());
            CHECK(again[3].message.redelivered());
            CHECK_FALSE(again[4].message.redelivered());
            if (type == acemq::QueueType::quorum) {
                CHECK(again[0].message.headers().at("x-delivery-count").as_integer() == 1);
                CHECK(again[4].message.headers().at("x-delivery-count").as_integer() == 0);
            }
            CHECK(broker->browse(queue, {.from = 5, .count = 3}).empty());

            std::vector<std::string> pulled;
            while (auto delivery = transport->pull(queue)) {
                pulled.push_back(text_of(delivery->message().body()));
                delivery->ack();
            }
            CHECK(pulled == std::vector<std::string>{"0", "1", "2", "3", "4"});
            broker->delete_queue(queue);
        }
    }
}

TEST_CASE("a quorum queue with a delivery limit is not browsed, and keeps its messages; nor is a stream",
          "[amqp-management]") {
    const std::string queue = unique("limited");
    auto transport = acemq::amqp::open(amqp_url());
    transport->declare(acemq::Topology{}.queue(queue, {.arguments = {{"x-delivery-limit", std::int64_t{1}}}}));
    publish_numbered(*transport, queue, 1);
    auto broker = management();
    for (int round = 0; round < 3; ++round) {
        try {
            broker->browse(queue);
            FAIL("browsed a quorum queue with a delivery limit");
        } catch (const ManagementError& error) {
            CHECK(error.reason() == Reason::unsupported);
            CHECK_THAT(error.what(), Catch::Contains("delivery limit of 1") && Catch::Contains(queue));
        }
    }
    CHECK(transport->queue_depth(queue) == 1);
    broker->delete_queue(queue);

    const std::string stream = unique("stream");
    transport->declare(acemq::Topology{}.stream(stream));
    const std::string refused = testing_support::what_of<ManagementError>([&] { broker->browse(stream); });
    CHECK_THAT(refused, Catch::Contains("stream") && Catch::Contains("offset"));
    broker->delete_queue(stream);
}

TEST_CASE("purge drops the ready messages and says how many", "[amqp-management]") {
    // Classic: its statistics come every 500 ms on the test broker, a quorum queue's every 5 s.
    const std::string queue = unique("purged");
    auto transport = acemq::amqp::open(amqp_url());
    transport->declare(acemq::Topology{}.queue(queue, {.type = acemq::QueueType::classic}));
    publish_numbered(*transport, queue, 3);
    auto broker = management();
    REQUIRE(shows_ready(*broker, queue, 3));
    CHECK(broker->purge(queue) == 3);
    CHECK(transport->queue_depth(queue) == 0);
    broker->delete_queue(queue);
    const std::string missing = testing_support::what_of<ManagementError>([&] { broker->purge(queue); });
    CHECK_THAT(missing, Catch::Contains("RabbitMQ has no queue \"" + queue + "\""));
}

TEST_CASE("delete refuses a queue with a consumer unless told, and names what is not there", "[amqp-management]") {
    auto transport = acemq::amqp::open(amqp_url());
    auto broker = management();
    // A classic queue is refused by RabbitMQ's if-unused as soon as its consumer is there; a
    // quorum queue (no if-unused) by its consumer count, once RabbitMQ's statistics show it.
    for (const acemq::QueueType type : {acemq::QueueType::classic, acemq::QueueType::quorum}) {
        const std::string queue = unique("consumed." + std::string(acemq::to_string(type)));
        SECTION(std::string(acemq::to_string(type))) {
            transport->declare(acemq::Topology{}.queue(queue, {.type = type}));
            auto subscription = transport->consume(queue, {}, [](acemq::Delivery delivery) { delivery.ack(); });
            if (type == acemq::QueueType::quorum)
                REQUIRE(eventually(
                    [&] {
                        const auto queues = broker->queues();
                        const acemq::QueueSummary* found = find_queue(queues, queue);
                        return found != nullptr && found->consumers == 1;
                    },
                    10s, 100ms));
            try {
                broker->delete_queue(queue);
                FAIL("deleted a queue with a consumer");
            } catch (const ManagementError& error) {
                CHECK(error.reason() == Reason::in_use);
                CHECK_THAT(error.what(), Catch::Contains(queue) && Catch::Contains("even_if_consumed"));
            }
            CHECK(transport->queue_exists(queue));
            broker->delete_queue(queue, {.even_if_consumed = true});
            CHECK_FALSE(transport->queue_exists(queue));
            subscription->close();
        }
    }
}

TEST_CASE("what is not there is named, and what RabbitMQ cannot do is said", "[amqp-management]") {
    auto broker = management();
    const std::string queue = unique("never-declared");
    const auto reason_of = [](auto&& action) {
        try {
            action();
        } catch (const ManagementError& error) {
            return error.reason();
        }
        FAIL("expected a ManagementError");
        return Reason::failed;
    };
    CHECK(reason_of([&] { broker->delete_queue(queue); }) == Reason::not_found);
    CHECK(reason_of([&] { broker->browse(queue); }) == Reason::not_found);
    CHECK(reason_of([&] { broker->delete_exchange(unique("no-such-exchange")); }) == Reason::not_found);
    CHECK(reason_of([&] { broker->delete_exchange("amq.direct"); }) == Reason::unsupported);
    CHECK(reason_of([&] { broker->backup("/tmp/rabbitmq.backup"); }) == Reason::unsupported);
    CHECK_THROWS_AS(broker->delete_exchange(""), acemq::InvalidArgument);
    CHECK_THROWS_AS(broker->delete_queue(""), acemq::InvalidArgument);
}

TEST_CASE("sessions list a transport's connection by its name, with its consumers and unacked", "[amqp-management]") {
    const std::string name = unique("session");
    const std::string queue = unique("session.queue");
    const auto opened = std::chrono::system_clock::now();
    auto transport = acemq::amqp::open(amqp_url(), {.session = {.name = name}});
    transport->declare(acemq::Topology{}.queue(queue));
    publish_numbered(*transport, queue, 1);
    std::mutex held_lock;
    std::optional<acemq::Delivery> held;
    auto subscription = transport->consume(queue, {}, [&](acemq::Delivery delivery) {
        std::lock_guard guard(held_lock);
        held.emplace(std::move(delivery));
    });
    auto broker = management();
    acemq::SessionSummary seen;
    CHECK(eventually(
        [&] {
            for (const acemq::SessionSummary& session : broker->sessions())
                if (session.name == name) seen = session;
            return seen.consumers == 1 && seen.unacked == 1;
        },
        10s, 100ms));
    CHECK(seen.name == name);
    CHECK(seen.peer.starts_with("127.0.0.1:"));
    CHECK(seen.since >= std::chrono::time_point_cast<std::chrono::seconds>(opened) - 1s);
    CHECK(seen.since <= std::chrono::system_clock::now());
    {
        std::lock_guard guard(held_lock);
        REQUIRE(held.has_value());
        held->ack();
    }
    subscription->close();
    broker->delete_queue(queue, {.even_if_consumed = true});
}

TEST_CASE("info names RabbitMQ, its node, its uptime and the vhost", "[amqp-management]") {
    const acemq::BrokerInfo info = management()->info();
    CHECK(info.product == "RabbitMQ");
    CHECK(info.version.starts_with("3."));
    CHECK_THAT(info.name, Catch::Contains("@"));
    CHECK(info.uptime > 0s);
    CHECK(info.free_disk_bytes.has_value());
    CHECK(info.data_file.empty());
    const auto detail = [&](std::string_view key) {
        const auto at = std::find_if(info.details.begin(), info.details.end(),
                                     [&](const auto& entry) { return entry.first == key; });
        return at == info.details.end() ? std::string("(absent)") : at->second;
    };
    CHECK(detail("vhost") == "/");
    CHECK(detail("erlang_version") != "(absent)");
    CHECK(detail("management_version") == info.version);
}

TEST_CASE("a wrong password is refused by name, the password never shown", "[amqp-management]") {
    const acemq::amqp::Address address = acemq::amqp::parse_address(amqp_url());
    const std::string password = "not-the-password-81d3";
    const std::string url = "amqp://guest:" + password + "@" + address.host + ":" + std::to_string(address.port) + "/";
    try {
        acemq::amqp::manage(url, {.timeout = 5s, .http_url = amqp_http_url()});
        FAIL("a wrong password was let in");
    } catch (const ManagementError& error) {
        CHECK(error.reason() == Reason::access_refused);
        CHECK_THAT(error.what(), Catch::Contains("\"guest\"") && Catch::Contains("credentials"));
        CHECK_THAT(error.what(), !Catch::Contains(password));
    }
}

TEST_CASE("a management API that does not answer is a ConnectionError naming its address and the plugin",
          "[amqp-management]") {
    // Port 1 on loopback: nothing listens there, as when the plugin is off.
    const std::string message = testing_support::what_of<acemq::ConnectionError>(
        [] { acemq::amqp::manage(amqp_url(), {.timeout = 2s, .http_url = "http://127.0.0.1:1"}); });
    CHECK_THAT(message, Catch::Contains("http://127.0.0.1:1") && Catch::Contains("rabbitmq_management"));
    CHECK_THAT(message, !Catch::Contains("guest:guest"));
    CHECK_THROWS_AS(acemq::amqp::manage(amqp_url(), {.http_url = "ftp://127.0.0.1:15672"}), acemq::InvalidArgument);
    CHECK_THROWS_AS(acemq::amqp::manage(amqp_url(), {.http_url = "http://guest:guest@127.0.0.1:15672"}),
                    acemq::InvalidArgument);
}

TEST_CASE("open_management reaches RabbitMQ for amqp:// URLs", "[amqp-management]") {
    auto broker = acemq::open_management(amqp_url(), {.http_url = amqp_http_url()});
    CHECK(broker->info().product == "RabbitMQ");
}
